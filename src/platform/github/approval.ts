/**
 * What the approval gates need from GitHub. Environment mode trusts only a
 * recorded review of the job's environment, and only when that environment
 * has required reviewers; dispatch mode needs the decider's permission and
 * dispatches the chain's continuation (a workflow_dispatch run).
 */
import { ExocompError, UsageError } from '../../domain/errors.js';
import type { Workflow } from '../../domain/workflow.js';
import type { GateApproval, StartedContinuation } from '../../app/ports/ci-platform.js';
import type { GitHubPort, RepoPermission, RunApproval } from './port.js';
import { workflowFileOf, type RunContext } from './run-context.js';

const CONFIGURE_HELP = (env: string, slug: string) =>
  `in ${slug}: Settings → Environments → ${env} → Required reviewers, and run the apply job with \`environment: ${env}\`; ` +
  'required reviewers work in public repositories on every plan, but in private and internal repositories only on GitHub Enterprise ' +
  '(on Free, Pro and Team they are public-only); where they are unavailable, use `approval-mode: dispatch`';

/** The approval of this run for `environment`, or a refusal saying how to configure one. */
export async function requireEnvironmentApproval(
  github: GitHubPort,
  run: RunContext,
  environment: string | undefined,
): Promise<GateApproval> {
  if (!environment) {
    throw new UsageError(
      'approval-mode environment needs the `environment` input: GitHub exposes no variable naming the job’s environment',
      'pass the same name as the job’s `environment:`, e.g. `environment: production`',
    );
  }
  const protection = await github.environmentProtection(run.repository, environment);
  if (protection === undefined) {
    throw new ExocompError(
      'approval',
      `environment "${environment}" does not exist in ${run.slug}, so nobody can have approved this apply`,
      {
        help: CONFIGURE_HELP(environment, run.slug),
      },
    );
  }
  if (!protection.requiredReviewers) {
    throw new ExocompError(
      'approval',
      `environment "${environment}" has no required reviewers, so its deployments are not approved by anyone; refusing to apply`,
      {
        help: CONFIGURE_HELP(environment, run.slug),
      },
    );
  }
  const decision = attemptDecision(
    (await github.listRunApprovals(run.repository, run.runId)).filter((review) =>
      review.environments.includes(environment),
    ),
    environment,
    run,
  );
  return {
    by: decision.user,
    via: `environment ${environment} (run ${run.runId}, attempt ${run.runAttempt})`,
    comment: decision.comment,
    selfReviewAllowed: !protection.preventSelfReview,
    // GitHub's "Prevent self-review" blocks only whoever triggered this attempt.
    attemptActor: run.triggeringActor,
  };
}

/**
 * This attempt's decision from the run's review log (GET …/actions/runs/{run_id}/approvals), which names no attempt
 * and no time and whose order GitHub does not document, so no entry is taken for this attempt's by its place. What
 * GitHub documents: a job naming an environment with required reviewers is sent to a runner only once the
 * environment's protection rules passed ("must pass before a job referencing the environment is sent to a
 * runner"), and a rejected job does not run
 * (https://docs.github.com/en/actions/concepts/workflows-and-actions/deployment-environments). This
 * job runs, so this attempt was approved and every rejection in the log is an earlier attempt's. When all the
 * approvals name one person, that person approved this attempt; when they name several (an earlier attempt
 * approved by someone else), which one approved this attempt cannot be told, and the gate refuses rather than
 * guess — the self-review rules judge the approver.
 */
export function attemptDecision(
  reviews: readonly RunApproval[],
  environment: string,
  run: Pick<RunContext, 'runId' | 'slug'>,
): RunApproval {
  const approvals = reviews.filter((review) => review.state === 'approved');
  const approvers = [...new Set(approvals.map((review) => review.user))];
  if (approvers.length === 1) return approvals.at(-1)!;
  if (approvers.length > 1)
    throw new ExocompError(
      'approval',
      `run ${run.runId} holds approvals of environment "${environment}" by ${approvers.join(', ')}; GitHub's review log names no attempt, so which of them approved this attempt cannot be told; refusing to apply`,
      {
        help: 'start a new run of the workflow (a push, or a dispatch with the workflow id): its one approval decides',
      },
    );
  const rejection = reviews.find((review) => review.state === 'rejected');
  if (rejection)
    throw new ExocompError('approval', `${rejection.user} rejected the deployment to "${environment}"`, {
      help: 'nothing was applied',
    });
  throw new ExocompError(
    'approval',
    `run ${run.runId} has no approval for environment "${environment}"; refusing to apply`,
    {
      help: `the apply job must declare \`environment: ${environment}\` so GitHub holds it for a reviewer; ${CONFIGURE_HELP(environment, run.slug)}`,
    },
  );
}

