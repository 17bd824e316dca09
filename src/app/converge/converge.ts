/**
 * A converge, for every face (the converge action, `playbook run`, `converge
 * fold`, the GitLab converge template through the CLI): what the job is — a
 * play against the whole inventory, one shard of a matrix (recorded for the
 * fold), or the fold of a matrix's shard results — and the ledger lease it
 * holds while it plays. A face parses its inputs with `convergeJob`, opens the
 * ledger (for writing when `job.writesLedger`), calls `converge`, and renders.
 */
import { randomBytes } from 'node:crypto';
import type { ConvergeRun, ShardResult } from '../../domain/converge-record.js';
import { parseMaxFailures, parseRollout } from '../../domain/rollout.js';
import { EGRESS_EXTRA_VAR } from '../../domain/egress.js';
import { UsageError } from '../../domain/errors.js';
import { parseConcurrencyKey } from '../../domain/lock.js';
import { parseInventoryRef, type InventoryRef } from '../../domain/names.js';
import type { ScheduleTick } from '../../domain/schedule-fires.js';
import { formatShard, parseShardNumber, parseShardSpec, shardLease, type ShardSpec } from '../../domain/shard.js';
import { checkRecordName } from '../../ledger/records.js';
import { withConcurrencyLock } from '../runtime/concurrency.js';
import type { AppContext } from '../runtime/context.js';
import { convergeShard, foldConvergeShards } from './converge-shards.js';
import type { RolloutRequest } from './rollout.js';
import { checkPlaybookFile } from '../provision/input-checks.js';
import { grantIdentityFile } from '../keys/identity.js';
import type { PlayOutcome } from '../plays/play.js';
import type { CiPlatform } from '../ports/ci-platform.js';
import { recordScheduleFire } from '../schedules/schedule-fires.js';
import { runFilePlay, runStandingPlay, type StandingPlayRequest } from '../plays/standing-play.js';

/** The job's inputs as text, and what the face calls them (for messages). */
export interface ConvergeJobInputs {
  /** `tf:<name>`, or an inventory file where the face allows one. */
  target: string;
  shard?: string | undefined;
  foldShards?: string | undefined;
  /** The id the shards of one converge share; a CI face passes its run (GitHub) or pipeline (GitLab) id. */
  runId?: string | undefined;
  concurrencyKey?: string | undefined;
  /** Whether an inventory file may be the target (the CLI); a scheduled converge targets tf:<name> only. */
  allowFile?: boolean;
  /** A scheduled run: the schedule it answers, whose fire it records (a matrix records it in its fold job). */
  schedule?: ScheduleTick | undefined;
  /** A rolling converge: cumulative batch sizes (`1,10%,100%`), the fleet's failure budget, a health check, and how long a shard waits for the others. */
  rollout?: string | undefined;
  maxFailures?: string | undefined;
  healthCheck?: string | undefined;
  rolloutWaitMs?: number | undefined;
  /** A failed-only rerun: replay the hosts this converge run failed or never reached. */
  failedOnly?: boolean | undefined;
  fromRun?: string | undefined;
  /** The face's names of the inputs, for messages: `--shard` on the CLI, `shard` for an action. */
  names: { target: string; shard: string; foldShards: string; runId: string };
}

/** The final job of a matrix: one converge record from the run's shard results. */
export interface FoldJob {
  kind: 'fold';
  name: string;
  runId: string;
  shards: number;
  schedule?: ScheduleTick;
  writesLedger: true;
}

export type ConvergeJob =
  | FoldJob
  | {
      kind: 'play';
      target: InventoryRef;
      /** The target as given, for messages and lease purposes. */
      targetText: string;
      shard?: { spec: ShardSpec; runId: string };
      /** A rolling converge; without a shard the job plays every batch itself (as shard 1/1) and folds the run. */
      rollout?: RolloutRequest;
      /** The job is the run's only shard and folds it itself (a rollout or failed-only rerun in one job). */
      foldsItself?: true;
      /** The run a failed-only rerun repairs. */
      repairs?: string;
      /** The ledger lease held while the play runs; a shard holds its own (`<key>.<i>`), so shards never wait on each other. */
      lockKey?: string;
      schedule?: ScheduleTick;
      /** Whether the job writes the ledger (a shard result, a lease, a schedule's fire); a plain converge only reads it. */
      writesLedger: boolean;
    };

