/** A plan that records nothing and applies nothing (pull-request previews, forks included). */
import { summarizePlan } from '../domain/plan.js';
import type { AppContext } from './context.js';
import { formatPlanSummary, openTofu, planWorkspace } from './apply-workspace.js';
import type { RunInputs } from './run-inputs.js';

/** The plan's summary (`+1 ~0 -2`); the saved plan goes to `planFile`. */
export async function previewPlan(
  app: AppContext,
  request: { workspacePath: string; vars: Record<string, unknown> | undefined; inputs: RunInputs; planFile: string },
): Promise<string> {
  const info = (message: string) => app.progress.emit({ type: 'info', message: request.inputs.secrets.redact(message) });
  const tofu = await openTofu(app, { workspacePath: request.workspacePath, tofuBinary: request.inputs.tofuBinary, secrets: request.inputs.secrets, info });
  const plan = await planWorkspace(tofu, request.vars, request.planFile);
  return formatPlanSummary(summarizePlan(plan.plan));
}
