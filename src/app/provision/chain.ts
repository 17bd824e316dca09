/**
 * The provision chain (docs/architecture.md, "The chain"): four steps, each released only by the
 * success of the one before, each armed in the ledger (write-ahead, with a
 * lease) before it does anything, and never run again once it succeeded.
 */
import { describeError, ExocompError, InterruptedError } from '../../domain/errors.js';
import {
  failStep,
  heartbeat,
  IllegalTransitionError,
  leaseNeedsHeartbeats,
  resumeWorkflow,
  startStep,
  STEP_NAMES,
  stepOf,
  succeedAndStartNext,
  succeedStep,
  type Step,
  type StepName,
  type Workflow,
} from '../../domain/workflow.js';
import { requireWorkflow, type RecordsChange } from '../../ledger/records.js';
import type { AppContext } from '../runtime/context.js';
import {
  holderFacts,
  keepLeaseAlive,
  LEASE_TTL_MS,
  localHolder,
  probeLocalHolder,
  type Holder,
  type HolderProbe,
} from '../runtime/lease.js';
import { saveWorkflow } from './workflows.js';
import type { RunInputs } from '../plays/run-inputs.js';
import { applyStep } from './steps/apply.js';
import { sshWaitStep } from './steps/ssh-wait.js';
import { onboardStep } from './steps/onboard.js';
import { configureStep } from './steps/configure.js';
import type { HandedOn, StepAction, StepResult } from './steps/step.js';
import { LookAhead } from './look-ahead.js';

/** The steps, walked in STEP_NAMES order; the compiler refuses a chain that misses or adds one. */
export const CHAIN: Readonly<Record<StepName, StepAction>> = {
  apply: applyStep,
  'ssh-wait': sshWaitStep,
  onboard: onboardStep,
  configure: configureStep,
};

export interface ChainResult {
  workflow: Workflow;
  ok: boolean;
}

/**
 * Runs the chain from wherever the ledger says it stands: succeeded steps are
 * skipped, a failed workflow is re-opened from its failed step, a step whose
 * holder is gone is re-armed. Returns when the chain is done or a step failed.
 */
