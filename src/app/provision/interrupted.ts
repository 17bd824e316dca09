/**
 * Which workflows a CI job left interrupted (docs/architecture.md, "Leases"): provisioning, with
 * a step still `running` under a CI holder (a GitHub run, a GitLab job). The
 * probe judges the holder: gone (continue it), live, or unknown (never touched).
 * `sweepInterrupted` is the resume sweeper of every CI face: it starts the
 * continuations through the CI-platform port.
 */
import { continuationVerdict, MAX_CONTINUATIONS, type ContinuationVerdict } from '../../domain/continuation.js';
import { failStep, stepOf, type Lease, type StepName, type Workflow } from '../../domain/workflow.js';
import { listWorkflows, readWorkflow, RecordWrites } from '../../ledger/records.js';
import type { AppContext } from '../runtime/context.js';
import type { HolderProbe } from '../runtime/lease.js';
import { startContinuation } from '../approval/continuation.js';
import type { CiPlatform } from '../ports/ci-platform.js';

export interface HeldStep {
  workflow: Workflow;
  step: string;
  holder: 'gone' | 'live' | 'unknown';
  /** For a gone holder, when continuations are judged: whether to start one now. */
  verdict?: ContinuationVerdict;
}

/** What judges continuations: the grace a start with no run to judge is given, and the platform's word on a run. */
export interface ContinuationJudge {
  graceMs: number;
  runEnded?: ((runId: number) => Promise<boolean | undefined>) | undefined;
}

/**
 * Workflows approved whose chain never started (every step pending): the
 * continuation the approval started never ran — the dispatch failed, or its
 * run was cancelled while pending (a concurrency group keeps one pending run;
 * a newer one cancels it). Each is judged by continuationVerdict; the ones to
 * `wait` for are left out.
 */
export async function approvedButUnstarted(
  app: AppContext,
  judge: ContinuationJudge,
): Promise<Array<{ workflow: Workflow; verdict: Exclude<ContinuationVerdict, 'wait'> }>> {
  const { workflows } = listWorkflows(await app.store.read());
  const unstarted = workflows.filter(
    (w) =>
      w.approval.required &&
      w.approval.state === 'approved' &&
      (w.state === 'created' || w.state === 'awaiting-approval') &&
      w.steps.every((s) => s.state === 'pending') &&
      w.approval.at !== undefined,
  );
  const judged: Array<{ workflow: Workflow; verdict: Exclude<ContinuationVerdict, 'wait'> }> = [];
  for (const workflow of unstarted) {
    const verdict = await judgeContinuation(app, workflow, workflow.approval.at!, judge.graceMs, judge);
    if (verdict !== 'wait') judged.push({ workflow, verdict });
  }
  return judged;
}

/**
 * Steps held by holders of `origin` (`ci`: GitHub runs, `gitlab`: GitLab jobs),
 * judged by `probe`. With `judge`, a gone holder's step also gets the verdict
 * on its continuation (one started after the step was armed may be running).
 */
export async function stepsHeldByCi(
  app: AppContext,
  origin: Exclude<Lease['origin']['kind'], 'local'>,
  probe: HolderProbe,
  judge?: ContinuationJudge,
): Promise<HeldStep[]> {
  const { workflows } = listWorkflows(await app.store.read());
  const held: HeldStep[] = [];
  for (const workflow of workflows.filter((w) => w.state === 'provisioning')) {
    const step = workflow.steps.find((s) => s.state === 'running' && s.lease?.origin.kind === origin);
    if (!step?.lease) continue;
    const gone = await probe(step.lease);
    const holder = gone === true ? 'gone' : gone === false ? 'live' : 'unknown';
    const verdict =
      holder === 'gone' && judge
        ? { verdict: await judgeContinuation(app, workflow, step.lease.acquiredAt, 0, judge) }
        : {};
    held.push({ workflow, step: step.name, holder, ...verdict });
  }
  return held;
}

/** The verdict on `workflow`'s continuation; the platform is asked about its run only when one was recorded since the chain moved. */
async function judgeContinuation(
  app: AppContext,
  workflow: Workflow,
  movedAt: string,
  firstAfterMs: number,
  judge: ContinuationJudge,
): Promise<ContinuationVerdict> {
  const recorded = workflow.continuation;
  const current = recorded !== undefined && Date.parse(recorded.at) >= Date.parse(movedAt) ? recorded : undefined;
  const runEnded = current?.runId !== undefined && judge.runEnded ? await judge.runEnded(current.runId) : undefined;
  return continuationVerdict({
    continuation: recorded,
    movedAt,
    runEnded,
    now: app.now(),
    graceMs: judge.graceMs,
    firstAfterMs,
  });
}

/**
 * Records a step its CI job left `running` under its own lease because the
 * job's process was killed before it could record anything (a runner that
 * killed it outright, a lost process): failed as `interrupted`, with `reason`
 * as its failure context and its lease released, so a re-run or
 * `provision resume` continues from it at once. Returns undefined, writing
 * nothing, when `holder` no longer holds the step (the step was recorded, or
 * another runner took it over).
 */