/** Every input checked before the ledger is opened. */
export function convergeJob(inputs: ConvergeJobInputs): ConvergeJob {
  const { names } = inputs;
  const target = parseInventoryRef(inputs.target);
  if (target.kind !== 'standing' && !inputs.allowFile) {
    throw new UsageError(
      `${names.target} ${JSON.stringify(inputs.target)} is not a standing inventory`,
      `write ${names.target}: tf:<workspace name>`,
    );
  }
  if (inputs.foldShards !== undefined) {
    if (inputs.shard !== undefined)
      throw new UsageError(
        `${names.shard} and ${names.foldShards} go in different jobs`,
        `give ${names.shard} to each matrix job, ${names.foldShards} to the final job`,
      );
    return foldJob({ ...inputs, foldShards: inputs.foldShards });
  }
  const spec = inputs.shard === undefined ? undefined : parseShardSpec(inputs.shard);
  if (spec !== undefined && target.kind !== 'standing')
    throw new UsageError(`${names.shard} splits a standing inventory`, `pass ${names.target} tf:<name>`);
  const rollout = rolloutOf(inputs);
  const repairs = repairsOf(inputs);
  if ((rollout !== undefined || repairs !== undefined) && target.kind !== 'standing')
    throw new UsageError(`a rollout or a failed-only rerun reads tf:<name>'s record`, `pass ${names.target} tf:<name>`);
  const recorded = rollout !== undefined || repairs !== undefined;
  const shard =
    (spec && { spec, runId: runIdOf(inputs) }) ??
    // A recorded run in one job is a run of one shard: its records and its fold need a run id.
    (recorded
      ? { spec: { index: 1, total: 1 }, runId: inputs.runId === undefined ? localRunId() : runIdOf(inputs) }
      : undefined);
  if (repairs !== undefined && shard?.runId === repairs)
    throw new UsageError(
      `a failed-only rerun is a new run: its run id must not be ${repairs}`,
      'give the rerun its own run id',
    );
  // One fire per tick: the shards of a matrix leave it to their fold job.
  if (shard !== undefined && inputs.schedule !== undefined) {
    throw new UsageError(
      `a shard does not record its schedule's fire`,
      `give the schedule to the job with ${names.foldShards}, which records one fire for the whole run`,
    );
  }
  const key = inputs.concurrencyKey === undefined ? undefined : parseConcurrencyKey(inputs.concurrencyKey);
  const lockKey = key !== undefined && spec !== undefined ? shardLease(key, spec).ledgerKey : key;
  return {
    kind: 'play',
    target,
    targetText: inputs.target,
    ...(shard ? { shard } : {}),
    ...(rollout ? { rollout } : {}),
    ...(recorded && spec === undefined ? { foldsItself: true as const } : {}),
    ...(repairs !== undefined ? { repairs } : {}),
    ...(lockKey !== undefined ? { lockKey } : {}),
    ...(inputs.schedule ? { schedule: inputs.schedule } : {}),
    writesLedger:
      shard !== undefined || rollout !== undefined || lockKey !== undefined || inputs.schedule !== undefined,
  };
}

const DEFAULT_ROLLOUT_WAIT_MS = 30 * 60_000;

/** A rollout when any of its inputs is given: all of the fleet in one batch, and no failure allowed, unless told otherwise. */
function rolloutOf(inputs: ConvergeJobInputs): RolloutRequest | undefined {
  const { rollout, maxFailures, healthCheck } = inputs;
  if (rollout === undefined && maxFailures === undefined && healthCheck === undefined) return undefined;
  if (healthCheck !== undefined) checkPlaybookFile(healthCheck, 'health check');
  return {
    rollout: parseRollout(rollout ?? '100%'),
    maxFailures: parseMaxFailures(maxFailures ?? '0'),
    ...(healthCheck !== undefined ? { healthCheck } : {}),
    waitMs: inputs.rolloutWaitMs ?? DEFAULT_ROLLOUT_WAIT_MS,
  };
}

