/**
 * Step 1: plan (or take the saved plan carried from the plan job), check it is
 * the approved plan, apply it, capture tf:<name>, seal sensitive outputs (the
 * capture is recorded with the step's success).
 */
import { ExocompError } from '../../../domain/errors.js';
import type { HandedOn, StepContext, StepResult } from './step.js';
import type { ResolvedInventory } from '../../../domain/standing-inventory.js';
import { lookAheadToSshWait } from './ssh-wait.js';
import { hasBastions } from '../../hosts/jump.js';
import { asTheRunReachesIt } from '../../hosts/inventories.js';
import { runReach } from '../../plays/run-inputs.js';
import { applyWorkspace } from '../apply-workspace.js';
import { checkApprovedConfiguration } from '../../approval/config-preview.js';
import { RecordWrites, type RecordsChange } from '../../../ledger/records.js';
import { applyMaterials, provenanceOfApply } from '../provenance.js';

export async function applyStep({
  app,
  workflow,
  inputs,
  info,
  warn,
  signal,
  nextRunsHere,
}: StepContext): Promise<StepResult> {
  if (inputs.savedPlanFile !== undefined && workflow.approval.planFingerprint === undefined) {
    throw new ExocompError(
      'approval',
      `workflow ${workflow.id} recorded no approved plan to compare the saved plan with`,
      {
        help: 'nothing was applied; run the plan job for this workflow first',
      },
    );
  }
  // The approval binds the configuration preview too: a changed playbook (or host) voids it.
  if (workflow.approval.state === 'approved') await checkApprovedConfiguration(app, workflow, inputs, { info, signal });
  // What the apply is made from is digested before it runs: its provenance names these, not what is there afterwards.
  const materials = await applyMaterials(app, workflow);
  const outcome = await applyWorkspace(app, {
    workspacePath: workflow.workspace.path,
    name: workflow.workspace.name,
    ...(workflow.options.vars ? { vars: workflow.options.vars } : {}),
    ...(inputs.tofuBinary ? { tofuBinary: inputs.tofuBinary } : {}),
    ...(inputs.sealKey ? { sealKey: inputs.sealKey } : {}),
    ...(workflow.approval.planFingerprint ? { approvedFingerprint: workflow.approval.planFingerprint } : {}),
    ...(inputs.savedPlanFile ? { savedPlanFile: inputs.savedPlanFile } : {}),
    planned: inputs.plannedApply,
    ...(inputs.allowLocalState ? { allowLocalState: true } : {}),
    ...(workflow.trigger.runUrl ? { runUrl: workflow.trigger.runUrl } : {}),
    workflowId: workflow.id,
    guard: { allowDestroy: inputs.allowDestroy ?? false, protect: inputs.protect ?? [] },
    secrets: inputs.secrets,
    info,
    warn,
    signal,
    // The capture is written with the step's success: one commit, and none at all for a runner that lost the step.
    deferCapture: true,
    identifyState: true,
  });
  // host-keys known: a host without a known key is refused here, at capture, before the wait contacts it.
  const resolved = outcome.inventory === undefined ? undefined : resolvedOrUndefined(outcome.inventory);
  const captured = resolved === undefined ? undefined : asTheRunReachesIt(resolved, runReach(inputs, workflow));
  const provenance = await provenanceOfApply(
    app,
    workflow,
    { planDigest: outcome.planDigest, state: outcome.state, materials },
    inputs.attestation,
    { info, warn },
  );
  const capture = outcome.capture;
  // The statement is written with the step's success (and the capture): one commit, as before.
  const records: RecordsChange = (snapshot) => {
    const change = capture?.(snapshot) ?? { writes: new RecordWrites(), message: `tf:${workflow.workspace.name}` };
    change.writes.provenance(provenance);
    return { ...change, message: `${change.message}; provenance of the apply` };
  };
  return {
    detail: outcome.eventLine,
    records,
    ...(outcome.inventory ? { handOn: handOn(outcome.inventory, captured) } : {}),
  };

  function resolvedOrUndefined(inventory: () => ResolvedInventory): ResolvedInventory | undefined {
    try {
      return inventory();
    } catch {
      // An inventory that does not resolve fails ssh-wait, which resolves it again.
      return undefined;
    }
  }

  /** The capture, and the wait for its hosts' banners started now, while the success is written (ssh-wait takes both). */
  function handOn(inventory: () => ResolvedInventory, resolved: ResolvedInventory | undefined): HandedOn {
    if (!nextRunsHere || resolved === undefined) return { inventory };
    // Behind a bastion the wait pins the bastion first: ssh-wait does it, with the run's keys (app/hosts/jump.ts).
    if (hasBastions(resolved.hosts)) return { inventory };
    return {
      inventory,
      sshWait: lookAheadToSshWait(resolved, workflow.options.sshWaitMs, { scanKeys: true, interrupt: app.interrupt }),
    };
  }
}
