/**
 * Approval decisions in the ledger: recording one, listing the workflows that
 * wait for one, waiting for one, and the dispatch-mode decision (someone
 * other than the requester, with write access, decides in a run of its own
 * and that run starts the continuation).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { ExocompError } from '../../domain/errors.js';
import { decideApproval, type Workflow } from '../../domain/workflow.js';
import { listWorkflows, requireWorkflow } from '../../ledger/records.js';
import type { AppContext } from '../runtime/context.js';
import { judgeSelfApproval, requireRightToDecide } from './gates/approver.js';
import { startContinuation } from './continuation.js';
import type { CiPlatform, StartedContinuation } from '../ports/ci-platform.js';
import { saveWorkflow } from '../provision/workflows.js';

export interface Decision {
  approve: boolean;
  by: string;
  /** Where it was decided (`cli`, `environment production (run 42)`, …). */
  via: string;
  comment?: string;
}

export async function decide(app: AppContext, workflowId: string, decision: Decision): Promise<Workflow> {
  return saveWorkflow(
    app,
    workflowId,
    (w) => decideApproval(w, { ...decision, now: app.now() }),
    `${workflowId}: ${decision.approve ? 'approved' : 'rejected'} by ${decision.by} via ${decision.via}`,
  );
}

/** Workflows waiting for a decision. */
export async function pendingApprovals(app: AppContext): Promise<Workflow[]> {
  const { workflows } = listWorkflows(await app.store.read());
  return workflows.filter((w) => w.state === 'awaiting-approval');
}

/** Blocks until the workflow's approval is decided (polling the ledger), bounded by timeoutMs. */
export async function waitForDecision(
  app: AppContext,
  workflowId: string,
  options: { pollMs?: number; timeoutMs?: number } = {},
): Promise<Workflow> {
  const pollMs = options.pollMs ?? 1000;
  const deadline = options.timeoutMs === undefined ? Infinity : app.now().getTime() + options.timeoutMs;
  for (;;) {
    const workflow = requireWorkflow(await app.store.read(), workflowId);
    if (workflow.approval.state === 'approved' || workflow.approval.state === 'rejected') return workflow;
    if (app.now().getTime() >= deadline) {
      throw new ExocompError('approval', `no decision on ${workflowId} within the wait`, {
        help: `decide with: exocomp approval decide ${workflowId} --approve|--reject`,
      });
    }
    await sleep(pollMs);
  }
}

export interface DispatchDecision {
  workflowId: string;
  approve: boolean;
  reason: string | undefined;
  allowSelfApproval: boolean;
  /** The pipeline/workflow file to start; default: the one that started the chain. */
  continueWith: string | undefined;
}

export interface DispatchOutcome {
  workflow: Workflow;
  dispatched: StartedContinuation | undefined;
}

/**
 * Dispatch mode's decision, made in a run of its own: the actor needs the
 * right to decide and is not the requester (unless self-approval is allowed);
 * the decision is recorded, and an approval starts the continuation.
 */
export async function decideByDispatch(
  app: AppContext,
  platform: CiPlatform,
  request: DispatchDecision,
): Promise<DispatchOutcome> {
  const actor = platform.run.actor;
  await requireRightToDecide(platform, actor, {
    kind: 'permission',
    because: 'deciding an approval needs write access or above',
    help: 'ask someone with write access to run the approve workflow',
  });
  const current = requireWorkflow(await app.store.read(), request.workflowId);
  judgeSelfApproval(app, actor, current, request.allowSelfApproval ? 'allow' : 'refuse', {
    refused: `${actor} requested workflow ${current.id} and may not decide it (self-review is refused)`,
    help: 'another person with write access decides; set `allow-self-approval: true` only where one person runs everything',
  });
  const workflow = await decide(app, request.workflowId, {
    approve: request.approve,
    by: actor,
    via: platform.run.decisionVia,
    ...(request.reason ? { comment: request.reason } : {}),
  });
  if (!request.approve) return { workflow, dispatched: undefined };
  return { workflow, dispatched: await startContinuation(app, platform, workflow, request.continueWith) };
}
