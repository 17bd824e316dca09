import { mkdir } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { runProcess } from '../../src/adapters/process.js';
import type { RepoPermission } from '../../src/platform/github/port.js';
import { createGitHttpHandler, type GitAuthorizer, type GitHttpHandler, type GitHttpRequest } from './git-http.js';
import { OpenApiSubset, type MatchedOperation } from './openapi.js';

/**
 * A loopback stand-in for the GitHub REST API (the operations behind
 * src/platform/github/port.ts) and, optionally, for git over HTTPS.
 *
 * Tests seed `double.state` directly, point the code under test at
 * `double.url` (GITHUB_API_URL, and GITHUB_SERVER_URL for git), then read
 * `double.requests`, `double.state.dispatches`, `double.state.comments`.
 * Every request and every response is checked against the committed OpenAPI
 * subset; anything off is collected in `double.violations`, which every test
 * should expect to be empty.
 *
 * Tokens behave like a GITHUB_TOKEN: each maps to an identity and a set of
 * permissions; a missing permission is answered 403 "Resource not accessible by
 * integration", as GitHub does. What each operation needs:
 *   run approvals, environments, runs ........ actions: read
 *   run artifacts: list, download ............ actions: read
 *   dispatch .................................. actions: write
 *   collaborator permission ................... metadata: read (always granted)
 *   list comments ............................. issues: read, or pull-requests: read on a PR
 *   create / update comment ................... issues: write, or pull-requests: write on a PR
 *   list issues ............................... issues: read
 *   create issue .............................. issues: write
 *   update issue (body, state) ................ issues: write, or pull-requests: write on a PR
 *   git fetch / push .......................... contents: read / contents: write
 *   rules of a branch, a ruleset .............. metadata: read (a ruleset's bypass list: administration: write)
 *   list repository / environment secrets ..... secrets: read (a GITHUB_TOKEN never has it)
 *   list runs of the repository ............... actions: read
 *   create an attestation ..................... attestations: write
 */

export type Access = 'none' | 'read' | 'write';
export type TokenScope =
  'actions' | 'attestations' | 'contents' | 'issues' | 'pull-requests' | 'metadata' | 'administration' | 'secrets';

export interface TokenGrant {
  /** The author of what the token creates, e.g. `github-actions[bot]`. */
  login: string;
  /** Missing scopes are `none`, except `metadata`, which is always `read`. */
  permissions: Partial<Record<TokenScope, Access>>;
  /** `owner/repo` names the token may reach (a GITHUB_TOKEN reaches only its own); all when omitted. */
  repositories?: string[];
}

/** What a job's GITHUB_TOKEN gets with the permissive default. */
export const PERMISSIVE_TOKEN: Readonly<Record<TokenScope, Access>> = {
  actions: 'write',
  attestations: 'write',
  contents: 'write',
  issues: 'write',
  'pull-requests': 'write',
  metadata: 'read',
  // A GITHUB_TOKEN never gets these; a person's or an app's token may.
  administration: 'none',
  secrets: 'none',
};

export interface SeedReview {
  state: 'approved' | 'rejected' | 'pending';
  user: string;
  environments: string[];
  comment?: string;
}

export interface SeedEnvironment {
  /** Logins of required reviewers; the environment has a required-reviewers rule when non-empty. */
  requiredReviewers?: string[];
  preventSelfReview?: boolean;
  waitTimerMinutes?: number;
  /** Names of the environment's secrets. */
  secrets?: string[];
}

/**
 * A branch ruleset as GitHub keeps it: `include`/`exclude` are ref patterns (`refs/heads/…` with fnmatch and
 * FNM_PATHNAME: `*` stops at `/`, `**` does not), or `~DEFAULT_BRANCH` / `~ALL`.
 */
export interface SeedRuleset {
  name: string;
  /**
   * Who keeps it: the repository (default) or its owner organization (a ruleset an organization targets at the
   * repository; GitHub's `source_type`). GitHub refuses a repository ruleset naming the GitHub Actions app as a
   * bypass actor (422 "Actor GitHub Actions integration must be part of the ruleset source or owner
   * organization"), so the double refuses to serve one: no test can rely on a ruleset GitHub would not save.
   */
  source?: 'Repository' | 'Organization';
  enforcement?: 'active' | 'disabled' | 'evaluate';
  include: string[];
  exclude?: string[];
  /** Rule types (`creation`, `update`, `deletion`, `non_fast_forward`, `pull_request`, …) with their parameters. */
  rules: Array<{ type: string; parameters?: Record<string, unknown> }>;
  bypassActors?: Array<{
    actorType: 'Integration' | 'OrganizationAdmin' | 'RepositoryRole' | 'Team' | 'DeployKey' | 'User';
    actorId: number | null;
  }>;
}

/** The GitHub Actions app: a ruleset that lets the job token (the ledger's writer) through names it as a bypass actor. */
export const GITHUB_ACTIONS_APP_ID = 15368;

/**
 * The two rulesets that make the approval gate meaningful (docs/github.md): the ledger's records (and its old
 * single branch) writable only through the job token — an organization's ruleset, the only kind that may name the
 * GitHub Actions app — and a default branch (the approve workflow's) changed only by a reviewed pull request.
 * Ids 1 (ledger) and 2 (default branch); a fresh copy each call, for tests to break.
 */
export function gateRulesets(): Record<number, SeedRuleset> {
  return {
    1: {
      name: 'ledger records',
      source: 'Organization',
      include: ['refs/heads/exocomp-ledger-records/**/*', 'refs/heads/exocomp-ledger'],
      rules: [{ type: 'creation' }, { type: 'update' }, { type: 'deletion' }, { type: 'non_fast_forward' }],
      bypassActors: [{ actorType: 'Integration', actorId: GITHUB_ACTIONS_APP_ID }],
    },
    2: {
      name: 'main',
      include: ['~DEFAULT_BRANCH'],
      rules: [
        {
          type: 'pull_request',
          parameters: {
            dismiss_stale_reviews_on_push: true,
            require_code_owner_review: true,
            require_last_push_approval: true,
            required_approving_review_count: 1,
            required_review_thread_resolution: false,
          },
        },
        { type: 'non_fast_forward' },
        { type: 'deletion' },
      ],
      bypassActors: [],
    },
  };
}

export interface SeedComment {
  id: number;
  issueNumber: number;
  body: string;
  author: string;
  createdAt: string;
  updatedAt: string;
}

export interface SeedRun {
  status: 'queued' | 'in_progress' | 'completed' | 'waiting' | 'requested' | 'pending';
  conclusion?: string | null;
  runAttempt?: number;
  /** e.g. `.github/workflows/provision.yml`. */
  workflowPath?: string;
  headSha?: string;
  headBranch?: string;
  event?: string;
  actor?: string;
  /** When the run was created (default: now). */
  createdAt?: string;
}

