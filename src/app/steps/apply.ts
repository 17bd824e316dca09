/** Step 1: plan, check the approved plan, apply it, capture tf:<name>, seal sensitive outputs. */
import type { StepContext } from '../chain.js';
import { applyWorkspace } from '../apply-workspace.js';

export async function applyStep({ app, workflow, inputs, info, warn, signal }: StepContext): Promise<string> {
  const outcome = await applyWorkspace(app, {
    workspacePath: workflow.workspace.path,
    name: workflow.workspace.name,
    ...(workflow.options.vars ? { vars: workflow.options.vars } : {}),
    ...(inputs.tofuBinary ? { tofuBinary: inputs.tofuBinary } : {}),
    ...(inputs.sealKey ? { sealKey: inputs.sealKey } : {}),
    ...(workflow.approval.planFingerprint ? { approvedFingerprint: workflow.approval.planFingerprint } : {}),
    ...(workflow.trigger.runUrl ? { runUrl: workflow.trigger.runUrl } : {}),
    workflowId: workflow.id,
    secrets: inputs.secrets,
    info,
    warn,
    signal,
  });
  return outcome.eventLine;
}
