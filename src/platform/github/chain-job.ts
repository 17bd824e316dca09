/**
 * What the chain's jobs (the root action, plan, apply and the per-step
 * actions) hand to continueWorkflow, and how its outcome is rendered: the
 * request from the action's inputs, the gate for the approval mode, the
 * status published, and the job failed when the workflow did not get through.
 */
import { UsageError } from '../../domain/errors.js';
import { defaultWorkspaceName, parseWorkspaceName } from '../../domain/names.js';
import { environmentGate, type SelfReview } from '../../app/approval/gates/environment.js';
import { dispatchGate } from '../../app/approval/gates/dispatch.js';
import {
  continueWorkflow,
  failureOf,
  type ContinueOutcome,
  type ContinueRequest,
} from '../../app/provision/continue-workflow.js';
import type { AppContext } from '../../app/runtime/context.js';
import { checkPlaybookFile } from '../../app/provision/input-checks.js';
import { parseMapping } from '../../app/plays/mappings.js';
import type { ApprovalGate } from '../../app/ports/approval-gate.js';
import type { PlanJobOutcome, PreviewRequest } from '../../app/provision/plan-job.js';
import type { ProvisionRequest } from '../../app/provision/provision.js';
import type { RunContext } from './run-context.js';
import type { ActionName } from './inputs.js';
import {
  githubRunInputs,
  openLedger,
  postStatusComment,
  publishWorkflow,
  type PublishOptions,
  type Session,
} from './session.js';
import { planPreviewMarkdown } from './status.js';

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

export function workspaceNameOf(settings: Pick<NewWorkflowSettings, 'workspace' | 'workspace-name'>): string {
  return settings['workspace-name'] === undefined
    ? defaultWorkspaceName(settings.workspace)
    : parseWorkspaceName(settings['workspace-name']);
}

/** The workflow a job starts when the ledger does not hold it yet; the playbook is required only then. */
export function newWorkflowRequest(
  session: Session<ActionName>,
  settings: NewWorkflowSettings,
  requireApproval: boolean,
): () => ProvisionRequest {
  return () => newWorkflow(session, settings, requireApproval);
}

function newWorkflow(
  session: Session<ActionName>,
  settings: NewWorkflowSettings,
  requireApproval: boolean,
): ProvisionRequest {
  if (settings.playbook === undefined)
    throw new UsageError(
      'the playbook input is required to start a workflow',
      'pass `playbook:` (the configure playbook)',
    );
  checkPlaybookFile(settings.playbook, 'the playbook input', session.run.workspace);
  if (settings['onboard-playbook'])
    checkPlaybookFile(settings['onboard-playbook'], 'the onboard-playbook input', session.run.workspace);
  const vars = settings.vars === undefined ? {} : parseMapping(settings.vars, 'the vars input');
  return {
    workspacePath: settings.workspace,
    workspaceName: workspaceNameOf(settings),
    playbook: settings.playbook,
    requireApproval,
    trigger: session.platform.run.trigger,
    requester: session.platform.run.actor,
    options: {
      sshWaitMs: settings['ssh-wait'],
      onboardUser: settings['onboard-user'],
      ...(settings['onboard-playbook'] ? { onboardPlaybook: settings['onboard-playbook'] } : {}),
      ...(Object.keys(vars).length > 0 ? { vars } : {}),
      check: false,
    },
  };
}

export function approvalGate(
  session: Session<ActionName>,
  mode: 'environment' | 'dispatch',
  environment: string | undefined,
  selfReview: SelfReview,
): ApprovalGate {
  return mode === 'environment' ? environmentGate(session.platform, environment, selfReview) : dispatchGate();
}

/** The parts of a continueWorkflow request every chain job shares: its CI run, and the status it publishes. */
export function jobRequest(
  session: Session<ActionName>,
  app: AppContext,
  publish: PublishOptions,
): Pick<ContinueRequest, 'ci' | 'publish'> {
  return {
    ci: { platform: session.platform, scratch: session.scratch },
    publish: (workflow) => publishWorkflow(session, app, workflow, publish),
  };
}

/** Renders the outcome (the status is published already): a notice while awaiting approval; a failed job when it did not get through. */
export function renderOutcome(session: Session<ActionName>, outcome: ContinueOutcome): void {
  if (outcome.kind === 'awaiting-approval')
    session.platform.log.notice(`workflow ${outcome.workflow.id} is awaiting approval; nothing was applied`);
  const failure = failureOf(outcome);
  if (failure) throw failure;
}

/** The plan action's preview (`plan-only`): the workspace it plans, or undefined for a plan that is recorded for approval. */
export function planPreview(settings: NewWorkflowSettings & { 'plan-only': boolean }): PreviewRequest | undefined {
  if (!settings['plan-only']) return undefined;
  return {
    workspacePath: settings.workspace,
    workspaceName: workspaceNameOf(settings),
    vars: settings.vars === undefined ? {} : parseMapping(settings.vars, 'the vars input'),
    playbook: settings.playbook,
    remoteUser: settings['onboard-user'],
  };
}

/**
 * A plan job's outcome: the plan summary as an output; a preview also goes to
 * the job summary and the pull request's sticky plan comment (a recorded plan's
 * status was published by continueWorkflow).
 */
export async function publishPlan(session: Session<'plan'>, outcome: PlanJobOutcome): Promise<void> {
  session.platform.setOutput('plan-summary', outcome.planSummary ?? '');
  if (outcome.kind !== 'previewed') return;
  const body = planPreviewMarkdown(outcome, session.run);
  session.platform.setOutput('state', 'planned');
  await session.platform.writeSummary(body);
  await postStatusComment(
    session,
    session.settings.comment ? session.run.pullRequest : undefined,
    `plan-${outcome.workspaceName}`,
    body,
    'plan',
  );
}

/** A per-step job (ssh-wait, onboard, configure): runs only `step`, after the step before it succeeded, and publishes. */
export async function runOneStep(
  session: Session<'ssh-wait' | 'onboard' | 'configure'>,
  step: 'ssh-wait' | 'onboard' | 'configure',
): Promise<void> {
  const s = session.settings;
  const app = await openLedger(session, s, { provePushAccess: true });
  const inputs = await githubRunInputs(session, s);
  const outcome = await continueWorkflow(app, {
    workflowId: s['workflow-id'],
    inputs,
    scope: step,
    ...jobRequest(session, app, { comment: s.comment }),
  });
  renderOutcome(session, outcome);
}