export interface SeedWorkflow {
  id: number;
  /** Whether the workflow declares `on: workflow_dispatch` (422 otherwise). */
  workflowDispatch: boolean;
  /** Declared dispatch inputs; others are refused with 422 as GitHub does. Any inputs when omitted. */
  inputs?: string[];
}

export interface RecordedDispatch {
  /** The workflow as requested (file name or id). */
  workflow: string;
  ref: string;
  inputs: Record<string, unknown>;
  login: string;
  /** The run the dispatch created (in `state.runs`, queued), whether or not the response named it. */
  runId: number;
}

/**
 * How the server answers `return_run_details: true`: github.com `returns` the
 * run (200, since February 2026); a GitHub Enterprise Server that predates it
 * `ignores` the parameter (204) or `refuses` the request (422, nothing
 * dispatched), depending on how strictly it checks the body.
 */
export type RunDetailsSupport = 'returns' | 'ignores' | 'refuses';

export interface SeedIssue {
  pullRequest: boolean;
  title?: string;
  body?: string;
  state?: 'open' | 'closed';
  stateReason?: 'completed' | 'not_planned' | 'reopened' | null;
  labels?: string[];
  author?: string;
  createdAt?: string;
  updatedAt?: string;
  closedAt?: string | null;
}

export interface GitHubDoubleState {
  /** token → identity and permissions; unknown tokens get 401. */
  tokens: Record<string, TokenGrant>;
  /**
   * run id → reviews of its deployments, oldest first, served in that order. As on GitHub, an entry names no
   * attempt and no time: a re-run's review is simply a later entry.
   */
  approvals: Record<number, SeedReview[]>;
  /** environment name → protection rules; unknown names get 404. */
  environments: Record<string, SeedEnvironment>;
  /** login → permission on the repository; unknown logins have `none`. */
  collaborators: Record<string, RepoPermission>;
  /** issue number → the issue (or pull request); comments on unknown numbers get 404. Issues created through the API carry the rest. */
  issues: Record<number, SeedIssue>;
  /** All comments of the repository, oldest first; created and edited through the API too. */
  comments: SeedComment[];
  /** run id → run; unknown ids get 404. */
  runs: Record<number, SeedRun>;
  /** workflow file name (e.g. `provision.yml`) → workflow; unknown workflows get 404. */
  workflows: Record<string, SeedWorkflow>;
  /** commit sha → the numbers of the pull requests (seeded in `issues`) associated with it. */
  commitPulls: Record<string, number[]>;
  /** Every accepted workflow dispatch, in order. */
  dispatches: RecordedDispatch[];
  /** How dispatches answer `return_run_details` (default: `returns`, as github.com). */
  runDetails: RunDetailsSupport;
  /** The repository's default branch (what `~DEFAULT_BRANCH` means in a ruleset). */
  defaultBranch: string;
  /** ruleset id → branch ruleset. */
  rulesets: Record<number, SeedRuleset>;
  /** Names of the repository's Actions secrets. */
  secrets: string[];
  /** Every attestation stored, in order: the Sigstore bundle as posted, and the id answered. */
  attestations: StoredAttestation[];
}

export interface StoredAttestation {
  id: number;
  bundle: Record<string, unknown>;
}

export interface RecordedRequest {
  method: string;
  /** Path and query as received. */
  url: string;
  /** `METHOD /template` of the matched operation, e.g. `POST /repos/{owner}/{repo}/issues/{issue_number}/comments`. */
  route: string | undefined;
  operationId: string | undefined;
  params: Record<string, string>;
  /** The login of the token used, when it was known. */
  login: string | undefined;
  userAgent: string | undefined;
  /** Parsed JSON body (or the raw text when it was not JSON); undefined without one. */
  body: unknown;
  status: number;
  response: unknown;
}

export interface Violation {
  method: string;
  url: string;
  phase: 'route' | 'request' | 'response';
  message: string;
}

/** Where the artifacts of runs live (the results double); the REST API lists them and redirects downloads there. */
export interface ArtifactSource {
  artifactsOfRun(runId: number): SourceArtifact[];
  artifactById(id: number): SourceArtifact | undefined;
  downloadUrl(artifact: SourceArtifact): string;
}

export interface SourceArtifact {
  id: number;
  runId: number;
  name: string;
  content: Buffer;
  digest: string | undefined;
  createdAt: string;
}

/** Artifacts are kept this long (the runner's default retention is longer; the plans ask for 7 days). */
const ARTIFACT_RETENTION_DAYS = 7;

export interface GitHubDoubleOptions {
  /** The repository the API serves, `owner/repo` (default `acme/infra`); others get 404. */
  repository?: string;
  /** Serve bare repositories under this directory as `/<owner>/<repo>.git` over smart HTTP. */
  gitRoot?: string;
}

interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

/** An error answer injected with `failNext`, e.g. a secondary rate limit. */
export interface InjectedFailure {
  status: number;
  message: string;
  headers?: Record<string, string>;
}

/** GitHub's answer when a client is too fast; the throttling plugin waits `retry-after` seconds and retries. */
export const SECONDARY_RATE_LIMIT: InjectedFailure = {
  status: 403,
  message: 'You have exceeded a secondary rate limit. Please wait a few minutes before you try again.',
  headers: { 'retry-after': '1' },
};

interface Context {
  match: MatchedOperation;
  query: URLSearchParams;
  body: Record<string, unknown>;
  grant: TokenGrant;
}

const DOCS = 'https://docs.github.com/rest';
const COMMENT_LIMIT = 65_536;
const LEGACY_PERMISSION: Record<RepoPermission, string> = {
  admin: 'admin',
  maintain: 'write',
  write: 'write',
  triage: 'read',
  read: 'read',
  none: 'none',
};

export class GitHubDouble {
  readonly state: GitHubDoubleState = {
    tokens: {},
    approvals: {},
    environments: {},
    collaborators: {},
    issues: {},
    comments: [],
    runs: {},
    workflows: {},
    commitPulls: {},
    dispatches: [],
    runDetails: 'returns',
    defaultBranch: 'main',
    rulesets: {},
    secrets: [],
    attestations: [],
  };
  /** Every API request answered, in order (git requests are in `gitRequests`). */
  readonly requests: RecordedRequest[] = [];
  readonly violations: Violation[] = [];
  readonly owner: string;
  readonly repo: string;
  readonly gitRoot: string | undefined;
  /** Serves the run artifacts operations from here; without one, runs have no artifacts. */
  artifacts: ArtifactSource | undefined;

  private readonly subset = OpenApiSubset.load();
  private readonly git: GitHttpHandler | undefined;
  private readonly server: Server;
  private readonly userIds = new Map<string, number>();
  private readonly labelIds = new Map<string, number>();
  private readonly environmentIds = new Map<string, number>();
  private readonly failures: Array<{ route: string; failure: InjectedFailure }> = [];
  private lastId = 1_000_000;
  private baseUrl = '';

