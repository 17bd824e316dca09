/**
 * A plan job, for every face that has one: plan and record the plan as the
 * one awaiting approval (continueWorkflow, scope `plan`), or — for a preview
 * (pull requests, forks included) — a plan that reads and writes no ledger
 * record and applies nothing.
 */
import { join } from 'node:path';
import { summarizePlan } from '../domain/plan.js';
import type { AppContext } from './context.js';
import { continueWorkflow, type ContinueRequest } from './continue-workflow.js';
import { formatPlanSummary, openTofu, planWorkspace } from './apply-workspace.js';
import type { RunInputs } from './run-inputs.js';

/** What a preview plans: the workspace as the job's inputs name it. */
export interface PreviewRequest {
  workspacePath: string;
  workspaceName: string;
  vars: Record<string, unknown> | undefined;
}

export type PlanJobOutcome =
  | { kind: 'previewed'; workspaceName: string; planSummary: string }
  /** The plan awaits approval (or there was nothing to plan): `planSummary` is the recorded one. */
  | { kind: 'planned'; planSummary: string | undefined };

export async function planJob(app: AppContext, request: Omit<ContinueRequest, 'scope' | 'gate' | 'toolCache'> & { preview?: PreviewRequest | undefined }): Promise<PlanJobOutcome> {
  const { preview, ...continuing } = request;
  if (preview === undefined) {
    const outcome = await continueWorkflow(app, { ...continuing, scope: 'plan' });
    return { kind: 'planned', planSummary: outcome.workflow.approval.planSummary };
  }
  const planFile = join(request.ci?.scratch ?? app.cwd, 'exocomp.tfplan');
  const planSummary = await previewPlan(app, { ...preview, inputs: request.inputs, planFile });
  return { kind: 'previewed', workspaceName: preview.workspaceName, planSummary };
}

/** The plan's summary (`+1 ~0 -2`); the saved plan goes to `planFile`. */
async function previewPlan(app: AppContext, request: { workspacePath: string; vars: Record<string, unknown> | undefined; inputs: RunInputs; planFile: string }): Promise<string> {
  const info = (message: string) => app.progress.emit({ type: 'info', message: request.inputs.secrets.redact(message) });
  const tofu = await openTofu(app, { workspacePath: request.workspacePath, tofuBinary: request.inputs.tofuBinary, secrets: request.inputs.secrets, info });
  const plan = await planWorkspace(tofu, request.vars, request.planFile);
  return formatPlanSummary(summarizePlan(plan.plan));
}
