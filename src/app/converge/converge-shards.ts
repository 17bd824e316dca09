/**
 * A converge split across runners: one shard runs the play against its part of
 * tf:<name> (rendezvous hashing on host names, src/domain/shard.ts) and records
 * what happened; the fold reads every shard of the run and records one converge
 * result. Shards of one run share a run id (GitHub: the run id; GitLab: the
 * pipeline id), so a re-run shard replaces its own earlier result.
 */
import {
  appendConvergeRun,
  failedHostsOf,
  hostsToRepair,
  foldShardResults,
  SHARD_RESULT_SCHEMA_VERSION,
  type ConvergeRun,
  type ShardResult,
} from '../../domain/converge-record.js';
import type { ScheduleTick } from '../../domain/schedule-fires.js';
import { checkShardSpec, formatShard, hostsOfShard, type ShardSpec } from '../../domain/shard.js';
import { readConvergeHistory, readRollout, readShardResults, RecordWrites } from '../../ledger/records.js';
import { summarizeRollout } from '../../domain/rollout.js';
import { UsageError } from '../../domain/errors.js';
import type { LedgerSnapshot } from '../../ledger/store.js';
import type { AppContext } from '../runtime/context.js';
import { loadStandingInventory } from '../hosts/inventories.js';
import { addScheduleFire } from '../schedules/schedule-fires.js';
import type { PlayOutcome } from '../plays/play.js';
import { runStandingPlay, type StandingPlayRequest } from '../plays/standing-play.js';
import { rollShard, statsOf, type RolledShard, type RolloutRequest } from './rollout.js';

export interface ShardConvergeRequest extends Omit<StandingPlayRequest, 'onlyHosts'> {
  shard: ShardSpec;
  runId: string;
  runUrl?: string;
  /** A rolling converge: this shard plays its part batch by batch under the run's one failure budget. */
  rollout?: RolloutRequest | undefined;
  /** A failed-only rerun: play only the hosts this folded run failed or never reached. */
  repairs?: string | undefined;
}

export interface ShardConvergeOutcome {
  result: ShardResult;
  /** An empty success when the shard named no hosts and no play ran. */
  outcome: PlayOutcome;
  /** A rolling converge whose budget was spent before this shard's part was done. */
  stopped?: RolledShard['stopped'];
}

const NO_PLAY: PlayOutcome = { code: 0, stdout: '', stderr: '', events: [], failures: [] };

export async function convergeShard(app: AppContext, request: ShardConvergeRequest): Promise<ShardConvergeOutcome> {
  const shard = checkShardSpec(request.shard.index, request.shard.total);
  // The fleet must name hosts (fails closed); one shard of it may be empty.
  const snapshot = await app.store.read();
  const inventory = loadStandingInventory(snapshot, request.name);
  const names = inventory.hosts.map((h) => h.name);
  const fleet = request.repairs === undefined ? names : repairSet(snapshot, request, names);
  const { hosts, failedHosts, outcome, stopped } =
    request.rollout === undefined || fleet.length === 0
      ? await playWholeShard(app, request, shard, fleet)
      : combined(
          await rollShard(
            app,
            { name: request.name, runId: request.runId, shard, fleet },
            request.rollout,
            async (only, playbook) =>
              (
                await runStandingPlay(app, {
                  ...request,
                  ...(playbook ? { playbook, tags: undefined } : {}),
                  onlyHosts: new Set(only),
                })
              ).outcome,
            request.info,
          ),
        );
  const result: ShardResult = {
    schemaVersion: SHARD_RESULT_SCHEMA_VERSION,
    name: request.name,
    runId: request.runId,
    shard,
    at: app.now().toISOString(),
    hosts,
    failedHosts,
    code: outcome?.code ?? 0,
    ...(request.runUrl ? { runUrl: request.runUrl } : {}),
    ...(request.repairs !== undefined ? { repairs: request.repairs } : {}),
  };
  await app.store.update(() => ({
    writes: new RecordWrites().shardResult(result),
    message: `converge tf:${request.name} run ${request.runId} shard ${formatShard(shard)}: ${hosts.length} host(s), ${result.failedHosts.length} failed`,
    result: undefined,
  }));
  return { result, outcome: outcome ?? NO_PLAY, ...(stopped ? { stopped } : {}) };
}

/** The hosts a failed-only rerun plays: read from the folded run's record, never guessed. */
function repairSet(
  snapshot: LedgerSnapshot,
  request: Pick<ShardConvergeRequest, 'name' | 'repairs' | 'info'>,
  fleet: string[],
): string[] {
  const run = readConvergeHistory(snapshot, request.name)?.runs.find((r) => r.runId === request.repairs);
  if (run === undefined)
    throw new UsageError(
      `converge run ${request.repairs} is not in the history of tf:${request.name}`,
      'name a folded run (converge fold, or a rollout in one job); exocomp keeps the last 50',
    );
  const hosts = hostsToRepair(run, fleet);
  request.info(`failed-only: ${hosts.length} host(s) of converge run ${run.runId} failed or were never reached`);
  return hosts;
}

interface ShardPlay {
  hosts: string[];
  failedHosts: ShardResult['failedHosts'];
  outcome: PlayOutcome | undefined;
  stopped?: RolledShard['stopped'];
}

async function playWholeShard(
  app: AppContext,
  request: ShardConvergeRequest,
  shard: ShardSpec,
  fleet: string[],
): Promise<ShardPlay> {
  const hosts = hostsOfShard(fleet, shard);
  if (hosts.length === 0) {
    request.info(
      `shard ${formatShard(shard)} names none of the ${fleet.length} host(s) of tf:${request.name}: nothing to converge`,
    );
    return { hosts, failedHosts: [], outcome: undefined };
  }
  request.info(`shard ${formatShard(shard)}: ${hosts.length} of ${fleet.length} host(s) of tf:${request.name}`);
  const { outcome } = await runStandingPlay(app, { ...request, onlyHosts: new Set(hosts) });
  return { hosts, failedHosts: failedHostsOf(statsOf(outcome)), outcome };
}

/** A rolled shard as one play: its hosts, its failures (a health check's or a broken play's count as failed), and its plays' outcomes as one. */
function combined(rolled: RolledShard): ShardPlay {
  const failedHosts = rolled.failed
    .map((f) => ({ host: f.host, reason: f.reason === 'unreachable' ? ('unreachable' as const) : ('failed' as const) }))
    .sort((a, b) => (a.host < b.host ? -1 : a.host > b.host ? 1 : 0));
  const code = rolled.outcomes.find((o) => o.code !== 0)?.code ?? 0;
  const outcome: PlayOutcome = {
    code,
    stdout: rolled.outcomes.map((o) => o.stdout).join(''),
    stderr: rolled.outcomes.map((o) => o.stderr).join(''),
    events: rolled.outcomes.flatMap((o) => o.events),
    failures: rolled.outcomes.flatMap((o) => o.failures),
  };
  return {
    hosts: rolled.played,
    failedHosts,
    outcome: rolled.outcomes.length > 0 ? outcome : undefined,
    ...(rolled.stopped ? { stopped: rolled.stopped } : {}),
  };
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
    const rollout = readRollout(snapshot, request.name, request.runId);
    const now = app.now();
    const run = foldShardResults(
      request.runId,
      request.shards,
      results,
      now.toISOString(),
      rollout && summarizeRollout(rollout),
    );
    const writes = new RecordWrites().convergeHistory(
      appendConvergeRun(readConvergeHistory(snapshot, request.name), request.name, run),
    );
    for (const result of results) writes.foldedShardResult(result);
    if (rollout) writes.foldedRollout(rollout);
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
