/**
 * The converge use case's decisions, shared by the converge action, `playbook
 * run` and `converge fold`: what kind of job the inputs ask for, which ledger
 * lease it holds, whether it writes the ledger, and the fold of a matrix.
 */
import { describe, expect, it } from 'vitest';
import { converge, convergeJob, foldJob, type ConvergeJobInputs } from '../../src/app/converge/converge.js';
import type { AppContext } from '../../src/app/runtime/context.js';
import { RecordingProgress } from '../../src/app/runtime/progress.js';
import { SHARD_RESULT_SCHEMA_VERSION, type ShardResult } from '../../src/domain/converge-record.js';
import { readConvergeHistory, readScheduleFires, readShardResults, RecordWrites } from '../../src/ledger/records.js';
import { MemoryLedgerStore } from '../../src/ledger/memory-store.js';
import { thrown } from '../support/errors.js';
import { T0 } from '../support/workflows.js';

const CLI = { target: '--inventory', shard: '--shard', foldShards: '--shards', runId: '--run-id' };
const ACTION = { target: 'target', shard: 'shard', foldShards: 'fold-shards', runId: 'run id' };
const NIGHTLY = { name: 'nightly', cron: '17 3 * * *' };
const job = (inputs: Partial<ConvergeJobInputs>) => convergeJob({ target: 'tf:edge', names: ACTION, ...inputs });

describe('convergeJob', () => {
  it('a plain converge of tf:<name> only reads the ledger', () => {
    expect(job({})).toEqual({
      kind: 'play',
      target: { kind: 'standing', name: 'edge' },
      targetText: 'tf:edge',
      writesLedger: false,
    });
  });

  it('a concurrency key makes it hold that lease, which is a ledger write', () => {
    expect(job({ concurrencyKey: 'edge-nightly' })).toMatchObject({
      kind: 'play',
      lockKey: 'edge-nightly',
      writesLedger: true,
    });
  });

  it('a shard records its result under the run id and holds its own lease <key>.<i>, so shards never wait on each other', () => {
    expect(job({ shard: '2/3', runId: '4242', concurrencyKey: 'edge-nightly' })).toMatchObject({
      kind: 'play',
      shard: { spec: { index: 2, total: 3 }, runId: '4242' },
      lockKey: 'edge-nightly.2',
      writesLedger: true,
    });
  });

  it('a rollout or a failed-only rerun in one job is a run of one shard that folds itself; with a shard it is that shard', () => {
    expect(job({ rollout: '1,10%,100%', maxFailures: '2%', runId: '77' })).toMatchObject({
      shard: { spec: { index: 1, total: 1 }, runId: '77' },
      rollout: {
        rollout: [{ count: 1 }, { hundredths: 1000 }, { hundredths: 10000 }],
        maxFailures: { hundredths: 200 },
      },
      foldsItself: true,
      writesLedger: true,
    });
    expect(job({ rollout: '1,50%', shard: '2/2', runId: '77' })).not.toHaveProperty('foldsItself');
    // Closed by default: a rollout without a budget stops at the first failure.
    expect(job({ rollout: '10%', runId: '77' })).toMatchObject({
      rollout: { maxFailures: { kind: 'count', count: 0 } },
    });
    expect(job({ failedOnly: true, fromRun: '76', runId: '77' })).toMatchObject({
      shard: { runId: '77' },
      repairs: '76',
      foldsItself: true,
    });
    expect(job({ failedOnly: true, fromRun: '76' })).toMatchObject({
      shard: { runId: expect.stringMatching(/^local-/) },
    });
  });

  it.each([
    ['--failed-only without --from-run', { failedOnly: true }, /needs both --failed-only and --from-run/],
    ['--from-run without --failed-only', { fromRun: '76' }, /needs both/],
    ['a rerun that repairs itself', { failedOnly: true, fromRun: '76', runId: '76' }, /must not be 76/],
    ['a rollout of a file', { target: 'hosts.yml', allowFile: true, rollout: '10%' }, /reads tf:<name>/],
    ['a rollout that is not cumulative', { rollout: '10%,5%', runId: '1' }, /not cumulative/],
    ['a budget that never stops', { rollout: '10%', maxFailures: '100%', runId: '1' }, /never stop/],
  ])('refuses %s as bad usage', (_, inputs, message) => {
    const error = thrown(() => job(inputs));
    expect(error).toMatchObject({ kind: 'usage', message: expect.stringMatching(message) });
  });

  it('fold-shards is the fold of the run, which writes the converge record', () => {
    expect(job({ foldShards: '3', runId: '4242' })).toEqual({
      kind: 'fold',
      name: 'edge',
      runId: '4242',
      shards: 3,
      writesLedger: true,
    });
  });

  it.each([
    [
      'a file target where the face allows none',
      { target: 'hosts.yml' },
      /target "hosts.yml" is not a standing inventory/,
    ],
    [
      'a shard and a fold in one job',
      { shard: '1/3', foldShards: '3', runId: '1' },
      /shard and fold-shards go in different jobs/,
    ],
    ['a shard without the run id its siblings share', { shard: '1/3', names: CLI }, /--shard needs --run-id/],
    [
      'a shard of a file inventory',
      { target: 'hosts.yml', allowFile: true, shard: '1/3', runId: '1', names: CLI },
      /--shard splits a standing inventory/,
    ],
    ['a shard index past the count', { shard: '4/3', runId: '1' }, /shard index 4 is not a whole number from 1 to 3/],
    ['a run id that cannot name a record', { shard: '1/3', runId: '../x' }, /invalid converge run name/],
    ['a concurrency key with a slash', { concurrencyKey: 'a/b' }, /invalid concurrency key/],
    [
      'a schedule on a shard (its fold records the fire)',
      { shard: '1/3', runId: '1', schedule: NIGHTLY },
      /a shard does not record its schedule's fire/,
    ],
  ] as const)('refuses %s before the ledger is opened', (_what, inputs, message) => {
    const error = thrown(() => job(inputs));
    expect(error.kind).toBe('usage');
    expect(error.message).toMatch(message);
  });

  it('a scheduled converge records its fire, which is a ledger write; so does a scheduled fold', () => {
    expect(job({ schedule: NIGHTLY })).toMatchObject({ kind: 'play', schedule: NIGHTLY, writesLedger: true });
    expect(job({ foldShards: '3', runId: '4242', schedule: NIGHTLY })).toMatchObject({
      kind: 'fold',
      schedule: NIGHTLY,
    });
  });

  it('lets the CLI play against an inventory file', () => {
    expect(job({ target: 'hosts.yml', allowFile: true, names: CLI })).toMatchObject({
      kind: 'play',
      target: { kind: 'file', path: 'hosts.yml' },
      writesLedger: false,
    });
  });
});

