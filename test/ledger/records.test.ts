/**
 * Malformed records on the branch are reported with file and reason, and
 * nothing is overwritten (issue 2). Runs on a real git branch.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProcess } from '../../src/adapters/process.js';
import { saveWorkflow } from '../../src/app/provision/workflows.js';
import { RecordingProgress } from '../../src/app/runtime/progress.js';
import type { AppContext } from '../../src/app/runtime/context.js';
import { startStep, type Workflow } from '../../src/domain/workflow.js';
import { sampleWorkflow } from '../support/workflows.js';
import { GitLedgerStore } from '../../src/ledger/git-store.js';
import {
  LEDGER_PATHS,
  LedgerRecordError,
  listWorkflows,
  readWorkflow,
  serializeRecord,
} from '../../src/ledger/records.js';

const now = new Date('2026-11-30T00:00:00Z');

const workflow = (id: string): Workflow => sampleWorkflow(id, { now });

describe('malformed ledger records', () => {
  let dir: string;
  let store: GitLedgerStore;
  let app: AppContext;
  const broken = {
    'workflows/broken-json.json': '{"schemaVersion": 1, "id": ',
    'workflows/future.json': JSON.stringify({ ...workflow('future'), schemaVersion: 99 }),
    'workflows/odd-state.json': JSON.stringify({ ...workflow('odd-state'), state: 'half-provisioned' }),
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'exocomp-records-'));
    await runProcess('git', ['init', '-q', '--bare', join(dir, 'remote.git')]);
    store = new GitLedgerStore({
      remote: join(dir, 'remote.git'),
      branch: 'exocomp-ledger',
      cacheDir: join(dir, 'cache'),
    });
    await store.update(() => ({
      writes: new Map<string, string>([
        ...Object.entries(broken),
        [LEDGER_PATHS.workflow('good'), serializeRecord(workflow('good'))],
      ]),
      message: 'seed records',
      result: undefined,
    }));
    app = {
      store,
      ledgerBranch: 'exocomp-ledger',
      now: () => now,
      cwd: dir,
      env: {},
      progress: new RecordingProgress(),
    };
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it.each([
    ['broken-json', 'workflows/broken-json.json', /broken JSON/],
    ['future', 'workflows/future.json', /unknown schema version 99/],
    ['odd-state', 'workflows/odd-state.json', /state: .*(Invalid|expected)/i],
  ])('reports %s with its file and reason', async (id, file, reason) => {
    const snapshot = await store.read();
    let error: unknown;
    try {
      readWorkflow(snapshot, id);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(LedgerRecordError);
    expect((error as LedgerRecordError).file).toBe(file);
    expect((error as LedgerRecordError).message).toContain(file);
    expect((error as LedgerRecordError).reason).toMatch(reason);
  });

  it('lists the good records and reports every bad one instead of dropping it', async () => {
    const { workflows, errors } = listWorkflows(await store.read());
    expect(workflows.map((w) => w.id)).toEqual(['good']);
    expect(errors.map((e) => e.file).sort()).toEqual(Object.keys(broken).sort());
  });

  it('refuses to write over a malformed record, and leaves the branch as it was', async () => {
    const before = (await store.read()).revision;
    for (const id of ['broken-json', 'future', 'odd-state']) {
      await expect(
        saveWorkflow(
          app,
          id,
          (w) =>
            startStep(
              w,
              'apply',
              {
                holder: 'x',
                origin: { kind: 'local', hostname: 'h', pid: 1 },
                acquiredAt: now.toISOString(),
                heartbeatAt: now.toISOString(),
                ttlMs: 1000,
              },
              now,
            ),
          'should not happen',
        ),
      ).rejects.toBeInstanceOf(LedgerRecordError);
    }
    const after = await store.read();
    expect(after.revision).toBe(before);
    for (const [file, text] of Object.entries(broken)) expect(after.read(file)).toBe(text);
  });

  it('an illegal transition writes nothing either', async () => {
    const before = (await store.read()).revision;
    await expect(
      saveWorkflow(
        app,
        'good',
        (w) =>
          startStep(
            w,
            'configure',
            {
              holder: 'x',
              origin: { kind: 'local', hostname: 'h', pid: 1 },
              acquiredAt: now.toISOString(),
              heartbeatAt: now.toISOString(),
              ttlMs: 1000,
            },
            now,
          ),
        'no',
      ),
    ).rejects.toThrow(/configure of good cannot start: onboard is pending/);
    expect((await store.read()).revision).toBe(before);
  });
});
