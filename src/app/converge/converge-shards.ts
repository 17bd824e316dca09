/**
 * A converge split across runners: one shard runs the play against its part of
 * tf:<name> (rendezvous hashing on host names, src/domain/shard.ts) and records
 * what happened; the fold reads every shard of the run and records one converge
 * result. Shards of one run share a run id (GitHub: the run id; GitLab: the
 * pipeline id), so a re-run shard replaces its own earlier result.
 */
import type { TaskResultEvent } from '../../adapters/ansible-events.js';
import {
  appendConvergeRun,
  failedHostsOf,
  foldShardResults,
  SHARD_RESULT_SCHEMA_VERSION,
  type ConvergeRun,
  type ShardResult,
} from '../../domain/converge-record.js';
import type { ScheduleTick } from '../../domain/schedule-fires.js';
import { checkShardSpec, formatShard, hostsOfShard, type ShardSpec } from '../../domain/shard.js';
import { readConvergeHistory, readShardResults, RecordWrites } from '../../ledger/records.js';
import type { AppContext } from '../runtime/context.js';
import { loadStandingInventory } from '../hosts/inventories.js';
import { addScheduleFire } from '../schedules/schedule-fires.js';
import type { PlayOutcome } from '../plays/play.js';
import { runStandingPlay, type StandingPlayRequest } from '../plays/standing-play.js';

export interface ShardConvergeRequest extends Omit<StandingPlayRequest, 'onlyHosts'> {
  shard: ShardSpec;
  runId: string;
  runUrl?: string;
}

export interface ShardConvergeOutcome {
  result: ShardResult;
  /** An empty success when the shard named no hosts and no play ran. */
  outcome: PlayOutcome;
}

const NO_PLAY: PlayOutcome = { code: 0, stdout: '', stderr: '', events: [], failures: [] };

function statsOf(outcome: PlayOutcome): Record<string, Record<string, number>> {
  const stats = outcome.events.findLast((e) => e.event === 'stats');
  if (stats?.event === 'stats') return stats.hosts;
  // No stats: ansible stopped early. Hosts that reported unreachable or failed are still known.
  const counts: Record<string, Record<string, number>> = {};
  for (const e of outcome.events.filter((x): x is TaskResultEvent => x.event === 'result')) {
    const c = (counts[e.host] ??= { failures: 0, unreachable: 0 });
    if (e.status === 'unreachable') c.unreachable = (c.unreachable ?? 0) + 1;
    if (e.status === 'failed' && !e.ignored) c.failures = (c.failures ?? 0) + 1;
  }
  return counts;
}

export async function convergeShard(app: AppContext, request: ShardConvergeRequest): Promise<ShardConvergeOutcome> {
  const shard = checkShardSpec(request.shard.index, request.shard.total);
  // The fleet must name hosts (fails closed); one shard of it may be empty.
  const inventory = loadStandingInventory(await app.store.read(), request.name);
  const hosts = hostsOfShard(
    inventory.hosts.map((h) => h.name),
    shard,
  );
  let outcome: PlayOutcome | undefined;
  if (hosts.length === 0) {
    request.info(
      `shard ${formatShard(shard)} names none of the ${inventory.hosts.length} host(s) of tf:${request.name}: nothing to converge`,
    );
  } else {
    request.info(
      `shard ${formatShard(shard)}: ${hosts.length} of ${inventory.hosts.length} host(s) of tf:${request.name}`,
    );
    ({ outcome } = await runStandingPlay(app, { ...request, onlyHosts: new Set(hosts) }));
  }
  const result: ShardResult = {
    schemaVersion: SHARD_RESULT_SCHEMA_VERSION,
    name: request.name,
    runId: request.runId,
    shard,
    at: app.now().toISOString(),
    hosts,
    failedHosts: outcome ? failedHostsOf(statsOf(outcome)) : [],
    code: outcome?.code ?? 0,
    ...(request.runUrl ? { runUrl: request.runUrl } : {}),
  };
  await app.store.update(() => ({
    writes: new RecordWrites().shardResult(result),
    message: `converge tf:${request.name} run ${request.runId} shard ${formatShard(shard)}: ${hosts.length} host(s), ${result.failedHosts.length} failed`,
    result: undefined,
  }));
  return { result, outcome: outcome ?? NO_PLAY };
}

/**
 * One converge record from the shards of a run; the folded shard records leave
 * the branch (its history keeps them). A scheduled run's fire is recorded in the
 * same commit, at the time its first shard reported; `missed` is then the
 * schedule's ticks that never ran.
 */
export async function foldConvergeShards(
  app: AppContext,
  request: { name: string; runId: string; shards: number; schedule?: ScheduleTick | undefined },
): Promise<{ run: ConvergeRun; missed?: Date[] }> {
  checkShardSpec(1, request.shards);
  return app.store.update((snapshot) => {
    const results = readShardResults(snapshot, request.name, request.runId);
    const now = app.now();
    const run = foldShardResults(request.runId, request.shards, results, now.toISOString());
    const writes = new RecordWrites().convergeHistory(
      appendConvergeRun(readConvergeHistory(snapshot, request.name), request.name, run),
    );
    for (const result of results) writes.foldedShardResult(result);
    const firstReport = results.map((r) => new Date(r.at)).sort((a, b) => a.getTime() - b.getTime())[0] ?? now;
    const missed =
      request.schedule === undefined
        ? undefined
        : addScheduleFire(snapshot, writes, request.schedule, firstReport, now);
    const failed = run.hosts.filter((h) => !h.ok).length;
    return {
      writes,
      message: `converge tf:${request.name} run ${request.runId}: ${run.ok ? 'converged' : 'failed'} — ${run.hosts.length} host(s) over ${request.shards} shard(s), ${failed} failed, ${run.missingShards.length} shard(s) missing`,
      result: { run, ...(missed ? { missed } : {}) },
    };
  });
}