export async function runChain(
  app: AppContext,
  workflowId: string,
  inputs: RunInputs,
  options: {
    holder?: Holder;
    probe?: HolderProbe;
    steps?: Readonly<Record<StepName, StepAction>>;
    only?: StepName;
    heartbeatMs?: number;
    /** The workflow as the caller just wrote it, with `started` already running under `holder` (created that way). */
    seen?: Workflow;
    started?: StepName;
  } = {},
): Promise<ChainResult> {
  const holder = options.holder ?? localHolder();
  const probe = options.probe ?? probeLocalHolder;
  const chain = options.steps ?? CHAIN;
  let workflow = options.seen ?? requireWorkflow(await app.store.read(), workflowId);
  if (workflow.state === 'provision-failed') {
    workflow = await saveWorkflow(
      app,
      workflowId,
      (w) => resumeWorkflow(w, app.now()),
      `resume ${workflowId} from ${workflow.failure?.step ?? 'its failed step'}`,
    );
  }
  const total = STEP_NAMES.length;
  // The step already started under our lease: by the previous one's success (one ledger write between two steps), or by the caller.
  let armed: StepName | undefined = options.started;
  // What the steps hand to the later ones: tf:<name> as apply wrote it, the wait for its banners, the keys scanned after it, the fleet agent.
  const handedOn: HandedOn = {};
  const closings: Promise<void>[] = [];
  const walk = async (): Promise<ChainResult> => {
    for (const [i, name] of STEP_NAMES.entries()) {
      const step = { name, run: chain[name] };
      const index = i + 1;
      if (stepOf(workflow, step.name).state === 'succeeded') {
        app.progress.emit({ type: 'step-skipped', step: step.name, index, total, reason: 'already succeeded' });
        continue;
      }
      // A per-step entry (one CI job per step) runs its own step only; startStep refuses it unless its predecessor succeeded.
      if (options.only !== undefined && options.only !== step.name) {
        if (STEP_NAMES.indexOf(step.name) < STEP_NAMES.indexOf(options.only)) continue;
        break;
      }
      const startedHere = armed === step.name;
      // Interrupted between steps: the next one is not started, so nothing of it needs recording.
      if (app.interrupt?.aborted && !startedHere) return { workflow, ok: false };
      if (!startedHere) workflow = await arm(app, workflow, step.name, holder, probe);
      const attempt = stepOf(workflow, step.name).attempts;
      app.progress.emit({ type: 'step-started', workflow: workflowId, step: step.name, index, total, attempt });
      const started = app.now().getTime();
      const beat = keepStepAlive(app, workflowId, step.name, holder, inputs, options.heartbeatMs);
      let outcome: ({ ok: true } & StepResult) | { ok: false; error: unknown };
      let began = false;
      try {
        // Started by the previous step's success, then interrupted: it fails as interrupted without running.
        app.interrupt?.throwIfAborted();
        began = true;
        const result = await step.run({
          app,
          workflow,
          inputs,
          info: (message) =>
            app.progress.emit({ type: 'info', message: inputs.secrets.redact(message), step: step.name }),
          warn: (message) =>
            app.progress.emit({ type: 'warning', message: inputs.secrets.redact(message), step: step.name }),
          signal: app.interrupt ? AbortSignal.any([beat.signal, app.interrupt]) : beat.signal,
          handedOn,
          nextRunsHere: options.only === undefined,
          deferClose: (closing) => closings.push(closing),
        });
        outcome = { ok: true, ...(typeof result === 'string' ? { detail: result } : result) };
        // The later steps take it only once the success is written; if it is not, the finally below stops it.
        Object.assign(handedOn, outcome.handOn);
      } catch (error) {
        outcome = { ok: false, error };
      }
      try {
        await beat.stop();
        // The step now belongs to another runner: whatever this one saw is not ours to record.
        if (beat.signal.aborted) throw beat.signal.reason;
        if (outcome.ok) {
          const safeDetail = inputs.secrets.redact(outcome.detail);
          // The next step is started in the same write, unless this run stops here (one step only, or interrupted).
          const handOver = options.only === undefined && !app.interrupt?.aborted;
          armed = undefined;
          workflow = await saveOwnStep(
            app,
            workflowId,
            step.name,
            (w) => {
              if (!handOver) return succeedStep(w, step.name, holder.id, app.now(), safeDetail);
              const next = succeedAndStartNext(w, step.name, holder.id, app.now(), safeDetail, holder.lease(app.now()));
              armed = next.started;
              return next.workflow;
            },
            () =>
              `${workflowId}: ${step.name} succeeded${armed === undefined ? '' : `; ${armed} running (${holder.id})`}`,
            outcome.records,
          );
          app.progress.emit({
            type: 'step-succeeded',
            step: step.name,
            index,
            total,
            durationMs: app.now().getTime() - started,
            detail: safeDetail,
          });
        } else {
          // An interrupted step failed because it was told to stop: the interruption is its failure context.
          const interruption: unknown = app.interrupt?.aborted ? app.interrupt.reason : undefined;
          const error = interruption instanceof InterruptedError ? interruption : outcome.error;
          const summary = inputs.secrets.redact(
            error instanceof InterruptedError
              ? `${step.name} interrupted by ${error.received}${began ? '; its tool was stopped' : ' before it began'}`
              : (describeError(error).split('\n')[0] ?? 'failed'),
          );
          const kind = error instanceof ExocompError ? error.kind : 'internal';
          const detail =
            error instanceof ExocompError && error.detail ? { detail: inputs.secrets.redact(error.detail) } : {};
          const hosts =
            error instanceof ExocompError && error.hosts && error.hosts.length > 0
              ? { hosts: error.hosts.map((host) => inputs.secrets.redact(host)) }
              : {};
          workflow = await saveOwnStep(
            app,
            workflowId,
            step.name,
            (w) => failStep(w, step.name, holder.id, app.now(), { kind, summary, ...detail, ...hosts }),
            `${workflowId}: ${step.name} failed (${kind})`,
          );
          app.progress.emit({
            type: 'step-failed',
            step: step.name,
            index,
            total,
            durationMs: app.now().getTime() - started,
            summary,
            ...hosts,
          });
          return { workflow, ok: false };
        }
      } finally {
        // What the step left closing is closed once its outcome is written, before anything else runs.
        await closeDeferred(app, inputs, step.name, closings.splice(0));
      }
    }
    const done =
      options.only === undefined
        ? workflow.state === 'provisioned'
        : stepOf(workflow, options.only).state === 'succeeded';
    return { workflow, ok: done };
  };
  try {
    return await walk();
  } finally {
    // What no later step took (the run stopped before it) is stopped: a wait, a key scan, an agent.
    for (const handed of Object.values(handedOn)) if (handed instanceof LookAhead) await handed.discard();
  }
}