function repairsOf(inputs: ConvergeJobInputs): string | undefined {
  if (!inputs.failedOnly && inputs.fromRun === undefined) return undefined;
  if (!inputs.failedOnly || inputs.fromRun === undefined)
    throw new UsageError(
      'a failed-only rerun needs both --failed-only and --from-run',
      'pass --failed-only --from-run <converge run id>',
    );
  return checkRecordName('converge run', inputs.fromRun);
}

/** A run id for a rollout started from a terminal: the time, and randomness so two started at once differ. */
function localRunId(): string {
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*$/, '').toLowerCase();
  return `local-${stamp}-${randomBytes(3).toString('hex')}`;
}

export function foldJob(
  inputs: Pick<ConvergeJobInputs, 'target' | 'runId' | 'names' | 'schedule'> & { foldShards: string },
): FoldJob {
  const target = parseInventoryRef(inputs.target);
  if (target.kind !== 'standing')
    throw new UsageError(`${inputs.target} is not a standing inventory`, 'name it as tf:<workspace-name>');
  return {
    kind: 'fold',
    name: target.name,
    runId: runIdOf(inputs),
    shards: parseShardNumber(inputs.foldShards, inputs.names.foldShards),
    ...(inputs.schedule ? { schedule: inputs.schedule } : {}),
    writesLedger: true,
  };
}

function runIdOf(inputs: Pick<ConvergeJobInputs, 'runId' | 'names'>): string {
  if (inputs.runId === undefined) {
    throw new UsageError(
      `${inputs.names.shard} needs ${inputs.names.runId}`,
      `pass the id the shards of this converge share, e.g. ${inputs.names.runId} "$CI_PIPELINE_ID"`,
    );
  }
  return checkRecordName('converge run', inputs.runId);
}

export interface ConvergeRequest extends Omit<
  StandingPlayRequest,
  'name' | 'onlyHosts' | 'identityFile' | 'extraVars'
> {
  /** A key file granted to this run as its identity (the play gets a 0600 copy), never a directory. */
  sshIdentity?: string | undefined;
  /** Ports the play declares it needs besides 22 (with 22), passed to it as exocomp_egress_ports; nothing enforces them. */
  egressPorts?: number[];
  /** How long to wait for the holder of the job's lease before refusing. */
  concurrencyWaitMs?: number;
  /** What this run does, recorded with its lease for whoever waits on it (as the person typed it); default: `converge <playbook> on <target>`. */
  purpose?: string;
  /** On CI: the run (its link is recorded with a shard's result), the lease holder and its probe; absent, this process holds the lease. */
  ci?: Pick<CiPlatform, 'run' | 'holder' | 'probeHolder'> | undefined;
  warn(message: string): void;
}

/** A scheduled run's schedule and the ticks of it that never ran (as of this run). */
export interface ScheduleReport {
  schedule: ScheduleTick;
  missed: Date[];
}

export interface FoldedResult {
  kind: 'folded';
  name: string;
  run: ConvergeRun;
  ticks?: ScheduleReport;
}

export type ConvergeResult =
  | FoldedResult
  | {
      kind: 'played';
      ticks?: ScheduleReport;
      /** The play's outcome; an empty success when a shard named no hosts. */
      outcome: PlayOutcome;
      /** How many hosts the play targeted (for a file inventory: unknown). */
      hostCount: number | undefined;
      /** A shard's recorded result. */
      shard?: ShardResult;
      /** The run's converge record, when the job folded its own run (a rollout in one job). */
      folded?: ConvergeRun;
      /** A rollout's budget was spent before this job's part was done. */
      rolloutStopped?: { batch: number; failures: number; allowed: number };
    };

const DEFAULT_WAIT_MS = 10 * 60_000;