  private constructor(options: GitHubDoubleOptions) {
    const [owner = '', repo = ''] = (options.repository ?? 'acme/infra').split('/');
    this.owner = owner;
    this.repo = repo;
    this.gitRoot = options.gitRoot;
    this.git =
      options.gitRoot === undefined
        ? undefined
        : createGitHttpHandler({
            projectRoot: options.gitRoot,
            authorize: (token, repository) => this.authorizeGit(token, repository),
          });
    this.server = createServer((request, response) => {
      this.serve(request, response).catch((error: unknown) => {
        this.violations.push({
          method: request.method ?? '',
          url: request.url ?? '',
          phase: 'response',
          message: `the double failed: ${String(error)}`,
        });
        if (!response.headersSent) response.writeHead(500);
        response.end();
      });
    });
  }

  /** Starts a double on 127.0.0.1 with a free port. */
  static async start(options: GitHubDoubleOptions = {}): Promise<GitHubDouble> {
    const double = new GitHubDouble(options);
    await new Promise<void>((resolve, reject) => {
      double.server.once('error', reject);
      double.server.listen(0, '127.0.0.1', () => resolve());
    });
    const { port } = double.server.address() as AddressInfo;
    double.baseUrl = `http://127.0.0.1:${port}`;
    return double;
  }

  /** The API root (GITHUB_API_URL) and git server (GITHUB_SERVER_URL), e.g. `http://127.0.0.1:PORT`. */
  get url(): string {
    return this.baseUrl;
  }

  /** `owner/repo` served by the API. */
  get repository(): string {
    return `${this.owner}/${this.repo}`;
  }

  /** Git requests answered (fetches and pushes, with the status sent); empty without `gitRoot`. */
  get gitRequests(): readonly GitHttpRequest[] {
    return this.git?.requests ?? [];
  }

  /** The clone URL of a repository served over git HTTP. */
  gitUrl(repository: string = this.repository): string {
    return `${this.baseUrl}/${repository}.git`;
  }

  /** Creates an empty bare repository under `gitRoot` and returns its path. */
  async createBareRepository(repository: string = this.repository, defaultBranch = 'main'): Promise<string> {
    if (this.gitRoot === undefined) throw new Error('the double was started without gitRoot');
    const path = join(this.gitRoot, `${repository}.git`);
    await mkdir(path, { recursive: true });
    const result = await runProcess('git', ['init', '--quiet', '--bare', `--initial-branch=${defaultBranch}`, path]);
    if (result.code !== 0) throw new Error(`git init --bare failed: ${result.stderr}`);
    return path;
  }

  /** Adds a comment as if `author` had written it; returns it (with its id). */
  addComment(issueNumber: number, author: string, body: string): SeedComment {
    const now = timestamp();
    const comment: SeedComment = { id: this.nextId(), issueNumber, body, author, createdAt: now, updatedAt: now };
    this.state.comments.push(comment);
    return comment;
  }

  /** The comments on one issue or pull request, oldest first. */
  commentsOn(issueNumber: number): SeedComment[] {
    return this.state.comments.filter((comment) => comment.issueNumber === issueNumber);
  }

  /** Requests that matched a route, e.g. `requestsTo('PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}')`. */
  requestsTo(route: string): RecordedRequest[] {
    return this.requests.filter((request) => request.route === route);
  }

  /**
   * Answers the next `times` authorized, valid requests to `route` (as in `requestsTo`)
   * with `failure` instead of handling them.
   */
  failNext(route: string, failure: InjectedFailure, times = 1): void {
    for (let count = 0; count < times; count += 1) this.failures.push({ route, failure });
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private nextId(): number {
    this.lastId += 1;
    return this.lastId;
  }

  private authorizeGit(token: string, repository: string): ReturnType<GitAuthorizer> {
    const grant = this.state.tokens[token];
    if (!grant) return 'unknown-token';
    if (!reaches(grant, repository)) return 'hidden';
    return { login: grant.login, contents: grant.permissions.contents ?? 'none' };
  }

  private async serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const method = request.method ?? 'GET';
    const url = new URL(request.url ?? '/', this.baseUrl);
    if (this.git?.handles(url.pathname)) return this.git.handle(request, response, url);

    const raw = await readBody(request);
    const match = this.subset.match(method, url.pathname);
    const record: RecordedRequest = {
      method,
      url: `${url.pathname}${url.search}`,
      route: match ? `${match.method} ${match.template}` : undefined,
      operationId: match?.operationId,
      params: match?.params ?? {},
      login: undefined,
      userAgent: request.headers['user-agent'],
      body: undefined,
      status: 0,
      response: undefined,
    };
    const violate = (phase: Violation['phase'], message: string): void => {
      this.violations.push({ method, url: record.url, phase, message });
    };

    let reply: Reply;
    let body: unknown;
    let isJson = true;
    if (raw.length > 0) {
      try {
        body = JSON.parse(raw);
      } catch {
        body = raw;
        isJson = false;
      }
    }
    record.body = body;
    if (!match) {
      violate('route', `${method} ${url.pathname} is not an operation of the OpenAPI subset`);
      reply = error(404, 'Not Found');
    } else {
      const problems = !isJson
        ? ['the request body is not JSON']
        : this.subset.validateRequest(match, url.searchParams, request.headers['content-type'], body);
      problems.forEach((problem) => violate('request', problem));
      reply = this.authorizeAndHandle(request, match, url.searchParams, body, problems, record);
      for (const problem of this.subset.validateResponse(match, reply.status, reply.body)) violate('response', problem);
    }

    record.status = reply.status;
    record.response = reply.body;
    this.requests.push(record);
    const headers: Record<string, string> = { ...reply.headers };
    if (reply.body !== undefined) headers['content-type'] = 'application/json; charset=utf-8';
    response.writeHead(reply.status, headers);
    response.end(reply.body === undefined ? undefined : JSON.stringify(reply.body));
  }

