import { retry } from '@octokit/plugin-retry';
import { throttling } from '@octokit/plugin-throttling';
import { Octokit } from '@octokit/rest';
import { z } from 'zod';
import { ExocompError } from '../../domain/errors.js';
import type {
  BranchRule,
  GitHubPort,
  Issue,
  IssueComment,
  RepoPermission,
  RepoRef,
  RunApproval,
  WorkflowRunInfo,
} from './port.js';

/**
 * The GitHubPort over @octokit/rest. Secondary and primary rate limits are
 * retried a bounded number of times (throttling plugin), transient server errors
 * too (retry plugin); a refusal (401/403, and 404 where GitHub hides what a token
 * may not see) becomes ExocompError('permission') naming the GITHUB_TOKEN
 * permission to add. The token never appears in any message.
 */

export const DEFAULT_GITHUB_API_URL = 'https://api.github.com';

export interface GitHubOptions {
  token: string;
  /** REST API root; defaults to GITHUB_API_URL, then https://api.github.com (GHES: https://HOST/api/v3). */
  baseUrl?: string;
  userAgent?: string;
  /** Transient failures (5xx, network) are retried this often with growing waits; default 3. */
  retries?: number;
  /** The first of those waits, in ms (then 4×, 9×, …); default 1000. */
  retryBaseMs?: number;
  /** Where rate-limit notices go; default console.warn. Failed calls are not logged: they throw. */
  onWarning?: (message: string) => void;
}

/** Rate-limit waits are retried at most this often, and only when GitHub asks for a short wait. */
const MAX_RATE_LIMIT_RETRIES = 2;
const MAX_RATE_LIMIT_WAIT_SECONDS = 60;

const PERMISSIONS_HELP =
  'Naming any permission in `permissions:` sets every other one to none, so list all the job needs.';

/** What each area of the API needs from the GITHUB_TOKEN, for the help line of a refusal. */
const NEEDS = {
  approvals: 'actions: read',
  environments: 'actions: read',
  runs: 'actions: read',
  collaborators: 'metadata: read',
  comments: 'pull-requests: write (or issues: write for issues)',
  issues: 'issues: write',
  dispatch: 'actions: write',
  pulls: 'pull-requests: read',
  rules: 'metadata: read',
  secrets: '`secrets: read` — the GITHUB_TOKEN never has it: use a token of an admin (fine-grained: Secrets read)',
} as const;
type Area = keyof typeof NEEDS;

const ThrottledOctokit = Octokit.plugin(retry, throttling);
type Client = InstanceType<typeof ThrottledOctokit>;