/** Runs the job: a fold needs no play request. */
export async function converge(app: AppContext, job: FoldJob): Promise<FoldedResult>;
export async function converge(app: AppContext, job: ConvergeJob, request: ConvergeRequest): Promise<ConvergeResult>;
export async function converge(app: AppContext, job: ConvergeJob, request?: ConvergeRequest): Promise<ConvergeResult> {
  if (job.kind === 'fold') {
    const { run, missed } = await foldConvergeShards(app, job);
    return {
      kind: 'folded',
      name: job.name,
      run,
      ...(job.schedule && missed ? { ticks: { schedule: job.schedule, missed } } : {}),
    };
  }
  if (request === undefined) throw new TypeError('a converge that plays needs its play request');
  // The tick is answered when the run starts, whatever the play does after.
  const ticks = job.schedule && {
    schedule: job.schedule,
    missed: await recordScheduleFire(app, job.schedule, app.now()),
  };
  const result = await playJob(app, job, request);
  return ticks ? { ...result, ticks } : result;
}

async function playJob(
  app: AppContext,
  job: Exclude<ConvergeJob, FoldJob>,
  request: ConvergeRequest,
): Promise<ConvergeResult> {
  if (job.rollout !== undefined && request.limit !== undefined)
    throw new UsageError(
      'a rollout plays every host of tf:<name> in batches: --limit would hide hosts from its budget',
      'drop the limit, or converge those hosts without a rollout',
    );
  const granted = await withGrants(app, request);
  const play = async (): Promise<ConvergeResult> => {
    const { target, shard } = job;
    // Sealed outputs reach only a play that names tf:<name>: runFilePlay never reads the seal key.
    if (target.kind === 'file') {
      // A plain file's hosts are not resolved here, so nothing could route them through the run's bastion.
      if (request.bastion !== undefined)
        throw new UsageError(
          `a bastion is given, but ${target.path} is an inventory file: only tf:<name> is reached through it`,
          'target tf:<name>, or drop the bastion',
        );
      return { kind: 'played', ...(await runFilePlay(app, target, granted)), hostCount: undefined };
    }
    if (shard === undefined)
      return { kind: 'played', ...(await runStandingPlay(app, { ...granted, name: target.name })) };
    const runUrl = request.ci?.run.url;
    const { outcome, result, stopped } = await convergeShard(app, {
      ...granted,
      name: target.name,
      shard: shard.spec,
      runId: shard.runId,
      ...(runUrl ? { runUrl } : {}),
      rollout: job.rollout,
      repairs: job.repairs,
    });
    const played = {
      kind: 'played' as const,
      outcome,
      hostCount: result.hosts.length,
      shard: result,
      ...(stopped ? { rolloutStopped: stopped } : {}),
    };
    if (!job.foldsItself) return played;
    const { run } = await foldConvergeShards(app, { name: target.name, runId: shard.runId, shards: 1 });
    return { ...played, folded: run };
  };
  if (job.lockKey === undefined) return play();
  const shard = job.shard ? ` shard ${formatShard(job.shard.spec)}` : '';
  const run = request.ci ? ` (run ${request.ci.run.id})` : '';
  return withConcurrencyLock(
    app,
    {
      key: job.lockKey,
      waitMs: request.concurrencyWaitMs ?? DEFAULT_WAIT_MS,
      purpose: request.purpose ?? `converge ${request.playbook} on ${job.targetText}${shard}${run}`,
      ...(request.ci ? { holder: request.ci.holder(), probe: request.ci.probeHolder } : {}),
      info: request.info,
      warn: request.warn,
    },
    play,
  );
}

/** The identity file granted (its contents a secret from now on) and the declared egress ports as the play's extra var. */
async function withGrants(
  app: AppContext,
  request: ConvergeRequest,
): Promise<ConvergeRequest & Pick<StandingPlayRequest, 'identityFile' | 'extraVars'>> {
  const identity =
    request.sshIdentity === undefined ? undefined : await grantIdentityFile(request.sshIdentity, app.cwd);
  request.secrets.add(identity?.contents);
  const ports = request.egressPorts;
  if (ports !== undefined && ports.length > 1)
    request.info(
      `declared egress ports ${ports.join(', ')} (passed to the play as ${EGRESS_EXTRA_VAR}; nothing here enforces them)`,
    );
  return {
    ...request,
    ...(identity ? { identityFile: identity.path } : {}),
    ...(ports !== undefined ? { extraVars: { [EGRESS_EXTRA_VAR]: ports } } : {}),
  };
}