  private authorizeAndHandle(
    request: IncomingMessage,
    match: MatchedOperation,
    query: URLSearchParams,
    body: unknown,
    problems: string[],
    record: RecordedRequest,
  ): Reply {
    const token = /^(?:token|bearer)\s+(\S+)$/i.exec(request.headers.authorization ?? '')?.[1];
    if (token === undefined) return error(401, 'Requires authentication');
    const grant = this.state.tokens[token];
    if (!grant) return error(401, 'Bad credentials');
    record.login = grant.login;
    const repository = `${match.params.owner ?? ''}/${match.params.repo ?? ''}`;
    if (repository.toLowerCase() !== this.repository.toLowerCase() || !reaches(grant, repository))
      return error(404, 'Not Found');
    if (problems.length > 0) {
      return {
        status: 422,
        body: {
          ...(error(422, 'Invalid request.').body as object),
          errors: problems.map((message) => ({ code: 'invalid', message })),
        },
      };
    }
    const injected = this.failures.findIndex((entry) => entry.route === record.route);
    const failure = injected >= 0 ? this.failures.splice(injected, 1)[0]?.failure : undefined;
    if (failure) return { ...error(failure.status, failure.message), headers: { ...failure.headers } };
    const context: Context = { match, query, body: (body ?? {}) as Record<string, unknown>, grant };
    switch (match.operationId) {
      case 'actions/get-reviews-for-run':
        return this.getReviews(context);
      case 'repos/get-environment':
        return this.getEnvironment(context);
      case 'repos/get-collaborator-permission-level':
        return this.getCollaboratorPermission(context);
      case 'issues/list-for-repo':
        return this.listIssues(context);
      case 'issues/create':
        return this.createIssue(context);
      case 'issues/update':
        return this.updateIssue(context);
      case 'issues/list-comments':
        return this.listComments(context);
      case 'issues/create-comment':
        return this.createComment(context);
      case 'issues/update-comment':
        return this.updateComment(context);
      case 'actions/create-workflow-dispatch':
        return this.dispatch(context);
      case 'actions/get-workflow-run':
        return this.getRun(context);
      case 'actions/list-workflow-run-artifacts':
        return this.listRunArtifacts(context);
      case 'actions/download-artifact':
        return this.downloadArtifact(context);
      case 'repos/list-pull-requests-associated-with-commit':
        return this.commitPulls(context);
      case 'repos/get-branch-rules':
        return this.branchRules(context);
      case 'repos/get-repo-ruleset':
        return this.getRuleset(context);
      case 'actions/list-repo-secrets':
        return this.listSecrets(context, this.state.secrets);
      case 'actions/list-environment-secrets': {
        const environment = this.state.environments[context.match.params.environment_name ?? ''];
        return environment ? this.listSecrets(context, environment.secrets ?? []) : error(404, 'Not Found');
      }
      case 'actions/list-workflow-runs-for-repo':
        return this.listRuns(context);
      case 'repos/create-attestation':
        return this.createAttestation(context);
      default:
        return error(404, 'Not Found');
    }
  }

  private commitPulls({ match, grant }: Context): Reply {
    if (!can(grant, 'pull-requests', 'read')) return forbidden();
    const sha = match.params.commit_sha ?? '';
    const numbers = this.state.commitPulls[sha] ?? [];
    return {
      status: 200,
      body: numbers.map((number) =>
        this.pullRequestSimple(number, this.state.issues[number] ?? { pullRequest: true }, sha),
      ),
    };
  }

  private pullRequestSimple(number: number, issue: SeedIssue, sha: string): Record<string, unknown> {
    const api = this.apiRepoUrl();
    const html = `${this.htmlRepoUrl()}/pull/${number}`;
    const at = issue.createdAt ?? '2026-01-01T00:00:00Z';
    const side = (ref: string) => ({
      label: `${this.owner}:${ref}`,
      ref,
      repo: this.fullRepository(),
      sha,
      user: this.user(this.owner),
    });
    const href = (url: string) => ({ href: url });
    return {
      url: `${api}/pulls/${number}`,
      id: 500000 + number,
      node_id: nodeId('PR_', number),
      html_url: html,
      diff_url: `${html}.diff`,
      patch_url: `${html}.patch`,
      issue_url: `${api}/issues/${number}`,
      commits_url: `${api}/pulls/${number}/commits`,
      review_comments_url: `${api}/pulls/${number}/comments`,
      review_comment_url: `${api}/pulls/comments{/number}`,
      comments_url: `${api}/issues/${number}/comments`,
      statuses_url: `${api}/statuses/${sha}`,
      number,
      state: issue.state ?? 'open',
      locked: false,
      title: issue.title ?? `Pull request ${number}`,
      user: this.user(issue.author ?? this.owner),
      body: issue.body ?? null,
      labels: [],
      milestone: null,
      assignee: null,
      created_at: at,
      updated_at: issue.updatedAt ?? at,
      closed_at: issue.closedAt ?? null,
      merged_at: issue.closedAt ?? null,
      merge_commit_sha: issue.closedAt ? sha : null,
      head: side('feature'),
      base: side('main'),
      _links: {
        self: href(`${api}/pulls/${number}`),
        html: href(html),
        issue: href(`${api}/issues/${number}`),
        comments: href(`${api}/issues/${number}/comments`),
        review_comments: href(`${api}/pulls/${number}/comments`),
        review_comment: href(`${api}/pulls/comments{/number}`),
        commits: href(`${api}/pulls/${number}/commits`),
        statuses: href(`${api}/statuses/${sha}`),
      },
      author_association: 'MEMBER',
      auto_merge: null,
    };
  }

  private getReviews({ match, grant }: Context): Reply {
    if (!can(grant, 'actions', 'read')) return forbidden();
    const reviews = this.state.approvals[Number(match.params.run_id)] ?? [];
    return {
      status: 200,
      body: reviews.map((review) => ({
        environments: review.environments.map((name) => this.environmentJson(name)),
        state: review.state,
        user: this.user(review.user),
        comment: review.comment ?? '',
      })),
    };
  }

  private getEnvironment({ match, grant }: Context): Reply {
    if (!can(grant, 'actions', 'read')) return forbidden();
    const name = match.params.environment_name ?? '';
    const environment = this.state.environments[name];
    if (!environment) return error(404, 'Not Found');
    const rules: unknown[] = [];
    if (environment.waitTimerMinutes !== undefined) {
      rules.push({
        id: this.nextId(),
        node_id: nodeId('GA_', this.lastId),
        type: 'wait_timer',
        wait_timer: environment.waitTimerMinutes,
      });
    }
    if ((environment.requiredReviewers ?? []).length > 0) {
      rules.push({
        id: this.nextId(),
        node_id: nodeId('GA_', this.lastId),
        type: 'required_reviewers',
        prevent_self_review: environment.preventSelfReview ?? false,
        reviewers: (environment.requiredReviewers ?? []).map((login) => ({ type: 'User', reviewer: this.user(login) })),
      });
    }
    return {
      status: 200,
      body: { ...this.environmentJson(name), protection_rules: rules, deployment_branch_policy: null },
    };
  }

  private getCollaboratorPermission({ match }: Context): Reply {
    const login = match.params.username ?? '';
    const role = this.state.collaborators[login] ?? 'none';
    const rank = ['none', 'read', 'triage', 'write', 'maintain', 'admin'].indexOf(role);
    return {
      status: 200,
      body: {
        permission: LEGACY_PERMISSION[role],
        role_name: role,
        user: {
          ...this.user(login),
          permissions: { pull: rank >= 1, triage: rank >= 2, push: rank >= 3, maintain: rank >= 4, admin: rank >= 5 },
          role_name: role,
        },
      },
    };
  }