describe('converge: the fold', () => {
  const shard = (index: number, hosts: string[], failed: string[] = []): ShardResult => ({
    schemaVersion: SHARD_RESULT_SCHEMA_VERSION,
    name: 'edge',
    runId: '4242',
    shard: { index, total: 3 },
    at: T0.toISOString(),
    hosts,
    failedHosts: failed.map((host) => ({ host, reason: 'failed' as const })),
    code: failed.length > 0 ? 2 : 0,
  });

  it('folds the shards that reported into one record, names the missing shard, and takes the shard records off the branch', async () => {
    const store = new MemoryLedgerStore();
    await store.update(() => ({
      writes: new RecordWrites().shardResult(shard(1, ['web1', 'web2'])).shardResult(shard(2, ['web3'], ['web3'])),
      message: 'shards',
      result: undefined,
    }));
    const app: AppContext = {
      store,
      ledgerBranch: 'exocomp-ledger',
      now: () => T0,
      cwd: '/nonexistent',
      env: {},
      progress: new RecordingProgress(),
    };
    const result = await converge(app, foldJob({ target: 'tf:edge', foldShards: '3', runId: '4242', names: CLI }));
    expect(result.kind).toBe('folded');
    expect(result.run).toMatchObject({ ok: false, shards: 3, missingShards: [3] });
    expect(result.run.hosts.map((h) => [h.host, h.ok])).toEqual([
      ['web1', true],
      ['web2', true],
      ['web3', false],
    ]);
    const snapshot = await store.read();
    expect(readShardResults(snapshot, 'edge', '4242')).toEqual([]);
    expect(readConvergeHistory(snapshot, 'edge')?.runs).toHaveLength(1);
  });

  it("records the schedule's fire in the fold's commit, at the time the first shard reported, and says which ticks never ran", async () => {
    const store = new MemoryLedgerStore();
    const earlier = {
      schemaVersion: 1 as const,
      name: 'nightly',
      cron: NIGHTLY.cron,
      fires: ['2026-11-27T03:18:00.000Z', '2026-11-29T03:18:00.000Z'],
    };
    await store.update(() => ({
      writes: new RecordWrites()
        .scheduleFires(earlier)
        .shardResult(shard(1, ['web1']))
        .shardResult(shard(2, []))
        .shardResult(shard(3, [])),
      message: 'shards',
      result: undefined,
    }));
    const now = new Date(T0.getTime() + 10 * 60_000);
    const app: AppContext = {
      store,
      ledgerBranch: 'exocomp-ledger',
      now: () => now,
      cwd: '/nonexistent',
      env: {},
      progress: new RecordingProgress(),
    };
    const commitsBefore = store.history().length;
    const result = await converge(
      app,
      foldJob({ target: 'tf:edge', foldShards: '3', runId: '4242', schedule: NIGHTLY, names: CLI }),
    );
    expect(result.run.ok).toBe(true);
    expect(store.history()).toHaveLength(commitsBefore + 1);
    expect(readScheduleFires(await store.read(), 'nightly')?.fires.at(-1)).toBe(T0.toISOString());
    expect(result.ticks?.schedule).toEqual(NIGHTLY);
    expect(result.ticks?.missed.map((t) => t.toISOString())).toEqual(['2026-11-28T03:17:00.000Z']);
  });
});