export function createGitHub(options: GitHubOptions): GitHubPort {
  const baseUrl = (options.baseUrl ?? process.env.GITHUB_API_URL ?? DEFAULT_GITHUB_API_URL).replace(/\/+$/, '');
  const warn = options.onWarning ?? ((message: string) => console.warn(message));
  const onLimit = (
    retryAfter: number,
    request: { method: string; url: string },
    _octokit: unknown,
    retryCount: number,
  ): boolean => {
    const again = retryCount < MAX_RATE_LIMIT_RETRIES && retryAfter <= MAX_RATE_LIMIT_WAIT_SECONDS;
    warn(
      `GitHub rate limit on ${request.method} ${request.url}: ${again ? `retrying in ${retryAfter}s` : 'giving up'}`,
    );
    return again;
  };
  const octokit: Client = new ThrottledOctokit({
    auth: options.token,
    baseUrl,
    ...(options.userAgent === undefined ? {} : { userAgent: options.userAgent }),
    throttle: { onRateLimit: onLimit, onSecondaryRateLimit: onLimit },
    retry: {
      retries: options.retries ?? 3,
      ...(options.retryBaseMs === undefined ? {} : { retryAfterBaseValue: options.retryBaseMs }),
    },
    log: { debug: ignore, info: ignore, warn, error: ignore },
  });
  // Once a call could not reach the API with every retry spent, later calls of this job try once: a job whose
  // optional calls (status comment, pull-request lookup, setup checks) meet an unreachable API would otherwise
  // wait out the retries of each one. The first call that gets through restores them.
  let reachable = true;
  octokit.hook.before('request', (request) => {
    if (!reachable) request.request = { ...request.request, retries: 0 };
  });
  const call = <T, F = never>(
    area: Area,
    what: string,
    request: () => Promise<T>,
    handlers?: CallHandlers<T, F>,
  ): Promise<T | F> =>
    callApi(area, what, baseUrl, request, handlers, (reached) => {
      reachable = reached;
    });

  return {
    async listRunApprovals(repo, runId) {
      const response = await call('approvals', `read the reviews of run ${runId} in ${slug(repo)}`, () =>
        octokit.rest.actions.getReviewsForRun({ ...repo, run_id: runId }),
      );
      return response.data.flatMap((review): RunApproval[] =>
        review.state === 'pending'
          ? []
          : [
              {
                state: review.state,
                user: review.user.login,
                environments: review.environments.flatMap((environment) =>
                  environment.name === undefined ? [] : [environment.name],
                ),
                comment: review.comment,
              },
            ],
      );
    },

    async pullRequestsOfCommit(repo, sha) {
      const response = await call('pulls', `list the pull requests of commit ${sha} in ${slug(repo)}`, () =>
        octokit.rest.repos.listPullRequestsAssociatedWithCommit({ ...repo, commit_sha: sha }),
      );
      return response.data.map((pull) => ({ number: pull.number, open: pull.state === 'open' }));
    },

    async environmentProtection(repo, environment) {
      const response = await call(
        'environments',
        `read environment "${environment}" of ${slug(repo)}`,
        () => octokit.rest.repos.getEnvironment({ ...repo, environment_name: environment }),
        { notFound: () => undefined },
      );
      if (response === undefined) return undefined;
      const rule = (response.data.protection_rules ?? []).find((r) => r.type === 'required_reviewers');
      return {
        requiredReviewers: rule !== undefined,
        preventSelfReview: rule !== undefined && 'prevent_self_review' in rule && rule.prevent_self_review === true,
      };
    },

    async collaboratorPermission(repo, username) {
      // 404: no such user, so certainly no access.
      const response = await call(
        'collaborators',
        `read the permission of ${username} on ${slug(repo)}`,
        () => octokit.rest.repos.getCollaboratorPermissionLevel({ ...repo, username }),
        { notFound: () => undefined },
      );
      if (response === undefined) return 'none';
      return repoPermission(response.data.role_name, response.data.permission);
    },

    async listIssueComments(repo, issueNumber) {
      const comments = await call('comments', `list the comments of #${issueNumber} in ${slug(repo)}`, () =>
        octokit.paginate(octokit.rest.issues.listComments, { ...repo, issue_number: issueNumber, per_page: 100 }),
      );
      return comments.map(toIssueComment);
    },

    async createIssueComment(repo, issueNumber, body) {
      const response = await call('comments', `comment on #${issueNumber} in ${slug(repo)}`, () =>
        octokit.rest.issues.createComment({ ...repo, issue_number: issueNumber, body }),
      );
      return toIssueComment(response.data);
    },

    async updateIssueComment(repo, commentId, body) {
      const response = await call('comments', `update comment ${commentId} in ${slug(repo)}`, () =>
        octokit.rest.issues.updateComment({ ...repo, comment_id: commentId, body }),
      );
      return toIssueComment(response.data);
    },

    async listOpenIssues(repo, label) {
      const issues = await call('issues', `list the open issues labelled ${label} in ${slug(repo)}`, () =>
        octokit.paginate(octokit.rest.issues.listForRepo, { ...repo, state: 'open', labels: label, per_page: 100 }),
      );
      return issues.filter((issue) => issue.pull_request === undefined).map(toIssue);
    },

    async createIssue(repo, issue) {
      const response = await call('issues', `open an issue in ${slug(repo)}`, () =>
        octokit.rest.issues.create({ ...repo, title: issue.title, body: issue.body, labels: issue.labels }),
      );
      return toIssue(response.data);
    },

    async updateIssue(repo, issueNumber, change) {
      const response = await call('issues', `update issue #${issueNumber} in ${slug(repo)}`, () =>
        octokit.rest.issues.update({ ...repo, issue_number: issueNumber, ...change }),
      );
      return toIssue(response.data);
    },

    async dispatchWorkflow(repo, workflow, ref, inputs) {
      const what = `dispatch workflow ${workflow} on ${ref} in ${slug(repo)}`;
      const dispatch = (details: boolean) =>
        octokit.rest.actions.createWorkflowDispatch({
          ...repo,
          workflow_id: workflow,
          ref,
          inputs,
          ...(details ? { return_run_details: true } : {}),
        });
      // 200 with the run when asked (github.com since February 2026); 204 from a server that ignores the parameter.
      const response = await call('dispatch', what, () => dispatch(true), {
        // A server that refuses the parameter refused the whole request, so nothing was dispatched yet: once more without it.
        refused: (error) => (isRunDetailsRefusal(error) ? call('dispatch', what, () => dispatch(false)) : undefined),
      });
      // @octokit/rest's types know only the 204; the 200 body is checked here.
      const details = runDetailsSchema.safeParse(response.data);
      return details.success ? { runId: details.data.workflow_run_id, htmlUrl: details.data.html_url } : undefined;
    },

    async getWorkflowRun(repo, runId) {
      const response = await call(
        'runs',
        `read run ${runId} of ${slug(repo)}`,
        () => octokit.rest.actions.getWorkflowRun({ ...repo, run_id: runId }),
        {
          notFound: () => undefined,
        },
      );
      if (response === undefined) return undefined;
      const run = response.data;
      const info: WorkflowRunInfo = {
        id: run.id,
        runAttempt: run.run_attempt ?? 1,
        status: run.status ?? 'unknown',
        conclusion: run.conclusion,
        htmlUrl: run.html_url,
      };
      return info;
    },

    async branchRules(repo, branch) {
      const response = await call('rules', `read the rules of branch ${branch} in ${slug(repo)}`, () =>
        octokit.paginate(octokit.rest.repos.getBranchRules, { ...repo, branch, per_page: 100 }),
      );
      return response.map((rule): BranchRule => ({
        type: rule.type,
        rulesetId: 'ruleset_id' in rule && typeof rule.ruleset_id === 'number' ? rule.ruleset_id : undefined,
        requiredApprovals:
          rule.type === 'pull_request' && 'parameters' in rule && rule.parameters
            ? (rule.parameters as { required_approving_review_count?: number }).required_approving_review_count
            : undefined,
      }));
    },

    async rulesetBypass(repo, rulesetId) {
      const response = await call('rules', `read ruleset ${rulesetId} of ${slug(repo)}`, () =>
        octokit.rest.repos.getRepoRuleset({ ...repo, ruleset_id: rulesetId }),
      );
      return {
        source: response.data.source_type ?? 'Repository',
        actors: response.data.bypass_actors?.map((actor) => ({ type: actor.actor_type, id: actor.actor_id ?? null })),
      };
    },

    async secretNames(repo, environment) {
      const what = `list the ${environment === undefined ? 'repository' : `environment ${environment}`} secrets of ${slug(repo)}`;
      const secrets = await call('secrets', what, () =>
        environment === undefined
          ? octokit.paginate(octokit.rest.actions.listRepoSecrets, { ...repo, per_page: 100 })
          : octokit.paginate(octokit.rest.actions.listEnvironmentSecrets, {
              ...repo,
              environment_name: environment,
              per_page: 100,
            }),
      );
      return secrets.map((secret) => secret.name);
    },

    async lastScheduledRun(repo) {
      const response = await call('runs', `list the scheduled runs of ${slug(repo)}`, () =>
        octokit.rest.actions.listWorkflowRunsForRepo({ ...repo, event: 'schedule', per_page: 1 }),
      );
      return response.data.workflow_runs[0]?.created_at;
    },
  };
}