  private listComments({ match, query, grant }: Context): Reply {
    const issueNumber = Number(match.params.issue_number);
    const issue = this.state.issues[issueNumber];
    if (!issue) return error(404, 'Not Found');
    if (!canOnIssue(grant, issue, 'read')) return forbidden();
    const since = query.get('since');
    const all = this.commentsOn(issueNumber).filter((comment) => since === null || comment.updatedAt >= since);
    const perPage = Math.min(100, Math.max(1, Number(query.get('per_page') ?? 30)));
    const page = Math.max(1, Number(query.get('page') ?? 1));
    const last = Math.max(1, Math.ceil(all.length / perPage));
    const headers: Record<string, string> = {};
    if (page < last) {
      const link = (target: number): string => {
        const next = new URLSearchParams(query);
        next.set('per_page', String(perPage));
        next.set('page', String(target));
        return `<${this.baseUrl}/repos/${this.owner}/${this.repo}/issues/${issueNumber}/comments?${next.toString()}>`;
      };
      headers.link = `${link(page + 1)}; rel="next", ${link(last)}; rel="last"`;
    }
    const slice = all.slice((page - 1) * perPage, page * perPage);
    return { status: 200, body: slice.map((comment) => this.commentJson(comment)), headers };
  }

  /** Open issues by default, newest first, filtered by every label given; pull requests are listed too, as GitHub does. */
  private listIssues({ query, grant }: Context): Reply {
    if (!can(grant, 'issues', 'read')) return forbidden();
    const state = query.get('state') ?? 'open';
    const labels = (query.get('labels') ?? '').split(',').filter(Boolean);
    const perPage = Math.min(100, Math.max(1, Number(query.get('per_page') ?? 30)));
    const page = Math.max(1, Number(query.get('page') ?? 1));
    const all = Object.entries(this.state.issues)
      .map(([number, issue]) => ({ number: Number(number), issue }))
      .filter(({ issue }) => state === 'all' || (issue.state ?? 'open') === state)
      .filter(({ issue }) => labels.every((label) => (issue.labels ?? []).includes(label)))
      .sort((a, b) => b.number - a.number);
    const headers: Record<string, string> = {};
    const last = Math.max(1, Math.ceil(all.length / perPage));
    if (page < last) {
      const next = new URLSearchParams(query);
      next.set('per_page', String(perPage));
      next.set('page', String(page + 1));
      headers.link = `<${this.baseUrl}/repos/${this.owner}/${this.repo}/issues?${next.toString()}>; rel="next"`;
    }
    return {
      status: 200,
      body: all.slice((page - 1) * perPage, page * perPage).map(({ number, issue }) => this.issueJson(number, issue)),
      headers,
    };
  }

  private createIssue({ body, grant }: Context): Reply {
    if (!can(grant, 'issues', 'write')) return forbidden();
    const text = typeof body.body === 'string' ? body.body : '';
    if (text.length > COMMENT_LIMIT) return tooLong();
    const number = this.nextId();
    const now = timestamp();
    const labels = Array.isArray(body.labels)
      ? body.labels.map((label) =>
          String(typeof label === 'object' && label !== null ? (label as { name?: unknown }).name : label),
        )
      : [];
    const issue: SeedIssue = {
      pullRequest: false,
      title: String(body.title),
      body: text,
      state: 'open',
      labels,
      author: grant.login,
      createdAt: now,
      updatedAt: now,
      closedAt: null,
    };
    this.state.issues[number] = issue;
    const json = this.issueJson(number, issue);
    return { status: 201, body: json, headers: { location: String(json.url) } };
  }

  private updateIssue({ match, body, grant }: Context): Reply {
    const number = Number(match.params.issue_number);
    const issue = this.state.issues[number];
    if (!issue) return error(404, 'Not Found');
    if (!canOnIssue(grant, issue, 'write')) return forbidden();
    if (typeof body.body === 'string') {
      if (body.body.length > COMMENT_LIMIT) return tooLong();
      issue.body = body.body;
    }
    if (typeof body.title === 'string') issue.title = body.title;
    if (body.state === 'open' || body.state === 'closed') {
      if (body.state !== (issue.state ?? 'open')) {
        issue.closedAt = body.state === 'closed' ? timestamp() : null;
        issue.stateReason =
          body.state === 'closed' ? ((body.state_reason as SeedIssue['stateReason']) ?? 'completed') : 'reopened';
      }
      issue.state = body.state;
    }
    issue.updatedAt = timestamp();
    return { status: 200, body: this.issueJson(number, issue) };
  }

  private createComment({ match, body, grant }: Context): Reply {
    const issueNumber = Number(match.params.issue_number);
    const issue = this.state.issues[issueNumber];
    if (!issue) return error(404, 'Not Found');
    if (!canOnIssue(grant, issue, 'write')) return forbidden();
    const text = String(body.body);
    if (text.length > COMMENT_LIMIT) return tooLong();
    const comment = this.addComment(issueNumber, grant.login, text);
    const json = this.commentJson(comment);
    return { status: 201, body: json, headers: { location: json.url } };
  }

  private updateComment({ match, body, grant }: Context): Reply {
    const comment = this.state.comments.find((candidate) => candidate.id === Number(match.params.comment_id));
    if (!comment) return error(404, 'Not Found');
    const issue = this.state.issues[comment.issueNumber] ?? { pullRequest: false };
    if (!canOnIssue(grant, issue, 'write')) return forbidden();
    const text = String(body.body);
    if (text.length > COMMENT_LIMIT) return tooLong();
    comment.body = text;
    comment.updatedAt = timestamp();
    return { status: 200, body: this.commentJson(comment) };
  }

  /** Stores the bundle as given (GitHub checks it is a Sigstore bundle; the test verifies what it signs). */
  private createAttestation({ body, grant }: Context): Reply {
    if (!can(grant, 'attestations', 'write')) return forbidden();
    const attestation: StoredAttestation = { id: this.nextId(), bundle: body.bundle as Record<string, unknown> };
    this.state.attestations.push(attestation);
    return { status: 201, body: { id: attestation.id } };
  }

  private dispatch({ match, body, grant }: Context): Reply {
    if (!can(grant, 'actions', 'write')) return forbidden();
    const requested = match.params.workflow_id ?? '';
    const workflow =
      this.state.workflows[requested] ??
      Object.values(this.state.workflows).find((candidate) => String(candidate.id) === requested);
    if (!workflow) return error(404, 'Not Found');
    if (!workflow.workflowDispatch) return error(422, "Workflow does not have 'workflow_dispatch' trigger");
    if ('return_run_details' in body && this.state.runDetails === 'refuses')
      return error(422, 'Invalid request.\n\n"return_run_details" is not a permitted key.');
    const inputs = (body.inputs ?? {}) as Record<string, unknown>;
    const unexpected = Object.keys(inputs).filter(
      (name) => workflow.inputs !== undefined && !workflow.inputs.includes(name),
    );
    if (unexpected.length > 0) return error(422, `Unexpected inputs provided: ${JSON.stringify(unexpected)}`);
    // Every dispatch creates a run, queued; only the 200 answer names it.
    const runId = this.nextId();
    const workflowPath = /\.ya?ml$/.test(requested) ? `.github/workflows/${requested}` : undefined;
    this.state.runs[runId] = {
      status: 'queued',
      headBranch: String(body.ref),
      event: 'workflow_dispatch',
      actor: grant.login,
      ...(workflowPath ? { workflowPath } : {}),
    };
    this.state.dispatches.push({ workflow: requested, ref: String(body.ref), inputs, login: grant.login, runId });
    if (body.return_run_details !== true || this.state.runDetails === 'ignores') return { status: 204 };
    return {
      status: 200,
      body: {
        workflow_run_id: runId,
        run_url: `${this.apiRepoUrl()}/actions/runs/${runId}`,
        html_url: `${this.htmlRepoUrl()}/actions/runs/${runId}`,
      },
    };
  }

