/**
 * Planning for approval with the saved plan kept (so it can travel to the
 * apply job sealed), and the chain whose apply step applies that saved plan.
 */
import { ExocompError } from '../../domain/errors.js';
import { summarizePlan } from '../../domain/plan.js';
import { awaitApproval, type Workflow } from '../../domain/workflow.js';
import { requireWorkflow } from '../../ledger/records.js';
import type { AppContext } from '../../app/context.js';
import { applyWorkspace, formatPlanSummary, openTofu } from '../../app/apply-workspace.js';
import { CHAIN, type StepAction } from '../../app/chain.js';
import type { RunInputs } from '../../app/run-inputs.js';
import { saveWorkflow } from '../../app/workflows.js';

/** Plans into `planFile` and records `awaiting-approval` with the plan's fingerprint and summary. */
export async function planAndRecord(app: AppContext, workflowId: string, inputs: RunInputs, planFile: string): Promise<Workflow> {
  const workflow = requireWorkflow(await app.store.read(), workflowId);
  const info = (message: string) => app.progress.emit({ type: 'info', message: inputs.secrets.redact(message), step: 'apply' });
  const tofu = await openTofu(app, { workspacePath: workflow.workspace.path, tofuBinary: inputs.tofuBinary, secrets: inputs.secrets, info });
  if (workflow.options.vars && Object.keys(workflow.options.vars).length > 0) await tofu.writeVars(workflow.options.vars);
  await tofu.init();
  await tofu.validate();
  const plan = await tofu.plan(planFile);
  const summary = formatPlanSummary(summarizePlan(plan.plan));
  return saveWorkflow(app, workflowId, (w) => awaitApproval(w, app.now(), { fingerprint: plan.fingerprint, summary }), `${workflowId}: awaiting approval (plan ${summary})`);
}

/** Plans without any ledger (plan-only previews, e.g. for pull requests from forks). */
export async function previewPlan(app: AppContext, request: { workspacePath: string; vars: Record<string, unknown> | undefined; inputs: RunInputs; planFile: string }): Promise<string> {
  const info = (message: string) => app.progress.emit({ type: 'info', message: request.inputs.secrets.redact(message) });
  const tofu = await openTofu(app, { workspacePath: request.workspacePath, tofuBinary: request.inputs.tofuBinary, secrets: request.inputs.secrets, info });
  if (request.vars && Object.keys(request.vars).length > 0) await tofu.writeVars(request.vars);
  await tofu.init();
  await tofu.validate();
  const plan = await tofu.plan(request.planFile);
  return formatPlanSummary(summarizePlan(plan.plan));
}

/** The chain with an apply step that applies exactly `savedPlanFile`, checked against the approved fingerprint. */
export function chainApplyingSavedPlan(savedPlanFile: string): typeof CHAIN {
  const apply: StepAction = async ({ app, workflow, inputs, info, warn }) => {
    if (workflow.approval.planFingerprint === undefined) {
      throw new ExocompError('approval', `workflow ${workflow.id} recorded no approved plan to compare the saved plan with`, {
        help: 'nothing was applied; run the plan job for this workflow first',
      });
    }
    const outcome = await applyWorkspace(app, {
      workspacePath: workflow.workspace.path,
      name: workflow.workspace.name,
      ...(workflow.options.vars ? { vars: workflow.options.vars } : {}),
      ...(inputs.tofuBinary ? { tofuBinary: inputs.tofuBinary } : {}),
      ...(inputs.sealKey ? { sealKey: inputs.sealKey } : {}),
      approvedFingerprint: workflow.approval.planFingerprint,
      savedPlanFile,
      ...(workflow.trigger.runUrl ? { runUrl: workflow.trigger.runUrl } : {}),
      workflowId: workflow.id,
      secrets: inputs.secrets,
      info,
      warn,
    });
    return outcome.eventLine;
  };
  return CHAIN.map((step) => (step.name === 'apply' ? { name: 'apply', run: apply } : step));
}
