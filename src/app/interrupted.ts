/**
 * Which workflows a CI job left interrupted (docs/architecture.md, "Leases"): provisioning, with
 * a step still `running` under a CI holder (a GitHub run, a GitLab job). The
 * probe judges the holder: gone (continue it), live, or unknown (never touched).
 * `sweepInterrupted` is the resume sweeper of every CI face: it starts the
 * continuations through the CI-platform port.
 */
import { failStep, stepOf, type Lease, type StepName, type Workflow } from '../domain/workflow.js';
import { listWorkflows, readWorkflow, RecordWrites } from '../ledger/records.js';
import type { AppContext } from './context.js';
import type { HolderProbe } from './lease.js';
import type { CiPlatform } from './ports/ci-platform.js';

export interface HeldStep {
  workflow: Workflow;
  step: string;
  holder: 'gone' | 'live' | 'unknown';
}

/**
 * Workflows approved at least `graceMs` ago whose chain never started (every
 * step pending): the continuation a dispatch-mode approval started never ran —
 * the dispatch failed, or its run was cancelled while pending (a concurrency
 * group keeps one pending run; a newer one cancels it).
 */
export async function approvedButUnstarted(app: AppContext, graceMs: number): Promise<Workflow[]> {
  const { workflows } = listWorkflows(await app.store.read());
  const now = app.now().getTime();
  return workflows.filter(
    (w) =>
      w.approval.required &&
      w.approval.state === 'approved' &&
      (w.state === 'created' || w.state === 'awaiting-approval') &&
      w.steps.every((s) => s.state === 'pending') &&
      w.approval.at !== undefined &&
      now - Date.parse(w.approval.at) >= graceMs,
  );
}

/** Steps held by holders of `origin` (`ci`: GitHub runs, `gitlab`: GitLab jobs), judged by `probe`. */
export async function stepsHeldByCi(app: AppContext, origin: Exclude<Lease['origin']['kind'], 'local'>, probe: HolderProbe): Promise<HeldStep[]> {
  const { workflows } = listWorkflows(await app.store.read());
  const held: HeldStep[] = [];
  for (const workflow of workflows.filter((w) => w.state === 'provisioning')) {
    const step = workflow.steps.find((s) => s.state === 'running' && s.lease?.origin.kind === origin);
    if (!step?.lease) continue;
    const gone = await probe(step.lease);
    held.push({ workflow, step: step.name, holder: gone === true ? 'gone' : gone === false ? 'live' : 'unknown' });
  }
  return held;
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
export async function recordAbandonedStep(app: AppContext, workflowId: string, step: StepName, holder: string, reason: string): Promise<Workflow | undefined> {
  return app.store.update((snapshot) => {
    const workflow = readWorkflow(snapshot, workflowId);
    const current = workflow === undefined ? undefined : stepOf(workflow, step);
    if (!workflow || current?.state !== 'running' || current.lease?.holder !== holder) {
      return { writes: new Map(), message: '', result: undefined };
    }
    const next = failStep(workflow, step, holder, app.now(), { kind: 'interrupted', summary: `${step} interrupted: ${reason}` });
    return { writes: new RecordWrites().workflow(next), message: `${workflowId}: ${step} failed (interrupted)`, result: next };
  });
}

export interface SweepEntry {
  id: string;
  step: string;
  /** `live`/`unknown`: the step's holder may still run it, so it is left alone; `no-target`: nothing records where to continue it. */
  action: 'dispatched' | 'would-dispatch' | 'live' | 'unknown' | 'no-target';
  /** Where the continuation runs (a workflow file, a pipeline) and on which ref. */
  target?: string;
  ref?: string;
}

export interface SweepOptions {
  /** The workflow file continuations run; default: the one that started each chain. */
  continueWith?: string | undefined;
  /** Say what would be started, start nothing. */
  dryRun?: boolean;
  /**
   * Also continue workflows approved this long ago whose chain never started
   * (a dispatch-mode approval whose continuation never ran); omitted: not looked for.
   */
  unstartedAfterMs?: number | undefined;
}

/**
 * The resume sweeper: continues every workflow whose step a CI job of this
 * platform held and left (its holder gone), and with `unstartedAfterMs` every
 * approved workflow whose chain never started. A step whose holder is live, or
 * cannot be judged, is never touched.
 */
export async function sweepInterrupted(
  app: AppContext,
  platform: Pick<CiPlatform, 'holder' | 'probeHolder' | 'continuationTarget' | 'dispatchContinuation'>,
  options: SweepOptions = {},
): Promise<SweepEntry[]> {
  const entries: SweepEntry[] = [];
  const unstarted = options.unstartedAfterMs === undefined ? [] : await approvedButUnstarted(app, options.unstartedAfterMs);
  for (const workflow of unstarted) entries.push(await continueIn(platform, workflow, 'apply', options));
  // Steps held by jobs of this platform: their leases carry the origin our own holder's carry.
  const origin = platform.holder().lease(app.now()).origin.kind;
  if (origin === 'local') return entries;
  for (const held of await stepsHeldByCi(app, origin, platform.probeHolder)) {
    if (held.holder !== 'gone') entries.push({ id: held.workflow.id, step: held.step, action: held.holder });
    else entries.push(await continueIn(platform, held.workflow, held.step, options));
  }
  return entries;
}

async function continueIn(platform: Pick<CiPlatform, 'continuationTarget' | 'dispatchContinuation'>, workflow: Workflow, step: string, options: SweepOptions): Promise<SweepEntry> {
  const next = platform.continuationTarget(workflow, options.continueWith);
  if (!next) return { id: workflow.id, step, action: 'no-target' };
  if (options.dryRun) return { id: workflow.id, step, action: 'would-dispatch', ...next };
  return { id: workflow.id, step, action: 'dispatched', ...(await platform.dispatchContinuation(workflow, options.continueWith)) };
}