  /** The rules of every active ruleset whose conditions take the branch, each with its ruleset's id. */
  private branchRules({ match }: Context): Reply {
    const ref = `refs/heads/${match.params.branch ?? ''}`;
    const applies = (pattern: string) =>
      pattern === '~ALL' ||
      (pattern === '~DEFAULT_BRANCH'
        ? ref === `refs/heads/${this.state.defaultBranch}`
        : fnmatchPathname(pattern, ref));
    const rules = Object.entries(this.state.rulesets)
      .filter(([, ruleset]) => (ruleset.enforcement ?? 'active') === 'active')
      .filter(([, ruleset]) => ruleset.include.some(applies) && !(ruleset.exclude ?? []).some(applies))
      .flatMap(([id, ruleset]) =>
        ruleset.rules.map((rule) => ({
          type: rule.type,
          ...(rule.parameters ? { parameters: rule.parameters } : {}),
          ...this.rulesetSource(ruleset),
          ruleset_id: Number(id),
        })),
      );
    return { status: 200, body: rules };
  }

  /** Where a ruleset is kept, as the rules and ruleset endpoints name it; refuses one GitHub would not save. */
  private rulesetSource(ruleset: SeedRuleset): { ruleset_source_type: string; ruleset_source: string } {
    const source = ruleset.source ?? 'Repository';
    if (
      source === 'Repository' &&
      (ruleset.bypassActors ?? []).some((a) => a.actorType === 'Integration' && a.actorId === GITHUB_ACTIONS_APP_ID)
    )
      throw new Error(
        `ruleset ${ruleset.name}: GitHub answers 422 "Actor GitHub Actions integration must be part of the ruleset source or owner organization" to a repository ruleset naming the GitHub Actions app`,
      );
    return { ruleset_source_type: source, ruleset_source: source === 'Repository' ? this.repository : this.owner };
  }

  /** `bypass_actors` only for a token that may edit rulesets, as GitHub answers. */
  private getRuleset({ match, grant }: Context): Reply {
    const id = Number(match.params.ruleset_id);
    const ruleset = this.state.rulesets[id];
    if (!ruleset) return error(404, 'Not Found');
    const editor = can(grant, 'administration', 'write');
    const { ruleset_source_type, ruleset_source } = this.rulesetSource(ruleset);
    return {
      status: 200,
      body: {
        id,
        name: ruleset.name,
        target: 'branch',
        source_type: ruleset_source_type,
        source: ruleset_source,
        enforcement: ruleset.enforcement ?? 'active',
        ...(editor
          ? {
              bypass_actors: (ruleset.bypassActors ?? []).map((actor) => ({
                actor_id: actor.actorId,
                actor_type: actor.actorType,
                bypass_mode: 'always',
              })),
            }
          : {}),
        current_user_can_bypass: editor ? 'always' : 'never',
        conditions: { ref_name: { include: ruleset.include, exclude: ruleset.exclude ?? [] } },
        rules: ruleset.rules.map((rule) => ({
          type: rule.type,
          ...(rule.parameters ? { parameters: rule.parameters } : {}),
        })),
        node_id: nodeId('RRS_', id),
        _links: { self: { href: `${this.apiRepoUrl()}/rulesets/${id}` } },
        created_at: '2026-01-01T00:00:00Z',
        updated_at: '2026-01-01T00:00:00Z',
      },
    };
  }

  private listSecrets({ grant }: Context, names: string[]): Reply {
    if (!can(grant, 'secrets', 'read')) return forbidden();
    const at = '2026-01-01T00:00:00Z';
    return {
      status: 200,
      body: { total_count: names.length, secrets: names.map((name) => ({ name, created_at: at, updated_at: at })) },
    };
  }

  /** Runs newest first, filtered by `event`; one page of `per_page`. */
  private listRuns(context: Context): Reply {
    if (!can(context.grant, 'actions', 'read')) return forbidden();
    const event = context.query.get('event');
    const perPage = Math.min(100, Math.max(1, Number(context.query.get('per_page') ?? 30)));
    const ids = Object.entries(this.state.runs)
      .filter(([, run]) => event === null || (run.event ?? 'push') === event)
      .map(([id]) => Number(id))
      .sort((a, b) => b - a);
    const runs = ids.slice(0, perPage).map((id) => this.runJson(id, this.state.runs[id] as SeedRun));
    return { status: 200, body: { total_count: ids.length, workflow_runs: runs } };
  }

  private getRun({ match, grant }: Context): Reply {
    if (!can(grant, 'actions', 'read')) return forbidden();
    const id = Number(match.params.run_id);
    const run = this.state.runs[id];
    if (!run) return error(404, 'Not Found');
    return { status: 200, body: this.runJson(id, run) };
  }

