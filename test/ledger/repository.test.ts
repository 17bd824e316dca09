/**
 * The typed ledger repository (issue 9 item 4, issue 8 item 4): paths come
 * only from checked names, and records that disagree with their file, or a
 * pinned store with lines that are not pins, are reported as malformed.
 */
import { describe, expect, it } from 'vitest';
import { MemoryLedgerStore } from '../../src/ledger/memory-store.js';
import {
  checkRecordName,
  LedgerRecordError,
  listWorkflows,
  readInventoryRecord,
  readLock,
  readPins,
  readWorkflow,
  recordNameProblem,
  RecordWrites,
  serializeRecord,
} from '../../src/ledger/records.js';
import { localLease, sampleWorkflow, T0 } from '../support/workflows.js';

async function snapshotOf(files: Record<string, string>) {
  return new MemoryLedgerStore({ files }).read();
}

function malformed(read: () => unknown): LedgerRecordError {
  try {
    read();
  } catch (error) {
    expect(error).toBeInstanceOf(LedgerRecordError);
    return error as LedgerRecordError;
  }
  throw new Error('expected a malformed-record error');
}

describe('record names', () => {
  it.each(['a/b', '..', 'a..b', '', 'ABC', '-rf', 'x y', '.git', 'a.', 'x'.repeat(65), 'ok\n', 'ä'])(
    'refuses %j before building a path',
    (name) => {
      expect(recordNameProblem(name)).toBeDefined();
      expect(() => checkRecordName('workflow', name)).toThrow(/invalid workflow name/);
      expect(() => new RecordWrites().workflow({ ...sampleWorkflow('ok'), id: name })).toThrow(/invalid workflow name/);
      expect(() => new RecordWrites().lock(name, null)).toThrow(/invalid lock name/);
    },
  );

  it.each(['edge-1a2b', 'a', 'x.y_z-9', 'deploy.lock', 'x'.repeat(64)])('accepts %j', (name) => {
    expect(recordNameProblem(name)).toBeUndefined();
  });
});

describe('records that disagree with their file', () => {
  it('a workflow whose id differs from its file name is malformed, in a read and in the listing', async () => {
    const snapshot = await snapshotOf({
      'workflows/edge-1.json': serializeRecord(sampleWorkflow('edge-2')),
      'workflows/edge-3.json': serializeRecord(sampleWorkflow('edge-3')),
    });
    const error = malformed(() => readWorkflow(snapshot, 'edge-1'));
    expect(error.file).toBe('workflows/edge-1.json');
    expect(error.reason).toMatch(/id "edge-2" differs from its file name/);
    const { workflows, errors } = listWorkflows(snapshot);
    expect(workflows.map((w) => w.id)).toEqual(['edge-3']);
    expect(errors.map((e) => e.file)).toEqual(['workflows/edge-1.json']);
  });

  it('a workflow file whose name is not an id is listed as malformed, not read', async () => {
    const snapshot = await snapshotOf({ 'workflows/Bad Name.json': serializeRecord(sampleWorkflow('edge-3')) });
    const { workflows, errors } = listWorkflows(snapshot);
    expect(workflows).toEqual([]);
    expect(errors[0]?.reason).toMatch(/not a workflow id/);
  });

  it('an inventory record pointing at another file is malformed', async () => {
    const record = { schemaVersion: 1, name: 'edge', registeredAt: T0.toISOString(), workspacePath: 'infra' };
    const elsewhere = {
      ...record,
      materialized: {
        file: '../../etc/passwd',
        sha256: 'a'.repeat(64),
        appliedAt: T0.toISOString(),
        source: 'ansible_inventory',
        outputCount: 1,
        hostCount: 1,
      },
    };
    expect(
      readInventoryRecord(await snapshotOf({ 'inventories/edge.json': serializeRecord(record) }), 'edge')?.name,
    ).toBe('edge');
    const crafted = await snapshotOf({ 'inventories/edge.json': serializeRecord(elsewhere) });
    expect(malformed(() => readInventoryRecord(crafted, 'edge')).reason).toMatch(/points at "..\/..\/etc\/passwd"/);
  });

  it('a lock whose key differs from its file name is malformed', async () => {
    const lock = { schemaVersion: 1, key: 'other', lease: localLease('me'), purpose: 'play' };
    const snapshot = await snapshotOf({ 'locks/nightly.json': serializeRecord(lock) });
    const error = malformed(() => readLock(snapshot, 'nightly'));
    expect(error.file).toBe('locks/nightly.json');
  });
});

describe('the pinned store', () => {
  it('garbage lines make the whole store malformed, with the file and the line', async () => {
    const snapshot = await snapshotOf({ known_hosts: 'this is not a pin\n' });
    const error = malformed(() => readPins(snapshot));
    expect(error.file).toBe('known_hosts');
    expect(error.reason).toMatch(/line 1/);
  });
});