/**
 * A dispatch-mode decision counts only from the approve workflow as the default branch holds it: otherwise anyone
 * with write access could dispatch an edited copy from their own branch (`allow-self-approval: true`). For
 * `workflow_dispatch`, GITHUB_SHA is the head of the dispatched ref, so a run on the default branch runs a commit
 * on it; a tag or another branch is refused before the ledger is opened. Rulesets keep the branch itself reviewed.
 */
export function requireDefaultBranchDecision(run: RunContext): void {
  const branch = run.defaultBranch;
  const expected = branch === undefined ? undefined : `refs/heads/${branch}`;
  const workflowAt = run.workflowRef?.split('@')[1];
  if (expected !== undefined && run.ref === expected && workflowAt === expected) return;
  throw new ExocompError(
    'approval',
    `this approval runs from ${workflowAt || run.ref || 'an unknown ref'}, not from the default branch${branch ? ` ${branch}` : ''}: a decision counts only from the approve workflow the default branch holds; nothing was recorded`,
    {
      help: `run the approve workflow on ${branch ?? 'the default branch'} (\`gh workflow run <approve workflow> --ref ${branch ?? '<default branch>'} -f workflow-id=… -f decision=…\`), and protect that branch with a ruleset (docs/github.md, "Making separation of duties hold")`,
    },
  );
}

const RANK: Record<RepoPermission, number> = { none: 0, read: 1, triage: 2, write: 3, maintain: 4, admin: 5 };

/** Deciding an approval needs write access or above. */
export async function mayDecide(
  github: GitHubPort,
  run: RunContext,
  actor: string,
): Promise<{ allowed: boolean; reason: string }> {
  const permission = await github.collaboratorPermission(run.repository, actor);
  return { allowed: RANK[permission] >= RANK.write, reason: `${actor} has ${permission} access to ${run.slug}` };
}

/** The workflow file a continuation runs (`target`, else the file that started the chain) and the branch it runs on. */
export function continuationTarget(
  run: RunContext,
  workflow: Workflow,
  target: string | undefined,
): { target: string; ref: string } | undefined {
  const file = target ?? workflowFileOf(workflow.trigger.workflowRef);
  return file ? { target: file, ref: continuationRef(workflow, run) } : undefined;
}

/** Dispatches the continuation's workflow file on the chain's branch with the workflow id; the run it started when GitHub names it. */
export async function dispatchContinuation(
  github: GitHubPort,
  run: RunContext,
  workflow: Workflow,
  target: string | undefined,
): Promise<StartedContinuation> {
  const next = continuationTarget(run, workflow, target);
  if (!next) {
    throw new ExocompError(
      'usage',
      `workflow ${workflow.id} does not record which workflow started it, so its continuation cannot be dispatched`,
      {
        help: 'pass `continue-workflow:` naming the workflow file that runs the chain (it must declare workflow_dispatch with a workflow-id input)',
      },
    );
  }
  const started = await github.dispatchWorkflow(run.repository, next.target, next.ref, { 'workflow-id': workflow.id });
  return { ...next, ...(started ? { run: { id: started.runId, url: started.htmlUrl } } : {}) };
}

/** Whether a run of this repository (a continuation this project dispatched) has completed; undefined when GitHub does not know it. */
export async function runCompleted(github: GitHubPort, run: RunContext, runId: number): Promise<boolean | undefined> {
  const info = await github.getWorkflowRun(run.repository, runId);
  return info === undefined ? undefined : info.status === 'completed';
}

/** The branch the chain ran on, else the branch the deciding run is on. */
function continuationRef(workflow: Workflow, run: RunContext): string {
  const recorded = workflow.trigger.workflowRef?.split('@')[1];
  // A pull request's merge ref cannot be dispatched to; a branch can.
  return recorded?.startsWith('refs/heads/') ? recorded.slice('refs/heads/'.length) : run.refName;
}