  private runJson(id: number, run: SeedRun): Record<string, unknown> {
    const api = this.apiRepoUrl();
    const attempt = run.runAttempt ?? 1;
    const path = run.workflowPath ?? '.github/workflows/provision.yml';
    const sha = run.headSha ?? '0'.repeat(40);
    const created = run.createdAt ?? timestamp();
    const actor = this.user(run.actor ?? this.owner);
    return {
      id,
      name: path.replace(/^.*\//, ''),
      node_id: nodeId('WFR_', id),
      check_suite_id: id + 1,
      check_suite_node_id: nodeId('CS_', id + 1),
      head_branch: run.headBranch ?? 'main',
      head_sha: sha,
      path,
      display_title: path.replace(/^.*\//, ''),
      run_number: id % 1000,
      run_attempt: attempt,
      referenced_workflows: [],
      event: run.event ?? 'push',
      status: run.status,
      conclusion: run.conclusion ?? null,
      workflow_id: 1,
      url: `${api}/actions/runs/${id}`,
      html_url: `${this.htmlRepoUrl()}/actions/runs/${id}`,
      pull_requests: [],
      created_at: created,
      updated_at: created,
      actor,
      triggering_actor: actor,
      run_started_at: created,
      jobs_url: `${api}/actions/runs/${id}/jobs`,
      logs_url: `${api}/actions/runs/${id}/logs`,
      check_suite_url: `${api}/check-suites/${id + 1}`,
      artifacts_url: `${api}/actions/runs/${id}/artifacts`,
      cancel_url: `${api}/actions/runs/${id}/cancel`,
      rerun_url: `${api}/actions/runs/${id}/rerun`,
      previous_attempt_url: attempt > 1 ? `${api}/actions/runs/${id}/attempts/${attempt - 1}` : null,
      workflow_url: `${api}/actions/workflows/1`,
      head_commit: {
        id: sha,
        tree_id: sha,
        message: 'commit',
        timestamp: created,
        author: { name: 'Test Author', email: 'author@example.com' },
        committer: { name: 'Test Author', email: 'author@example.com' },
      },
      repository: this.minimalRepository(),
      head_repository: this.minimalRepository(),
    };
  }

  private listRunArtifacts({ match, query, grant }: Context): Reply {
    if (!can(grant, 'actions', 'read')) return forbidden();
    const runId = Number(match.params.run_id);
    // A run the double knows of: seeded, or holding artifacts.
    if (this.state.runs[runId] === undefined && (this.artifacts?.artifactsOfRun(runId).length ?? 0) === 0)
      return error(404, 'Not Found');
    const name = query.get('name');
    const all = (this.artifacts?.artifactsOfRun(runId) ?? []).filter(
      (artifact) => name === null || artifact.name === name,
    );
    const sorted = all.sort((a, b) => (query.get('direction') === 'asc' ? a.id - b.id : b.id - a.id));
    const perPage = Math.min(100, Math.max(1, Number(query.get('per_page') ?? 30)));
    const page = Math.max(1, Number(query.get('page') ?? 1));
    const api = this.apiRepoUrl();
    return {
      status: 200,
      body: {
        total_count: sorted.length,
        artifacts: sorted.slice((page - 1) * perPage, page * perPage).map((artifact) => {
          const created = artifact.createdAt.replace(/\.\d{3}Z$/, 'Z');
          const expires = new Date(Date.parse(artifact.createdAt) + ARTIFACT_RETENTION_DAYS * 86_400_000)
            .toISOString()
            .replace(/\.\d{3}Z$/, 'Z');
          return {
            id: artifact.id,
            node_id: nodeId('MDg6QXJ0aWZhY3Q', artifact.id),
            name: artifact.name,
            size_in_bytes: artifact.content.length,
            url: `${api}/actions/artifacts/${artifact.id}`,
            archive_download_url: `${api}/actions/artifacts/${artifact.id}/zip`,
            expired: false,
            digest: artifact.digest ?? null,
            created_at: created,
            updated_at: created,
            expires_at: expires,
            workflow_run: {
              id: artifact.runId,
              repository_id: 1,
              head_repository_id: 1,
              head_branch: this.state.runs[artifact.runId]?.headBranch ?? 'main',
              head_sha: this.state.runs[artifact.runId]?.headSha ?? '0'.repeat(40),
            },
          };
        }),
      },
    };
  }

  /** A redirect to the artifact's blob, which the client fetches without the token (unarchived uploads come back as themselves). */
  private downloadArtifact({ match, grant }: Context): Reply {
    if (!can(grant, 'actions', 'read')) return forbidden();
    if (match.params.archive_format !== 'zip') return error(404, 'Not Found');
    const artifact = this.artifacts?.artifactById(Number(match.params.artifact_id));
    if (!artifact || !this.artifacts) return error(404, 'Not Found');
    return { status: 302, headers: { location: this.artifacts.downloadUrl(artifact) } };
  }

  private apiRepoUrl(): string {
    return `${this.baseUrl}/repos/${this.owner}/${this.repo}`;
  }

  private htmlRepoUrl(): string {
    return `${this.baseUrl}/${this.owner}/${this.repo}`;
  }

  private issueJson(number: number, issue: SeedIssue): Record<string, unknown> {
    const api = this.apiRepoUrl();
    const created = issue.createdAt ?? timestamp();
    return {
      id: number,
      node_id: nodeId('I_', number),
      url: `${api}/issues/${number}`,
      repository_url: api,
      labels_url: `${api}/issues/${number}/labels{/name}`,
      comments_url: `${api}/issues/${number}/comments`,
      events_url: `${api}/issues/${number}/events`,
      html_url: `${this.htmlRepoUrl()}/${issue.pullRequest ? 'pull' : 'issues'}/${number}`,
      number,
      state: issue.state ?? 'open',
      state_reason: issue.stateReason ?? null,
      title: issue.title ?? `#${number}`,
      body: issue.body ?? null,
      user: this.user(issue.author ?? this.owner),
      labels: (issue.labels ?? []).map((name) => ({
        id: this.labelId(name),
        node_id: nodeId('LA_', this.labelId(name)),
        url: `${api}/labels/${encodeURIComponent(name)}`,
        name,
        description: null,
        color: 'ededed',
        default: false,
      })),
      assignee: null,
      assignees: [],
      milestone: null,
      locked: false,
      active_lock_reason: null,
      comments: this.commentsOn(number).length,
      ...(issue.pullRequest
        ? {
            pull_request: {
              url: `${api}/pulls/${number}`,
              html_url: `${this.htmlRepoUrl()}/pull/${number}`,
              diff_url: `${this.htmlRepoUrl()}/pull/${number}.diff`,
              patch_url: `${this.htmlRepoUrl()}/pull/${number}.patch`,
              merged_at: null,
            },
          }
        : {}),
      closed_at: issue.closedAt ?? null,
      created_at: created,
      updated_at: issue.updatedAt ?? created,
      author_association: (issue.author ?? this.owner) === this.owner ? 'OWNER' : 'NONE',
    };
  }

  private labelId(name: string): number {
    let id = this.labelIds.get(name);
    if (id === undefined) {
      id = this.nextId();
      this.labelIds.set(name, id);
    }
    return id;
  }

  private commentJson(comment: SeedComment): { url: string } & Record<string, unknown> {
    const api = this.apiRepoUrl();
    const role = this.state.collaborators[comment.author];
    return {
      id: comment.id,
      node_id: nodeId('IC_', comment.id),
      url: `${api}/issues/comments/${comment.id}`,
      html_url: `${this.htmlRepoUrl()}/issues/${comment.issueNumber}#issuecomment-${comment.id}`,
      body: comment.body,
      user: this.user(comment.author),
      created_at: comment.createdAt,
      updated_at: comment.updatedAt,
      issue_url: `${api}/issues/${comment.issueNumber}`,
      author_association:
        comment.author === this.owner ? 'OWNER' : role !== undefined && role !== 'none' ? 'COLLABORATOR' : 'NONE',
      performed_via_github_app: null,
    };
  }

  private environmentJson(name: string): Record<string, unknown> {
    let id = this.environmentIds.get(name);
    if (id === undefined) {
      id = this.nextId();
      this.environmentIds.set(name, id);
    }
    const created = timestamp();
    return {
      id,
      node_id: nodeId('EN_', id),
      name,
      url: `${this.apiRepoUrl()}/environments/${encodeURIComponent(name)}`,
      html_url: `${this.htmlRepoUrl()}/deployments/activity_log?environments_filter=${encodeURIComponent(name)}`,
      created_at: created,
      updated_at: created,
    };
  }

  private user(login: string): Record<string, unknown> {
    let id = this.userIds.get(login);
    if (id === undefined) {
      id = this.nextId();
      this.userIds.set(login, id);
    }
    const api = `${this.baseUrl}/users/${encodeURIComponent(login)}`;
    return {
      login,
      id,
      node_id: nodeId(login.endsWith('[bot]') ? 'BOT_' : 'U_', id),
      avatar_url: `${this.baseUrl}/avatars/${id}`,
      gravatar_id: '',
      url: api,
      html_url: `${this.baseUrl}/${encodeURIComponent(login)}`,
      followers_url: `${api}/followers`,
      following_url: `${api}/following{/other_user}`,
      gists_url: `${api}/gists{/gist_id}`,
      starred_url: `${api}/starred{/owner}{/repo}`,
      subscriptions_url: `${api}/subscriptions`,
      organizations_url: `${api}/orgs`,
      repos_url: `${api}/repos`,
      events_url: `${api}/events{/privacy}`,
      received_events_url: `${api}/received_events`,
      type: login.endsWith('[bot]') ? 'Bot' : 'User',
      site_admin: false,
    };
  }

  /** The full `repository` shape (pull requests' head and base). */
  private fullRepository(): Record<string, unknown> {
    const at = '2026-01-01T00:00:00Z';
    return {
      ...this.minimalRepository(),
      clone_url: `${this.htmlRepoUrl()}.git`,
      git_url: `${this.htmlRepoUrl().replace(/^https?:/, 'git:')}.git`,
      ssh_url: `git@localhost:${this.repository}.git`,
      svn_url: this.htmlRepoUrl(),
      default_branch: 'main',
      homepage: null,
      language: null,
      mirror_url: null,
      license: null,
      forks: 0,
      forks_count: 0,
      open_issues: 0,
      open_issues_count: 0,
      stargazers_count: 0,
      watchers: 0,
      watchers_count: 0,
      size: 0,
      has_downloads: true,
      has_issues: true,
      has_projects: false,
      has_wiki: false,
      has_pages: false,
      archived: false,
      disabled: false,
      pushed_at: at,
      created_at: at,
      updated_at: at,
    };
  }

  private minimalRepository(): Record<string, unknown> {
    const api = this.apiRepoUrl();
    const urls = Object.fromEntries(
      [
        ['archive_url', '/{archive_format}{/ref}'],
        ['assignees_url', '/assignees{/user}'],
        ['blobs_url', '/git/blobs{/sha}'],
        ['branches_url', '/branches{/branch}'],
        ['collaborators_url', '/collaborators{/collaborator}'],
        ['comments_url', '/comments{/number}'],
        ['commits_url', '/commits{/sha}'],
        ['compare_url', '/compare/{base}...{head}'],
        ['contents_url', '/contents/{+path}'],
        ['contributors_url', '/contributors'],
        ['deployments_url', '/deployments'],
        ['downloads_url', '/downloads'],
        ['events_url', '/events'],
        ['forks_url', '/forks'],
        ['git_commits_url', '/git/commits{/sha}'],
        ['git_refs_url', '/git/refs{/sha}'],
        ['git_tags_url', '/git/tags{/sha}'],
        ['hooks_url', '/hooks'],
        ['issue_comment_url', '/issues/comments{/number}'],
        ['issue_events_url', '/issues/events{/number}'],
        ['issues_url', '/issues{/number}'],
        ['keys_url', '/keys{/key_id}'],
        ['labels_url', '/labels{/name}'],
        ['languages_url', '/languages'],
        ['merges_url', '/merges'],
        ['milestones_url', '/milestones{/number}'],
        ['notifications_url', '/notifications{?since,all,participating}'],
        ['pulls_url', '/pulls{/number}'],
        ['releases_url', '/releases{/id}'],
        ['stargazers_url', '/stargazers'],
        ['statuses_url', '/statuses/{sha}'],
        ['subscribers_url', '/subscribers'],
        ['subscription_url', '/subscription'],
        ['tags_url', '/tags'],
        ['teams_url', '/teams'],
        ['trees_url', '/git/trees{/sha}'],
      ].map(([key, suffix]) => [key, `${api}${suffix}`]),
    );
    return {
      id: 1,
      node_id: nodeId('R_', 1),
      name: this.repo,
      full_name: this.repository,
      owner: this.user(this.owner),
      private: true,
      html_url: this.htmlRepoUrl(),
      description: null,
      fork: false,
      url: api,
      ...urls,
    };
  }
}

/** Starts a GitHub API double on a free loopback port; `close()` it in afterEach/afterAll. */
export function startGitHubDouble(options: GitHubDoubleOptions = {}): Promise<GitHubDouble> {
  return GitHubDouble.start(options);
}

/** The `http.extraheader` value actions/checkout configures for a token. */
export function gitAuthHeader(token: string): string {
  return `AUTHORIZATION: basic ${Buffer.from(`x-access-token:${token}`).toString('base64')}`;
}

function reaches(grant: TokenGrant, repository: string): boolean {
  return (
    grant.repositories === undefined ||
    grant.repositories.some((name) => name.toLowerCase() === repository.toLowerCase())
  );
}

function can(grant: TokenGrant, scope: TokenScope, needed: 'read' | 'write'): boolean {
  const granted = scope === 'metadata' ? 'read' : (grant.permissions[scope] ?? 'none');
  return granted === 'write' || (granted === 'read' && needed === 'read');
}

function canOnIssue(grant: TokenGrant, issue: { pullRequest: boolean }, needed: 'read' | 'write'): boolean {
  return can(grant, 'issues', needed) || (issue.pullRequest && can(grant, 'pull-requests', needed));
}

/** Ruby's File.fnmatch with FNM_PATHNAME, as rulesets match refs: `*` and `?` stop at `/`, `**\/` spans segments. */
export function fnmatchPathname(pattern: string, ref: string): boolean {
  let regex = '';
  for (let i = 0; i < pattern.length; i += 1) {
    const char = pattern[i] as string;
    if (pattern.startsWith('**/', i)) {
      regex += '(?:[^/]*/)*';
      i += 2;
    } else if (char === '*') regex += '[^/]*';
    else if (char === '?') regex += '[^/]';
    else regex += char.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${regex}$`).test(ref);
}

function error(status: number, message: string): Reply {
  return { status, body: { message, documentation_url: DOCS, status: String(status) } };
}

function forbidden(): Reply {
  return error(403, 'Resource not accessible by integration');
}

function tooLong(): Reply {
  return {
    status: 422,
    body: {
      message: 'Validation Failed',
      documentation_url: DOCS,
      errors: [
        {
          resource: 'IssueComment',
          code: 'custom',
          field: 'body',
          message: `body is too long (maximum is ${COMMENT_LIMIT} characters)`,
        },
      ],
      status: '422',
    },
  };
}

function nodeId(prefix: string, id: number): string {
  return `${prefix}${Buffer.from(String(id)).toString('base64url')}`;
}

/** GitHub's timestamp style: ISO 8601 in UTC without milliseconds. */
function timestamp(): string {
  return new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}