export async function recordAbandonedStep(
  app: AppContext,
  workflowId: string,
  step: StepName,
  holder: string,
  reason: string,
): Promise<Workflow | undefined> {
  return app.store.update((snapshot) => {
    const workflow = readWorkflow(snapshot, workflowId);
    const current = workflow === undefined ? undefined : stepOf(workflow, step);
    if (!workflow || current?.state !== 'running' || current.lease?.holder !== holder) {
      return { writes: new Map(), message: '', result: undefined };
    }
    const next = failStep(workflow, step, holder, app.now(), {
      kind: 'interrupted',
      summary: `${step} interrupted: ${reason}`,
    });
    return {
      writes: new RecordWrites().workflow(next),
      message: `${workflowId}: ${step} failed (interrupted)`,
      result: next,
    };
  });
}

export interface SweepEntry {
  id: string;
  step: string;
  /**
   * `live`/`unknown`: the step's holder may still run it, so it is left alone; `continuing`: the continuation
   * started before is queued or running; `gave-up`: MAX_CONTINUATIONS ended without moving the chain;
   * `no-target`: nothing records where to continue it.
   */
  action: 'dispatched' | 'would-dispatch' | 'continuing' | 'live' | 'unknown' | 'no-target' | 'gave-up';
  /** Where the continuation runs (a workflow file, a pipeline) and on which ref. */
  target?: string;
  ref?: string;
  /** The continuation's run: started now, or the one still queued or running. */
  runUrl?: string;
  /** What a person should look at. */
  warning?: string;
}

export interface SweepOptions {
  /** The workflow file continuations run; default: the one that started each chain. */
  continueWith?: string | undefined;
  /** Say what would be started, start nothing. */
  dryRun?: boolean;
  /**
   * Also continue workflows approved whose chain never started (a dispatch-mode approval whose continuation
   * never ran); omitted: not looked for. Also the age rule: a continuation whose run cannot be judged is
   * started again this long after the last one.
   */
  unstartedAfterMs?: number | undefined;
}

type SweepPlatform = Pick<
  CiPlatform,
  'holder' | 'probeHolder' | 'continuationTarget' | 'dispatchContinuation' | 'continuationRunEnded' | 'log'
>;

/**
 * The resume sweeper: continues every workflow whose step a CI job of this
 * platform held and left (its holder gone), and with `unstartedAfterMs` every
 * approved workflow whose chain never started — unless the continuation
 * started before is still queued or running (src/domain/continuation.ts).
 * A step whose holder is live, or cannot be judged, is never touched.
 */
export async function sweepInterrupted(
  app: AppContext,
  platform: SweepPlatform,
  options: SweepOptions = {},
): Promise<SweepEntry[]> {
  const entries: SweepEntry[] = [];
  const judge =
    options.unstartedAfterMs === undefined
      ? undefined
      : { graceMs: options.unstartedAfterMs, runEnded: platform.continuationRunEnded };
  const unstarted = judge === undefined ? [] : await approvedButUnstarted(app, judge);
  for (const { workflow, verdict } of unstarted)
    entries.push(await continueIn(app, platform, workflow, 'apply', verdict, options));
  // Steps held by jobs of this platform: their leases carry the origin our own holder's carry.
  const origin = platform.holder().lease(app.now()).origin.kind;
  if (origin === 'local') return entries;
  for (const held of await stepsHeldByCi(app, origin, platform.probeHolder, judge)) {
    const verdict = held.verdict ?? 'start';
    if (held.holder !== 'gone') entries.push({ id: held.workflow.id, step: held.step, action: held.holder });
    else if (verdict !== 'wait')
      entries.push(await continueIn(app, platform, held.workflow, held.step, verdict, options));
  }
  return entries;
}

async function continueIn(
  app: AppContext,
  platform: SweepPlatform,
  workflow: Workflow,
  step: string,
  verdict: Exclude<ContinuationVerdict, 'wait'>,
  options: SweepOptions,
): Promise<SweepEntry> {
  const last = workflow.continuation?.runUrl ? { runUrl: workflow.continuation.runUrl } : {};
  if (verdict === 'continuing') return { id: workflow.id, step, action: 'continuing', ...last };
  if (verdict === 'gave-up') {
    const warning =
      `${workflow.id}: ${MAX_CONTINUATIONS} continuations ended without moving its chain${last.runUrl ? ` (the last: ${last.runUrl})` : ''}; no more are started — ` +
      `find out why from that run, fix it, then re-run it or run \`exocomp provision resume ${workflow.id}\``;
    return { id: workflow.id, step, action: 'gave-up', ...last, warning };
  }
  const next = platform.continuationTarget(workflow, options.continueWith);
  if (!next)
    return {
      id: workflow.id,
      step,
      action: 'no-target',
      warning: `${workflow.id} was interrupted but records no workflow to dispatch; set continue-workflow`,
    };
  if (options.dryRun) return { id: workflow.id, step, action: 'would-dispatch', ...next };
  const started = await startContinuation(app, platform, workflow, options.continueWith);
  return {
    id: workflow.id,
    step,
    action: 'dispatched',
    target: started.target,
    ref: started.ref,
    ...(started.run ? { runUrl: started.run.url } : {}),
  };
}
