import { describe, expect, it } from 'vitest';
import {
  appendConvergeRun,
  CONVERGE_HISTORY_LIMIT,
  failedHostsOf,
  foldShardResults,
  hostsToRepair,
  renderConvergeRunMarkdown,
  renderConvergeRunText,
  SHARD_RESULT_SCHEMA_VERSION,
  type ShardResult,
} from '../../src/domain/converge-record.js';
import { escapeMarkdown } from '../../src/domain/drift-render.js';
import { shardOf } from '../../src/domain/shard.js';

const result = (
  index: number,
  hosts: string[],
  failed: ShardResult['failedHosts'] = [],
  code = failed.length > 0 ? 2 : 0,
  runId = 'r1',
): ShardResult => ({
  schemaVersion: SHARD_RESULT_SCHEMA_VERSION,
  name: 'web',
  runId,
  shard: { index, total: 3 },
  at: '2026-11-30T22:00:00Z',
  hosts,
  failedHosts: failed,
  code,
});

describe('foldShardResults', () => {
  it('names every host with its shard, and is ok when all shards reported and nothing failed', () => {
    const run = foldShardResults('r1', 3, [result(2, ['b']), result(1, ['c', 'a']), result(3, [])], 'now');
    expect(run).toEqual({
      runId: 'r1',
      at: 'now',
      ok: true,
      shards: 3,
      hosts: [
        { host: 'a', shard: 1, ok: true },
        { host: 'b', shard: 2, ok: true },
        { host: 'c', shard: 1, ok: true },
      ],
      missingShards: [],
      failedShards: [],
    });
  });

  it('fails naming failed hosts by shard, missing shards, and a shard whose play failed before any host did', () => {
    const run = foldShardResults(
      'r1',
      3,
      [result(1, ['a', 'b'], [{ host: 'b', reason: 'unreachable' }]), result(3, ['c'], [], 4)],
      'now',
    );
    expect(run.ok).toBe(false);
    expect(run.hosts.filter((h) => !h.ok)).toEqual([{ host: 'b', shard: 1, ok: false, reason: 'unreachable' }]);
    expect(run.missingShards).toEqual([2]);
    expect(run.failedShards).toEqual([1, 3]);
    const text = renderConvergeRunText('web', run);
    expect(text).toContain('1 of 3 host(s) failed; shard(s) 2/3 never reported');
    expect(text).toContain('  b (shard 1/3): unreachable');
    expect(text).toContain('  shard 3/3: the play failed before any host did');
    const md = renderConvergeRunMarkdown('web', run, escapeMarkdown);
    expect(md).toContain('| b | 1/3 | unreachable |');
    expect(md).toContain('| — | 2/3 | never reported |');
  });

  it('ignores results of other runs or another shard count', () => {
    const run = foldShardResults(
      'r1',
      3,
      [result(1, ['a'], [], 0, 'r0'), { ...result(2, ['b']), shard: { index: 2, total: 4 } }],
      'now',
    );
    expect(run.missingShards).toEqual([1, 2, 3]);
  });
});

describe('converge history', () => {
  it('keeps the latest runs, a re-folded run replacing its earlier record', () => {
    let history;
    for (let i = 0; i < CONVERGE_HISTORY_LIMIT + 5; i += 1)
      history = appendConvergeRun(history, 'web', foldShardResults(`r${i}`, 1, [], 'now'));
    expect(history?.runs).toHaveLength(CONVERGE_HISTORY_LIMIT);
    const again = appendConvergeRun(history, 'web', foldShardResults(`r${CONVERGE_HISTORY_LIMIT + 4}`, 1, [], 'later'));
    expect(again.runs).toHaveLength(CONVERGE_HISTORY_LIMIT);
    expect(again.runs.at(-1)?.at).toBe('later');
  });
});

describe('failedHostsOf', () => {
  it('reads ansible stats: unreachable wins over failed', () => {
    expect(
      failedHostsOf({ b: { ok: 1, failures: 1, unreachable: 0 }, a: { unreachable: 1, failures: 1 }, c: { ok: 3 } }),
    ).toEqual([
      { host: 'a', reason: 'unreachable' },
      { host: 'b', reason: 'failed' },
    ]);
  });
});

describe('hostsToRepair', () => {
  it('names the failed hosts, those a rollout never touched and those of shards that never reported, in fleet order', () => {
    const run = foldShardResults(
      'r1',
      3,
      [result(1, ['a', 'b'], [{ host: 'b', reason: 'failed' }]), result(2, ['c'])],
      'now',
      {
        rollout: '1,100%',
        maxFailures: '0',
        allowedFailures: 0,
        batches: 2,
        batchReached: 1,
        stopped: true,
        failed: [{ host: 'b', reason: 'failed' }],
        untouched: ['c2'],
      },
    );
    expect(run.hosts.find((h) => h.host === 'b')).toMatchObject({ ok: false, reason: 'failed' });
    const fleet = ['a', 'b', 'c', 'c2', 'gone', 'x1', 'x2', 'x3', 'x4', 'x5'];
    const onShard3 = fleet.filter((h) => !['a', 'b', 'c'].includes(h) && shardOf(h, 3) === 3);
    expect(hostsToRepair(run, fleet)).toEqual(fleet.filter((h) => h === 'b' || h === 'c2' || onShard3.includes(h)));
    // A run where every host converged repairs nothing; one whose only shard never reported repairs everyone.
    const alone = { ...result(1, ['a']), shard: { index: 1, total: 1 } };
    expect(hostsToRepair(foldShardResults('r1', 1, [alone], 'now'), ['a'])).toEqual([]);
    expect(hostsToRepair(foldShardResults('r2', 1, [alone], 'now'), ['a'])).toEqual(['a']);
  });
});