function ignore(): void {
  /* octokit's per-request logging: failures surface as ExocompErrors instead */
}

function slug(repo: RepoRef): string {
  return `${repo.owner}/${repo.repo}`;
}

function toIssueComment(comment: {
  id: number;
  body?: string;
  user: { login: string } | null;
  html_url: string;
}): IssueComment {
  return { id: comment.id, body: comment.body ?? '', author: comment.user?.login ?? '', htmlUrl: comment.html_url };
}

function toIssue(issue: {
  number: number;
  title: string;
  body?: string | null;
  state: string;
  html_url: string;
  user: { login: string } | null;
  labels: Array<string | { name?: string }>;
}): Issue {
  return {
    number: issue.number,
    title: issue.title,
    body: issue.body ?? '',
    state: issue.state === 'closed' ? 'closed' : 'open',
    author: issue.user?.login ?? '',
    labels: issue.labels.map((label) => (typeof label === 'string' ? label : (label.name ?? ''))),
    htmlUrl: issue.html_url,
  };
}

const PERMISSIONS: readonly RepoPermission[] = ['admin', 'maintain', 'write', 'triage', 'read', 'none'];

/** `permission` folds maintain into write and triage into read; `role_name` keeps them, unless it is a custom role. */
function repoPermission(roleName: string, permission: string): RepoPermission {
  const known = (value: string): value is RepoPermission => (PERMISSIONS as readonly string[]).includes(value);
  if (known(roleName)) return roleName;
  if (known(permission)) return permission;
  return 'none';
}

