/**
 * What only the jobs that run tofu need, kept apart so the other actions'
 * bundles never load @actions/artifact or @actions/cache.
 */
import * as core from '@actions/core';
import { join, resolve } from 'node:path';
import type { Workflow } from '../../domain/workflow.js';
import type { AppContext } from '../../app/context.js';
import type { ActionName } from './inputs.js';
import { actionsArtifactStore, downloadSealedPlan, uploadSealedPlan } from './plan-artifact.js';
import { actionsCache, restoreProviderCache, type ProviderCache } from './provider-cache.js';
import type { Session } from './session.js';

export async function providerCacheFor(session: Session<ActionName>, app: AppContext, workflow: Pick<Workflow, 'workspace'>): Promise<ProviderCache | undefined> {
  const workspaceDir = resolve(app.cwd, workflow.workspace.path);
  return restoreProviderCache(actionsCache(), workspaceDir, join(session.run.runnerTemp, 'exocomp-tofu-plugins'), (message) => core.info(message));
}

/** The approved plan from the plan job of this run, when a seal key lets it travel. */
export async function approvedPlanFile(session: Session<ActionName>, workflow: Workflow, sealKey: string | undefined): Promise<string | undefined> {
  if (sealKey === undefined) {
    core.info('no seal key: the apply re-plans and compares the plan with the one approved');
    return undefined;
  }
  const file = await downloadSealedPlan(actionsArtifactStore(), sealKey, workflow.id, join(session.scratch, 'plan'));
  core.info(file ? 'applying the approved plan from the plan job (sealed artifact)' : 'no sealed plan artifact in this run: the apply re-plans and compares the plan with the one approved');
  return file;
}

/** Seals the saved plan and uploads it for the apply job; without a seal key it stays here (the apply re-plans). */
export async function shipPlan(session: Session<ActionName>, planFile: string, sealKey: string | undefined, workflowId: string): Promise<void> {
  if (sealKey === undefined) {
    core.info('no seal key: the plan file stays on this runner; the apply job re-plans and compares with the approved plan');
    return;
  }
  await uploadSealedPlan(actionsArtifactStore(), planFile, sealKey, workflowId, session.scratch);
  core.info('uploaded the sealed plan for the apply job');
}