/** Awaits what a step left closing; a failure to close is a warning, the step's outcome stands. */
async function closeDeferred(
  app: AppContext,
  inputs: RunInputs,
  step: StepName,
  closings: Promise<void>[],
): Promise<void> {
  for (const closed of await Promise.allSettled(closings)) {
    if (closed.status === 'rejected')
      app.progress.emit({
        type: 'warning',
        message: inputs.secrets.redact(`${step} left something open: ${describeError(closed.reason)}`),
        step,
      });
  }
}

/**
 * Write-ahead: the step is `running` under our lease in the ledger before it
 * does anything. The holder judged gone is the one `seen` names; the write
 * re-reads the record and uses that judgement only for the same holder.
 */
async function arm(
  app: AppContext,
  seen: Workflow,
  name: StepName,
  holder: Holder,
  probe: HolderProbe,
): Promise<Workflow> {
  const id = seen.id;
  const judged = stepOf(seen, name).lease;
  const holderGone = judged ? await probe(judged) : undefined;
  return saveWorkflow(
    app,
    id,
    (w) => {
      const facts = holderFacts(judged, stepOf(w, name).lease, holderGone);
      return startStep(w, name, holder.lease(app.now()), app.now(), facts);
    },
    `${id}: ${name} running (${holder.id})`,
  );
}

/**
 * Heartbeats the step's lease. When a heartbeat is refused because the step is
 * no longer ours (another runner re-armed it after judging this one gone, or it
 * is not running any more), the returned signal aborts with a `lease-held`
 * error. A ledger that cannot be reached is only a warning: the lease stays
 * ours until someone else takes it.
 */
function keepStepAlive(
  app: AppContext,
  id: string,
  name: StepName,
  holder: Holder,
  inputs: RunInputs,
  everyMs: number | undefined,
) {
  const holderId = holder.id;
  const commits = leaseNeedsHeartbeats(holder.lease(app.now()));
  return keepLeaseAlive({
    ...(everyMs === undefined ? {} : { everyMs }),
    renew: async () => {
      if (commits)
        await saveOwnStep(app, id, name, (w) => heartbeat(w, name, holderId, app.now()), `${id}: ${name} heartbeat`);
      else checkOwnStep(requireWorkflow(await app.store.read(), id), name, holderId, app.now());
      return true;
    },
    lost: () => new ExocompError('lease-held', `lost the lease of step ${name} of ${id}`),
    onError: (error) =>
      app.progress.emit({
        type: 'warning',
        message: inputs.secrets.redact(`heartbeat failed: ${describeError(error)}`),
        step: name,
      }),
  });
}

/**
 * Saves a change that only the step's lease holder may make (heartbeat,
 * success, failure); a refusal because the step is no longer ours becomes the
 * `lease-held` error that tells this runner to stop.
 */
async function saveOwnStep(
  app: AppContext,
  id: string,
  name: StepName,
  change: (workflow: Workflow) => Workflow,
  message: string | ((next: Workflow) => string),
  also?: RecordsChange,
): Promise<Workflow> {
  let seen: Step | undefined;
  try {
    return await saveWorkflow(
      app,
      id,
      (w) => {
        seen = stepOf(w, name);
        return change(w);
      },
      message,
      also,
    );
  } catch (error) {
    if (error instanceof IllegalTransitionError && seen !== undefined) throw lostLease(id, name, seen, error);
    throw error;
  }
}

/** A CI holder commits no heartbeats: it only checks that the step is still its own (heartbeat() refuses otherwise). */
function checkOwnStep(workflow: Workflow, name: StepName, holderId: string, now: Date): void {
  try {
    heartbeat(workflow, name, holderId, now);
  } catch (error) {
    if (error instanceof IllegalTransitionError) throw lostLease(workflow.id, name, stepOf(workflow, name), error);
    throw error;
  }
}

function lostLease(id: string, name: StepName, seen: Step, cause: unknown): ExocompError {
  const holder = seen.state === 'running' ? (seen.lease?.holder ?? 'nobody') : `nobody (the step is ${seen.state})`;
  return new ExocompError(
    'lease-held',
    `lost the lease of step ${name} of ${id} to ${holder}: this runner stopped the step and records nothing`,
    {
      help: `another runner judged this one gone (no heartbeat reached the ledger for ${LEASE_TTL_MS / 1000} s, or its process or CI run looked ended) and took the step over; follow it with exocomp provision status ${id}`,
      cause,
    },
  );
}
