/**
 * The chain's flows on a runner, shared by the root action and the per-step
 * actions: start or find the workflow, pass its approval gate, run steps.
 */
import * as core from '@actions/core';
import { ExocompError, UsageError } from '../../domain/errors.js';
import { defaultWorkspaceName, parseWorkspaceName } from '../../domain/names.js';
import type { StepName, Workflow } from '../../domain/workflow.js';
import { readWorkflow } from '../../ledger/records.js';
import type { AppContext } from '../../app/context.js';
import { parseMapping } from '../../app/mappings.js';
import { runChain, type ChainResult } from '../../app/chain.js';
import { createProvision } from '../../app/provision.js';
import type { RunInputs } from '../../app/run-inputs.js';
import { recordEnvironmentApproval, requireEnvironmentApproval } from './approval.js';
import { ciHolder, ciHolderProbe } from './holder.js';
import type { ActionName } from './inputs.js';
import { githubTrigger, type RunContext } from './run-context.js';
import { githubRunInputs, openLedger, publishWorkflow, type RunInputSettings, type Session } from './session.js';

/** Stable across re-runs of the same run, so a re-run finds and resumes its workflow. */
export function defaultWorkflowId(workspaceName: string, run: RunContext): string {
  return `${workspaceName}-${run.runId}`;
}

export interface NewWorkflowSettings {
  workspace: string;
  playbook: string | undefined;
  'workspace-name': string | undefined;
  'ssh-wait': number;
  'onboard-playbook': string | undefined;
  'onboard-user': string;
  vars: string | undefined;
}

export function workspaceNameOf(settings: NewWorkflowSettings): string {
  return settings['workspace-name'] === undefined ? defaultWorkspaceName(settings.workspace) : parseWorkspaceName(settings['workspace-name']);
}

/** The workflow named by `id`, created from the inputs when the ledger does not hold it yet. */
export async function findOrCreateWorkflow(
  session: Session<ActionName>,
  app: AppContext,
  settings: NewWorkflowSettings,
  id: string,
  requireApproval: boolean,
  inputs: RunInputs,
): Promise<Workflow> {
  const existing = readWorkflow(await app.store.read(), id);
  if (existing) {
    core.info(`continuing workflow ${id} (${existing.state}); its workspace and playbook come from the ledger`);
    return existing;
  }
  if (settings.playbook === undefined) throw new UsageError('the playbook input is required to start a workflow', 'pass `playbook:` (the configure playbook)');
  const vars = settings.vars === undefined ? {} : parseMapping(settings.vars, 'the vars input');
  const workflow = await createProvision(
    app,
    {
      workspacePath: settings.workspace,
      workspaceName: workspaceNameOf(settings),
      playbook: settings.playbook,
      requireApproval,
      trigger: githubTrigger(session.run),
      requester: session.run.triggeringActor,
      options: {
        sshWaitMs: settings['ssh-wait'],
        onboardUser: settings['onboard-user'],
        ...(settings['onboard-playbook'] ? { onboardPlaybook: settings['onboard-playbook'] } : {}),
        ...(Object.keys(vars).length > 0 ? { vars } : {}),
        check: false,
      },
    },
    inputs,
    id,
  );
  core.info(`workflow ${workflow.id} created in ${app.store.description}`);
  return workflow;
}

/** Environment mode: refuses unless this run holds an approval for the environment; records it. */
export async function passEnvironmentGate(session: Session<ActionName>, app: AppContext, workflow: Workflow, environment: string | undefined): Promise<Workflow> {
  if (!workflow.approval.required || workflow.approval.state !== 'pending') return workflow;
  const approval = await requireEnvironmentApproval(session.github, session.run, environment);
  core.info(`approved by ${approval.by} via ${approval.via}`);
  return recordEnvironmentApproval(app, workflow, approval);
}

export function rejectedError(workflow: Workflow): ExocompError {
  return new ExocompError('approval', `workflow ${workflow.id} was rejected by ${workflow.approval.by ?? 'a reviewer'}; nothing is applied`, {
    help: 'start a new workflow to try again',
  });
}

/** Runs the chain (or one step) under this job's lease; `env` adds to the environment of tofu and the plays. */
export async function runChainHere(
  session: Session<ActionName>,
  app: AppContext,
  workflowId: string,
  inputs: RunInputs,
  options: { only?: StepName; env?: Record<string, string> } = {},
): Promise<ChainResult> {
  return runChain(options.env ? { ...app, env: { ...app.env, ...options.env } } : app, workflowId, inputs, {
    holder: ciHolder(session.run),
    probe: ciHolderProbe(session.github, session.run),
    ...(options.only ? { only: options.only } : {}),
  });
}

/** The step's failure, for setFailed, after the status is published. */
export function chainFailure(result: ChainResult): ExocompError | undefined {
  if (result.ok) return undefined;
  const failure = result.workflow.failure;
  return new ExocompError('tool-failed', failure ? `${failure.step} failed (${failure.kind}): ${failure.summary}` : `workflow ${result.workflow.id} did not finish`, {
    help: 'fix the cause and re-run the job: succeeded steps are skipped',
  });
}

/** A per-step job: runs only `step` (its predecessor must have succeeded) under this job's lease, and publishes the status. */
export async function runOneStep(
  session: Session<ActionName>,
  settings: RunInputSettings & {
    'workflow-id': string;
    token: string;
    'ledger-branch': string;
    'ledger-repository': string | undefined;
    comment: boolean;
    'comment-author': string;
  },
  step: StepName,
): Promise<void> {
  const app = await openLedger(session, settings, { write: true });
  const inputs = await githubRunInputs(session, settings);
  const result = await runChainHere(session, app, settings['workflow-id'], inputs, { only: step });
  await publishWorkflow(session, app, result.workflow, { comment: settings.comment, commentAuthor: settings['comment-author'] });
  const failure = chainFailure(result);
  if (failure) throw failure;
}
