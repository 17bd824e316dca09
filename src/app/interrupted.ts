/**
 * Which workflows a CI job left interrupted (docs/architecture.md, "Leases"): provisioning, with
 * a step still `running` under a CI holder (a GitHub run, a GitLab job). The
 * probe judges the holder: gone (continue it), live, or unknown (never touched).
 * The faces' sweepers start the continuations their own way.
 */
import { failStep, stepOf, type Lease, type StepName, type Workflow } from '../domain/workflow.js';
import { listWorkflows, readWorkflow, RecordWrites } from '../ledger/records.js';
import type { AppContext } from './context.js';
import type { HolderProbe } from './lease.js';

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