interface HttpFailure {
  status: number;
  response?: { data?: unknown };
}

function isHttpFailure(error: unknown): error is HttpFailure {
  return typeof error === 'object' && error !== null && typeof (error as { status?: unknown }).status === 'number';
}

/** GitHub's own explanation from an error body, never the request (which carries the token). */
function githubMessage(error: HttpFailure): string {
  const data = error.response?.data;
  if (typeof data === 'object' && data !== null && typeof (data as { message?: unknown }).message === 'string') {
    return (data as { message: string }).message;
  }
  return typeof data === 'string' && data.length > 0 ? data.slice(0, 200) : 'no explanation given';
}

interface CallHandlers<T, F> {
  notFound?: () => F;
  refused?: (error: HttpFailure) => Promise<T> | undefined;
}

/**
 * Runs one API call, turning its failures into ExocompErrors and telling `reached` whether the API answered;
 * `notFound` decides what a 404 means when it is not a refusal, `refused` may answer a 400/422 instead (undefined:
 * the failure stands).
 */
async function callApi<T, F = never>(
  area: Area,
  what: string,
  baseUrl: string,
  request: () => Promise<T>,
  handlers: CallHandlers<T, F> = {},
  reached: (reached: boolean) => void,
): Promise<T | F> {
  try {
    const result = await request();
    reached(true);
    return result;
  } catch (error) {
    if (!isHttpFailure(error) || (error.status === 500 && error.response === undefined)) {
      // @octokit/request reports a failed fetch as status 500 without a response.
      reached(false);
      const reason =
        error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error);
      throw new ExocompError('tool-failed', `Could not reach the GitHub API at ${baseUrl} to ${what}: ${reason}`, {
        help: 'Check GITHUB_API_URL and the network; re-run the job if GitHub was unavailable.',
      });
    }
    reached(true);
    if (error.status === 404 && handlers.notFound) return handlers.notFound();
    const instead =
      (error.status === 400 || error.status === 422) && handlers.refused ? handlers.refused(error) : undefined;
    if (instead) return instead;
    throw mapFailure(area, what, error);
  }
}

/** The 200 body of a dispatch with `return_run_details`. */
const runDetailsSchema = z.object({ workflow_run_id: z.number().int().positive(), html_url: z.string() });

/** A validation failure that names `return_run_details`: a server that predates it (GitHub Enterprise Server). */
function isRunDetailsRefusal(error: HttpFailure): boolean {
  return (
    githubMessage(error).includes('return_run_details') ||
    JSON.stringify(error.response?.data ?? '').includes('return_run_details')
  );
}

function mapFailure(area: Area, what: string, error: HttpFailure): ExocompError {
  const said = `${error.status}: ${githubMessage(error)}`;
  switch (error.status) {
    case 401:
      return new ExocompError('permission', `GitHub rejected the token when trying to ${what} (${said}).`, {
        help: 'Pass a valid token (the default is the workflow’s GITHUB_TOKEN); a token from a finished job or a revoked PAT no longer works.',
      });
    case 403:
      return new ExocompError('permission', `GitHub refused to ${what} (${said}).`, {
        help: `Grant the workflow’s GITHUB_TOKEN \`${NEEDS[area]}\` in the job’s \`permissions:\`. ${PERMISSIONS_HELP}`,
      });
    case 404:
      return new ExocompError('permission', `GitHub found nothing when trying to ${what} (${said}).`, {
        help:
          area === 'dispatch'
            ? `The workflow file must exist on the default branch, and the GITHUB_TOKEN needs \`${NEEDS[area]}\`. ${PERMISSIONS_HELP}`
            : `Either it does not exist or the token may not see it: grant the GITHUB_TOKEN \`${NEEDS[area]}\`. ${PERMISSIONS_HELP}`,
      });
    case 422:
      return new ExocompError('tool-failed', `GitHub did not accept the request to ${what} (${said}).`, {
        help:
          area === 'dispatch'
            ? 'The target workflow must declare `workflow_dispatch:` on the default branch, with every input that is sent.'
            : 'Check the values sent; GitHub rejects comments over 65,536 characters.',
      });
    case 410:
      return new ExocompError('tool-failed', `GitHub says this is gone: could not ${what} (${said}).`, {
        help: 'Issues may be disabled for the repository; enable them or turn PR comments off.',
      });
    default:
      return new ExocompError('tool-failed', `The GitHub API failed to ${what} (${said}).`, {
        help: 'Re-run the job; if it keeps failing, check https://www.githubstatus.com.',
      });
  }
}
