/** Planning for approval with the saved plan kept (so it can travel to the apply job sealed), and plan-only previews. */
import { summarizePlan } from '../../domain/plan.js';
import type { Workflow } from '../../domain/workflow.js';
import type { AppContext } from '../../app/context.js';
import { formatPlanSummary, openTofu, planWorkspace } from '../../app/apply-workspace.js';
import { planForApproval } from '../../app/provision.js';
import type { RunInputs } from '../../app/run-inputs.js';

/** Plans into `planFile` (kept, to travel sealed to the apply job) and records `awaiting-approval`. */
export function planAndRecord(app: AppContext, workflowId: string, inputs: RunInputs, planFile: string): Promise<Workflow> {
  return planForApproval(app, workflowId, inputs, planFile);
}

/** Plans without any ledger (plan-only previews, e.g. for pull requests from forks). */
export async function previewPlan(app: AppContext, request: { workspacePath: string; vars: Record<string, unknown> | undefined; inputs: RunInputs; planFile: string }): Promise<string> {
  const info = (message: string) => app.progress.emit({ type: 'info', message: request.inputs.secrets.redact(message) });
  const tofu = await openTofu(app, { workspacePath: request.workspacePath, tofuBinary: request.inputs.tofuBinary, secrets: request.inputs.secrets, info });
  const plan = await planWorkspace(tofu, request.vars, request.planFile);
  return formatPlanSummary(summarizePlan(plan.plan));
}
