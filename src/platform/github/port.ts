/**
 * Everything the action set asks of GitHub's REST API, behind one port. The
 * octokit implementation lives beside it; tests run the real implementation
 * against a loopback double that checks every request against GitHub's
 * OpenAPI description.
 */
export interface RepoRef {
  owner: string;
  repo: string;
}

export type RepoPermission = 'admin' | 'maintain' | 'write' | 'triage' | 'read' | 'none';

export interface RunApproval {
  state: 'approved' | 'rejected';
  user: string;
  environments: string[];
  comment: string;
}

export interface IssueComment {
  id: number;
  body: string;
  author: string;
  /** The comment's web page (`…/pull/7#issuecomment-1`). */
  htmlUrl: string;
}

export interface Issue {
  number: number;
  title: string;
  body: string;
  state: 'open' | 'closed';
  author: string;
  labels: string[];
  htmlUrl: string;
}

export interface WorkflowRunInfo {
  id: number;
  runAttempt: number;
  status: string; // queued | in_progress | completed | ...
  conclusion: string | null;
  htmlUrl: string;
}

/** One rule of a ruleset that applies to a branch (GET …/rules/branches/{branch}). */
export interface BranchRule {
  type: string;
  rulesetId: number | undefined;
  /** `required_approving_review_count` of a `pull_request` rule. */
  requiredApprovals: number | undefined;
}

export interface GitHubPort {
  /** Reviews recorded on a run's deployments (GET …/actions/runs/{run_id}/approvals). */
  listRunApprovals(repo: RepoRef, runId: number): Promise<RunApproval[]>;
  /** The pull requests a commit belongs to (GET …/commits/{sha}/pulls): open ones, and merged ones for a commit on the base branch. */
  pullRequestsOfCommit(repo: RepoRef, sha: string): Promise<Array<{ number: number; open: boolean }>>;
  /**
   * An environment's approval rules (GET …/environments/{name}): whether it has
   * required reviewers, and whether they may approve a run they started
   * (`prevent_self_review` off); undefined when the environment does not exist.
   */
  environmentProtection(
    repo: RepoRef,
    environment: string,
  ): Promise<{ requiredReviewers: boolean; preventSelfReview: boolean } | undefined>;
  /** GET …/collaborators/{username}/permission */
  collaboratorPermission(repo: RepoRef, username: string): Promise<RepoPermission>;
  listIssueComments(repo: RepoRef, issueNumber: number): Promise<IssueComment[]>;
  createIssueComment(repo: RepoRef, issueNumber: number, body: string): Promise<IssueComment>;
  updateIssueComment(repo: RepoRef, commentId: number, body: string): Promise<IssueComment>;
  /** Open issues (not pull requests) carrying `label` (GET …/issues?state=open&labels=…). */
  listOpenIssues(repo: RepoRef, label: string): Promise<Issue[]>;
  createIssue(repo: RepoRef, issue: { title: string; body: string; labels: string[] }): Promise<Issue>;
  /** PATCH …/issues/{issue_number}: a new body and title, or a state change. */
  updateIssue(
    repo: RepoRef,
    issueNumber: number,
    change: { title?: string; body?: string; state?: 'open' | 'closed' },
  ): Promise<Issue>;
  /**
   * POST …/actions/workflows/{workflow_id}/dispatches, asking for the run it
   * starts (`return_run_details`): that run, or undefined where GitHub does
   * not say (GitHub Enterprise Server versions without the parameter).
   */
  dispatchWorkflow(
    repo: RepoRef,
    workflow: string,
    ref: string,
    inputs: Record<string, string>,
  ): Promise<{ runId: number; htmlUrl: string } | undefined>;
  /** GET …/actions/runs/{run_id} */
  getWorkflowRun(repo: RepoRef, runId: number): Promise<WorkflowRunInfo | undefined>;
  /** The active ruleset rules that apply to `branch` (GET …/rules/branches/{branch}); metadata: read. */
  branchRules(repo: RepoRef, branch: string): Promise<BranchRule[]>;
  /**
   * A ruleset's bypass actors and where it is kept (GET …/rulesets/{ruleset_id}: `source_type` is `Repository`
   * or `Organization`, the latter for a ruleset an organization applies to the repository); `actors` undefined
   * when GitHub leaves them out, as it does for a token that may not edit the ruleset.
   */
  rulesetBypass(
    repo: RepoRef,
    rulesetId: number,
  ): Promise<{ source: string; actors: Array<{ type: string; id: number | null }> | undefined }>;
  /** Names of the repository's Actions secrets, or of an environment's (never values); needs `secrets: read`. */
  secretNames(repo: RepoRef, environment?: string): Promise<string[]>;
  /** When the newest run started by a `schedule` event was created (GET …/actions/runs?event=schedule). */
  lastScheduledRun(repo: RepoRef): Promise<string | undefined>;
}
