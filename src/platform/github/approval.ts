/**
 * The approval gates on GitHub (DESIGN.md §5). Environment mode trusts only a
 * recorded review of the job's environment, and only when that environment
 * has required reviewers; dispatch mode takes the decision from a
 * `workflow_dispatch` run by someone with write access, then dispatches the
 * chain's continuation.
 */
import { ExocompError, UsageError } from '../../domain/errors.js';
import type { Workflow } from '../../domain/workflow.js';
import { requireWorkflow } from '../../ledger/records.js';
import type { AppContext } from '../../app/context.js';
import { decide } from '../../app/provision.js';
import type { GitHubPort, RepoPermission } from './port.js';
import { workflowFileOf, type RunContext } from './run-context.js';

const CONFIGURE_HELP = (env: string, slug: string) =>
  `in ${slug}: Settings → Environments → ${env} → Required reviewers, and run the apply job with \`environment: ${env}\`; ` +
  'required reviewers work in public repositories on every plan, but in private and internal repositories only on GitHub Enterprise ' +
  '(on Free, Pro and Team they are public-only); where they are unavailable, use `approval-mode: dispatch`';

export interface EnvironmentApproval {
  by: string;
  via: string;
  comment: string;
}

/** The approval of this run for `environment`, or a refusal saying how to configure one. */
export async function requireEnvironmentApproval(github: GitHubPort, run: RunContext, environment: string | undefined): Promise<EnvironmentApproval> {
  if (!environment) {
    throw new UsageError(
      'approval-mode environment needs the `environment` input: GitHub exposes no variable naming the job’s environment',
      'pass the same name as the job’s `environment:`, e.g. `environment: production`',
    );
  }
  const requiresReviewers = await github.environmentRequiresReviewers(run.repository, environment);
  if (requiresReviewers === undefined) {
    throw new ExocompError('approval', `environment "${environment}" does not exist in ${run.slug}, so nobody can have approved this apply`, {
      help: CONFIGURE_HELP(environment, run.slug),
    });
  }
  if (!requiresReviewers) {
    throw new ExocompError('approval', `environment "${environment}" has no required reviewers, so its deployments are not approved by anyone; refusing to apply`, {
      help: CONFIGURE_HELP(environment, run.slug),
    });
  }
  const reviews = (await github.listRunApprovals(run.repository, run.runId)).filter((review) => review.environments.includes(environment));
  const rejected = reviews.find((review) => review.state === 'rejected');
  if (rejected) {
    throw new ExocompError('approval', `${rejected.user} rejected the deployment to "${environment}"`, { help: 'nothing was applied' });
  }
  const approved = reviews.find((review) => review.state === 'approved');
  if (!approved) {
    throw new ExocompError('approval', `run ${run.runId} has no approval for environment "${environment}"; refusing to apply`, {
      help: `the apply job must declare \`environment: ${environment}\` so GitHub holds it for a reviewer; ${CONFIGURE_HELP(environment, run.slug)}`,
    });
  }
  return { by: approved.user, via: `environment ${environment} (run ${run.runId})`, comment: approved.comment };
}

/** Records an environment approval on a workflow still waiting for one. */
export async function recordEnvironmentApproval(app: AppContext, workflow: Workflow, approval: EnvironmentApproval): Promise<Workflow> {
  if (!workflow.approval.required || workflow.approval.state !== 'pending') return workflow;
  return decide(app, workflow.id, { approve: true, by: approval.by, via: approval.via, ...(approval.comment ? { comment: approval.comment } : {}) });
}

const RANK: Record<RepoPermission, number> = { none: 0, read: 1, triage: 2, write: 3, maintain: 4, admin: 5 };

export interface DispatchDecision {
  workflowId: string;
  approve: boolean;
  reason: string | undefined;
  allowSelfApproval: boolean;
  /** The workflow file to dispatch; default: the one that started the chain. */
  continueWorkflow: string | undefined;
}

export interface DispatchOutcome {
  workflow: Workflow;
  dispatched: { workflow: string; ref: string } | undefined;
}

/** The approve action: permission check, the decision in the ledger, then the continuation. */
export async function decideFromDispatch(app: AppContext, github: GitHubPort, run: RunContext, request: DispatchDecision): Promise<DispatchOutcome> {
  const actor = run.triggeringActor;
  const permission = await github.collaboratorPermission(run.repository, actor);
  if (RANK[permission] < RANK.write) {
    throw new ExocompError('permission', `${actor} has ${permission} access to ${run.slug}; deciding an approval needs write access or above`, {
      help: 'ask someone with write access to run the approve workflow',
    });
  }
  const current = requireWorkflow(await app.store.read(), request.workflowId);
  if (!request.allowSelfApproval && current.requester === actor) {
    throw new ExocompError('approval', `${actor} requested workflow ${current.id} and may not decide it (self-review is refused)`, {
      help: 'another person with write access decides; set `allow-self-approval: true` only where one person runs everything',
    });
  }
  const workflow = await decide(app, request.workflowId, {
    approve: request.approve,
    by: actor,
    via: `workflow_dispatch run ${run.runId}`,
    ...(request.reason ? { comment: request.reason } : {}),
  });
  if (!request.approve) return { workflow, dispatched: undefined };
  const target = request.continueWorkflow ?? workflowFileOf(workflow.trigger.workflowRef);
  if (!target) {
    throw new ExocompError('usage', `workflow ${workflow.id} does not record which workflow started it, so its continuation cannot be dispatched`, {
      help: 'pass `continue-workflow:` naming the workflow file that runs the chain (it must declare workflow_dispatch with a workflow-id input)',
    });
  }
  const ref = continuationRef(workflow, run);
  await github.dispatchWorkflow(run.repository, target, ref, { 'workflow-id': workflow.id });
  return { workflow, dispatched: { workflow: target, ref } };
}

/** The branch the chain ran on, else the branch the deciding run is on. */
export function continuationRef(workflow: Workflow, run: RunContext): string {
  const recorded = workflow.trigger.workflowRef?.split('@')[1];
  // A pull request's merge ref cannot be dispatched to; a branch can.
  return recorded?.startsWith('refs/heads/') ? recorded.slice('refs/heads/'.length) : run.refName;
}
