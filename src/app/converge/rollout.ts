/**
 * One shard's part of a rolling converge (issue 41, docs/converge.md#rolling-converge):
 * join the run's rollout record (or start it), then batch by batch play this
 * shard's part, health-check it, and report its failures with a
 * compare-and-swap write, waiting for the other shards between batches and
 * stopping before the next batch once the fleet's one budget is spent.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { TaskResultEvent } from '../../adapters/ansible-events.js';
import { failedHostsOf } from '../../domain/converge-record.js';
import { ExocompError, UsageError } from '../../domain/errors.js';
import {
  joinProblem,
  nextStep,
  reportBatch,
  startRollout,
  type RolloutFailure,
  type RolloutRecord,
  type RolloutSettings,
} from '../../domain/rollout.js';
import { readRollout, RecordWrites } from '../../ledger/records.js';
import type { LedgerSnapshot } from '../../ledger/store.js';
import type { PlayOutcome } from '../plays/play.js';
import type { AppContext } from '../runtime/context.js';

export interface RolloutRequest extends RolloutSettings {
  /** A playbook run against each batch part just converged; a host it fails counts against the budget. */
  healthCheck?: string | undefined;
  /** How long a shard waits for the others to finish a batch before it gives up (a shard that never ran). */
  waitMs: number;
}

export interface RolledShard {
  /** Every host this shard played, in rollout order. */
  played: string[];
  failed: RolloutFailure[];
  /** The plays' outcomes, in order (converge and health-check plays). */
  outcomes: PlayOutcome[];
  /** Why the shard stopped before its part was done: the budget was spent. */
  stopped?: { batch: number; failures: number; allowed: number };
}

/** Plays `hosts` with the converge playbook, or the health check when given. */
export type PlayHosts = (hosts: readonly string[], playbook?: string) => Promise<PlayOutcome>;

const FIRST_POLL_MS = 1_000;
const MAX_POLL_MS = 5_000;

/** Per-host results when ansible ended without stats; every failed or unreachable host is counted. */
export function statsOf(outcome: PlayOutcome): Record<string, Record<string, number>> {
  const stats = outcome.events.findLast((e) => e.event === 'stats');
  if (stats?.event === 'stats') return stats.hosts;
  const counts: Record<string, Record<string, number>> = {};
  for (const e of outcome.events.filter((x): x is TaskResultEvent => x.event === 'result')) {
    const c = (counts[e.host] ??= { failures: 0, unreachable: 0 });
    if (e.status === 'unreachable') c.unreachable = (c.unreachable ?? 0) + 1;
    if (e.status === 'failed' && !e.ignored) c.failures = (c.failures ?? 0) + 1;
  }
  return counts;
}

/** The hosts a play stopped; a failed play that names no host (a broken playbook) fails every host it was given. */
export function playFailures(
  outcome: PlayOutcome,
  hosts: readonly string[],
  failedAs: 'failed' | 'health-check' = 'failed',
): RolloutFailure[] {
  const named = failedHostsOf(statsOf(outcome))
    .filter((f) => hosts.includes(f.host))
    .map((f) => ({ host: f.host, reason: f.reason === 'failed' ? failedAs : f.reason }));
  if (named.length === 0 && outcome.code !== 0) return hosts.map((host) => ({ host, reason: 'play-error' as const }));
  return named;
}

function recordOf(snapshot: LedgerSnapshot, name: string, runId: string): RolloutRecord {
  const record = readRollout(snapshot, name, runId);
  // The record is only ever removed by the fold: a shard still running after it is out of step with its run.
  if (record === undefined)
    throw new ExocompError('ledger-record', `the rollout of converge run ${runId} is gone from the ledger`, {
      help: 'the run was folded before this shard finished; start a new run',
    });
  return record;
}

export async function rollShard(
  app: AppContext,
  run: { name: string; runId: string; shard: { index: number; total: number }; fleet: readonly string[] },
  request: RolloutRequest,
  play: PlayHosts,
  info: (message: string) => void,
): Promise<RolledShard> {
  const { name, runId, shard } = run;
  const mine = startRollout(request, { name, runId, shards: shard.total, at: app.now().toISOString() }, run.fleet);
  let record = await app.store.update(
    (snapshot) => {
      const existing = readRollout(snapshot, name, runId);
      const problem = existing && joinProblem(existing, mine);
      if (problem !== undefined)
        throw new UsageError(`shard ${shard.index} cannot join the rollout of converge run ${runId}: ${problem}`);
      return existing
        ? { writes: new RecordWrites(), message: '', result: existing }
        : {
            writes: new RecordWrites().rollout(mine),
            message: `converge tf:${name} run ${runId}: rollout ${mine.rollout} over ${mine.ends.length} batch(es), at most ${mine.allowedFailures} failed host(s)`,
            result: mine,
          };
    },
    { readsOnlyItsWrites: true },
  );
  const batches = record.ends.length;
  const shardLabel = `shard ${shard.index}/${shard.total}`;
  const rolled: RolledShard = { played: [], failed: [], outcomes: [] };
  let waitingSince: number | undefined;
  let pollMs = FIRST_POLL_MS;
  for (;;) {
    const step = nextStep(record, shard.index);
    if (step.kind === 'done') return rolled;
    if (step.kind === 'stop') {
      const failures = record.reports.flatMap((r) => r.failed).length;
      info(
        `${shardLabel}: the rollout stopped in batch ${step.batch + 1}/${batches}: ${failures} failed host(s), more than the ${record.allowedFailures} allowed`,
      );
      return { ...rolled, stopped: { batch: step.batch, failures, allowed: record.allowedFailures } };
    }
    if (step.kind === 'wait') {
      const now = performance.now();
      waitingSince ??= now;
      if (now - waitingSince > request.waitMs)
        throw new ExocompError(
          'play-failed',
          `${shardLabel} gave up waiting for shard(s) ${step.shards.join(', ')} to finish batch ${step.batch + 1}/${batches} of converge run ${runId}`,
          { help: 'a shard that never started or was killed holds the rollout; fold the run to see what was played' },
        );
      await sleep(pollMs);
      pollMs = Math.min(MAX_POLL_MS, pollMs * 2);
      record = recordOf(await app.store.read(), name, runId);
      continue;
    }
    waitingSince = undefined;
    pollMs = FIRST_POLL_MS;
    info(`${shardLabel}: batch ${step.batch + 1}/${batches}, ${step.hosts.length} host(s)`);
    const outcome = await play(step.hosts);
    rolled.outcomes.push(outcome);
    const failed = playFailures(outcome, step.hosts);
    if (request.healthCheck !== undefined) {
      const healthy = step.hosts.filter((host) => !failed.some((f) => f.host === host));
      if (healthy.length > 0) {
        const checked = await play(healthy, request.healthCheck);
        rolled.outcomes.push(checked);
        failed.push(...playFailures(checked, healthy, 'health-check'));
      }
    }
    rolled.played.push(...step.hosts);
    rolled.failed.push(...failed);
    const report = {
      batch: step.batch,
      shard: shard.index,
      at: app.now().toISOString(),
      hosts: step.hosts.length,
      failed,
    };
    record = await app.store.update(
      (snapshot) => {
        const next = reportBatch(recordOf(snapshot, name, runId), report);
        return {
          writes: new RecordWrites().rollout(next),
          message: `converge tf:${name} run ${runId} ${shardLabel}: batch ${step.batch + 1}/${batches}, ${step.hosts.length} host(s), ${failed.length} failed`,
          result: next,
        };
      },
      { readsOnlyItsWrites: true },
    );
  }
}
