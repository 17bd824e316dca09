/**
 * What only the jobs that run tofu need, kept apart so the other actions'
 * bundles never load @actions/artifact or @actions/cache.
 */
import * as core from '@actions/core';
import { join, resolve } from 'node:path';
import { ExocompError } from '../../domain/errors.js';
import { recordPlanRun, stepOf, type Workflow } from '../../domain/workflow.js';
import type { AppContext } from '../../app/context.js';
import type { RunInputs } from '../../app/run-inputs.js';
import { saveWorkflow } from '../../app/workflows.js';
import { chainFailure, runChainHere } from './chain-actions.js';
import type { ActionName } from './inputs.js';
import { actionsArtifactStore, downloadSealedPlan, planArtifactName, uploadSealedPlan } from './plan-artifact.js';
import { actionsCache, restoreProviderCache, type ProviderCache } from './provider-cache.js';
import type { Session } from './session.js';

export async function providerCacheFor(session: Session<ActionName>, app: AppContext, workflow: Pick<Workflow, 'workspace'>): Promise<ProviderCache | undefined> {
  const workspaceDir = resolve(app.cwd, workflow.workspace.path);
  return restoreProviderCache(actionsCache(), workspaceDir, join(session.run.runnerTemp, 'exocomp-tofu-plugins'), (message) => core.info(message));
}

/**
 * The approved plan to apply, unsealed from the artifact of the run that made
 * it (this run, or the run a dispatched continuation follows); undefined when
 * the apply re-plans and compares with the approved fingerprint instead: no
 * seal key, or no sealed plan was shipped. With a seal key, a shipped plan
 * that cannot be found is a refusal, never a silent re-plan.
 */
export async function approvedPlanFile(session: Session<ActionName>, workflow: Workflow, sealKey: string | undefined, token: string): Promise<string | undefined> {
  const { planFingerprint, planRunId } = workflow.approval;
  // Nothing approved to bring, or applied already (a resume): the chain skips the apply.
  if (planFingerprint === undefined || stepOf(workflow, 'apply').state === 'succeeded') return undefined;
  if (planRunId === undefined) {
    core.info('the plan job shipped no sealed plan (it had no seal key): the apply re-plans and compares the plan with the one approved');
    return undefined;
  }
  if (sealKey === undefined) {
    core.info('no seal key: the apply re-plans and compares the plan with the one approved');
    return undefined;
  }
  const from = planRunId === session.run.runId ? undefined : { runId: planRunId, repository: session.run.repository, token };
  const file = await downloadSealedPlan(actionsArtifactStore(from), sealKey, workflow.id, join(session.scratch, 'plan'));
  if (file === undefined) {
    throw new ExocompError('approval', `approved plan artifact not found: run ${planRunId} holds no ${planArtifactName(workflow.id)} (artifacts expire after 7 days)`, {
      help: 'nothing was applied; start a new workflow so a fresh plan is reviewed',
    });
  }
  core.info(`applying the approved plan from the plan job (sealed artifact) of run ${planRunId}`);
  return file;
}

/**
 * Seals the saved plan, uploads it as an artifact of this run and records the
 * run in the workflow, for the apply (a later job, or the continuation a
 * dispatch starts in another run). Without a seal key the plan stays here and
 * the apply re-plans and compares with the approved plan.
 */
export async function shipPlan(session: Session<ActionName>, app: AppContext, planFile: string, sealKey: string | undefined, workflowId: string): Promise<Workflow | undefined> {
  if (sealKey === undefined) {
    core.info('no seal key: the plan file stays on this runner; the apply job re-plans and compares with the approved plan');
    return undefined;
  }
  await uploadSealedPlan(actionsArtifactStore(), planFile, sealKey, workflowId, session.scratch);
  const runId = session.run.runId;
  const workflow = await saveWorkflow(app, workflowId, (w) => recordPlanRun(w, runId, app.now()), `${workflowId}: sealed plan in run ${runId}`);
  core.info(`uploaded the sealed plan for the apply job (an artifact of run ${runId})`);
  return workflow;
}

/**
 * Runs the chain (or only its apply step) from an approved workflow: the sealed
 * approved plan when one travelled, the provider cache around it, and the
 * status published whatever happens. Throws the step's failure after publishing.
 */
export async function runApprovedChain(
  session: Session<ActionName>,
  app: AppContext,
  workflow: Workflow,
  inputs: RunInputs,
  options: { token: string; publish(workflow: Workflow): Promise<unknown>; only?: 'apply' },
): Promise<void> {
  let savedPlan: string | undefined;
  try {
    savedPlan = await approvedPlanFile(session, workflow, inputs.sealKey, options.token);
  } catch (error) {
    await options.publish(workflow);
    throw error;
  }
  const cache = await providerCacheFor(session, app, workflow);
  const result = await runChainHere(session, app, workflow.id, savedPlan ? { ...inputs, savedPlanFile: savedPlan } : inputs, {
    ...(options.only ? { only: options.only } : {}),
    ...(cache ? { env: { TF_PLUGIN_CACHE_DIR: cache.dir } } : {}),
  });
  await cache?.save();
  await options.publish(result.workflow);
  const failure = chainFailure(result);
  if (failure) throw failure;
}
