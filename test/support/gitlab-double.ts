import { readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { runProcess } from '../../src/adapters/process.js';
import { createGitHttpHandler, type GitHttpHandler } from './git-http.js';
import { TerraformStateApi } from './gitlab-terraform-state.js';

/**
 * A loopback stand-in for the GitLab REST API v4 (only the routes listed in
 * test/fixtures/gitlab-api/routes.json, which were derived from GitLab's
 * documentation) and for git over HTTPS.
 *
 * Every request is checked against the route's documented attributes and every
 * response against the documented fields; anything off lands in
 * `double.violations`, which every test should expect to be empty.
 *
 * Tokens behave like GitLab's:
 * - a job token (JOB-TOKEN header, `job_token` query, or `token` for the trigger
 *   route) reaches only the routes the job-token page lists; any other route
 *   answers 401, as GitLab does for a token it does not accept there. It may
 *   fetch the repository, and push only when the project allows job-token pushes
 *   ("Allow Git push requests to the repository");
 * - a personal/project access token (PRIVATE-TOKEN) needs `read_api` to read and
 *   `api` to write (403 "insufficient_scope" otherwise), and `write_repository`
 *   (or `api`) to push.
 */

export type TokenKind = 'job' | 'personal' | 'project';

export interface GitLabToken {
  kind: TokenKind;
  username: string;
  /** Access token scopes (`api`, `read_api`, `read_repository`, `write_repository`, `read_user`); ignored for job tokens. */
  scopes?: string[];
  /** The job a job token belongs to. */
  jobId?: number;
}

export interface DoubleProject {
  id: number;
  /** `group/name`; the git remote is `<url>/<path>.git`. */
  path: string;
  /** Settings → CI/CD → Job token permissions → "Allow Git push requests to the repository". */
  jobTokenPushAllowed: boolean;
  /** Default `main`. */
  defaultBranch?: string;
}

/** A protected branch rule as defined (a wildcard name as written); access levels 0, 30, 40, 60, or a user/deploy key. */
export interface DoubleProtectedBranch {
  projectId: number;
  name: string;
  push: Array<{ accessLevel: number } | { userId: number } | { deployKeyId: number }>;
  allowForcePush: boolean;
}

export interface DoubleProtectedEnvironment {
  projectId: number;
  name: string;
  requiredApprovals: number;
}

export interface DoubleVariable {
  projectId: number;
  key: string;
  value: string;
  /** `file`: a File variable (GitLab's `variable_type`); `env_var` when absent. */
  variableType?: 'env_var' | 'file';
  protected: boolean;
  masked: boolean;
}

export interface DoubleNote {
  id: number;
  projectId: number;
  mergeRequestIid: number;
  body: string;
  author: string;
  system: boolean;
  createdAt: string;
  updatedAt: string;
}

export interface DoubleMergeRequest {
  projectId: number;
  iid: number;
  /** Head commit of its source branch. */
  sha: string;
  sourceBranch: string;
  targetBranch: string;
  author: string;
  state?: 'opened' | 'merged' | 'closed';
}

export interface DoubleJob {
  projectId: number;
  name: string;
  stage: string;
  status: 'created' | 'pending' | 'running' | 'success' | 'failed' | 'canceled' | 'skipped' | 'manual';
  pipelineId: number;
  user: string;
  ref: string;
  sha: string;
}

export interface DoubleDeployment {
  id: number;
  projectId: number;
  environment: string;
  /** The job deploying (the blocked apply job). */
  jobId: number;
  status: 'created' | 'running' | 'success' | 'failed' | 'canceled' | 'blocked';
  /** Who started the deployment job. */
  user: string;
  requiredApprovals: number;
  approvals: { user: string; status: 'approved' | 'rejected'; comment: string | null; createdAt: string }[];
}

export interface DoubleSchedule {
  id: number;
  projectId: number;
  description: string;
  ref: string;
  cron: string;
  cronTimezone: string;
  active: boolean;
  owner: string;
  variables: { key: string; value: string; variableType: 'env_var' | 'file' }[];
  /** Pipelines the schedule started (creation times), oldest first. */
  pipelines?: string[];
}

export interface DoubleIssue {
  projectId: number;
  iid: number;
  title: string;
  description: string | null;
  state: 'opened' | 'closed';
  labels: string[];
  author: string;
  /** Comments, oldest first. */
  notes: { body: string; author: string }[];
  createdAt: string;
  updatedAt: string;
  closedAt: string | null;
}

export interface TriggeredPipeline {
  id: number;
  projectId: number;
  ref: string;
  variables: Record<string, string>;
  /** Whose token triggered it. */
  username: string;
}

export interface GitLabDoubleState {
  tokens: Record<string, GitLabToken>;
  projects: DoubleProject[];
  mergeRequests: DoubleMergeRequest[];
  notes: DoubleNote[];
  jobs: Record<number, DoubleJob>;
  deployments: DoubleDeployment[];
  schedules: DoubleSchedule[];
  issues: DoubleIssue[];
  triggered: TriggeredPipeline[];
  protectedBranches: DoubleProtectedBranch[];
  protectedEnvironments: DoubleProtectedEnvironment[];
  variables: DoubleVariable[];
}

export interface RecordedRequest {
  method: string;
  route: string | undefined;
  path: string;
  status: number;
  tokenKind: TokenKind | undefined;
  username: string | undefined;
}

type FieldType = string | [string] | { [field: string]: FieldType };
interface RouteContract {
  name: string;
  method: string;
  path: string;
  doc: string;
  jobToken: boolean;
  scope: string | null;
  request: { required: string[]; optional: string[] };
  response: { status: number; body: FieldType | null };
}
interface Contract {
  shapes: Record<string, Record<string, FieldType>>;
  routes: RouteContract[];
}

export const GITLAB_ROUTES_FIXTURE = fileURLToPath(new URL('../fixtures/gitlab-api/routes.json', import.meta.url));
const contract = JSON.parse(readFileSync(GITLAB_ROUTES_FIXTURE, 'utf8')) as Contract;
const compiled = contract.routes.map((route) => ({
  route,
  pattern: new RegExp(`^/api/v4${route.path.replace(/:[a-z_]+/g, '([^/]+)')}$`),
  params: [...route.path.matchAll(/:([a-z_]+)/g)].map((m) => m[1] as string),
}));

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {
    super(`HTTP ${status}`);
  }
}

const WRITE_SCOPES = ['api'];
const READ_SCOPES = ['api', 'read_api'];
const NOW = () => new Date().toISOString();
/**
 * What GitLab can mask: one line of at least 8 characters from the Base64 alphabet and `@ : . ~ -`
 * (https://docs.gitlab.com/ci/variables/#mask-a-cicd-variable); a multi-line private key cannot be.
 */
const MASKABLE = /^[A-Za-z0-9+/=@:.~-]{8,}$/;

export class GitLabDouble {
  readonly state: GitLabDoubleState = {
    tokens: {},
    projects: [],
    mergeRequests: [],
    notes: [],
    jobs: {},
    deployments: [],
    schedules: [],
    issues: [],
    triggered: [],
    protectedBranches: [],
    protectedEnvironments: [],
    variables: [],
  };
  readonly requests: RecordedRequest[] = [];
  readonly violations: string[] = [];
  /** GitLab-managed Terraform state (the http backend's API), by project and state name. */
  readonly terraformState = new TerraformStateApi();
  private server: Server | undefined;
  private nextId = 1000;
  private readonly git: GitHttpHandler | undefined;
  url = '';

  constructor(options: { gitRoot?: string } = {}) {
    this.git = options.gitRoot
      ? createGitHttpHandler({
          projectRoot: options.gitRoot,
          authorize: (token, repository) => this.authorizeGit(token, repository),
        })
      : undefined;
  }

  /** Listens on 127.0.0.1 (or `host`); `url` is the instance URL (CI_SERVER_URL), the API is under `/api/v4`. */
  async start(host = '127.0.0.1'): Promise<void> {
    this.server = createServer((request, response) => {
      this.handle(request, response).catch((error: unknown) => {
        this.violations.push(`double crashed on ${request.method} ${request.url}: ${String(error)}`);
        if (!response.headersSent) response.writeHead(500).end();
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, host, resolve));
    const { port } = this.server.address() as AddressInfo;
    this.url = `http://${host}:${port}`;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  get apiUrl(): string {
    return `${this.url}/api/v4`;
  }

  get gitRequests() {
    return this.git?.requests ?? [];
  }

  newId(): number {
    this.nextId += 1;
    return this.nextId;
  }

  /**
   * The environment a person's git needs to reach this double with `token`: an
   * extra header for the double's URL (never the token in the URL).
   */
  gitAuthEnv(token: string): NodeJS.ProcessEnv {
    const basic = Buffer.from(`oauth2:${token}`).toString('base64');
    return {
      GIT_CONFIG_COUNT: '1',
      GIT_CONFIG_KEY_0: `http.${this.url}/.extraheader`,
      GIT_CONFIG_VALUE_0: `AUTHORIZATION: basic ${basic}`,
    };
  }

  /** Adds a job token for a running job of `user` and returns it. */
  jobToken(job: DoubleJob & { id: number }): string {
    this.state.jobs[job.id] = job;
    const token = `glcbt-job-${job.id}-${this.newId()}`;
    this.state.tokens[token] = { kind: 'job', username: job.user, jobId: job.id };
    return token;
  }

  /** The API requests answered for one route of routes.json, in order. */
  requestsTo(routeName: string): RecordedRequest[] {
    return this.requests.filter((r) => r.route === routeName);
  }

  private project(ref: string): DoubleProject {
    const decoded = decodeURIComponent(ref);
    const project = this.state.projects.find((p) => String(p.id) === decoded || p.path === decoded);
    if (!project) throw new HttpError(404, { message: '404 Project Not Found' });
    return project;
  }

  private authorizeGit(token: string, repository: string) {
    const grant = this.state.tokens[token];
    const project = this.state.projects.find((p) => p.path === repository);
    if (!grant) return 'unknown-token' as const;
    if (!project) return 'hidden' as const;
    if (grant.kind === 'job')
      return { login: grant.username, contents: project.jobTokenPushAllowed ? ('write' as const) : ('read' as const) };
    const scopes = grant.scopes ?? [];
    const contents: 'write' | 'read' | 'none' =
      scopes.includes('write_repository') || scopes.includes('api')
        ? 'write'
        : scopes.includes('read_repository') || scopes.includes('read_api')
          ? 'read'
          : 'none';
    return { login: grant.username, contents };
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', this.url);
    if (this.git?.handles(url.pathname)) {
      if (this.refuseJobTokenPush(request, response, url)) return;
      return this.git.handle(request, response, url);
    }
    const method = request.method ?? 'GET';
    const stateRoute = TerraformStateApi.routeOf(method, url.pathname);
    if (stateRoute !== undefined) return this.handleTerraformState(request, response, url, method, stateRoute);
    const match = compiled.find((c) => c.route.method === method && c.pattern.test(url.pathname));
    const record: RecordedRequest = {
      method,
      route: match?.route.name,
      path: url.pathname,
      status: 0,
      tokenKind: undefined,
      username: undefined,
    };
    this.requests.push(record);
    const send = (status: number, body: unknown) => {
      record.status = status;
      if (status === 204) {
        response.writeHead(204).end();
        return;
      }
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (Array.isArray(body))
        Object.assign(headers, {
          'x-page': '1',
          'x-per-page': '100',
          'x-total': String(body.length),
          'x-total-pages': '1',
          'x-next-page': '',
          'x-prev-page': '',
        });
      response.writeHead(status, headers).end(JSON.stringify(body));
    };
    if (!match) {
      this.violations.push(`${method} ${url.pathname} is not a documented route the double knows`);
      return send(404, { error: '404 Not Found' });
    }
    const values = match.pattern.exec(url.pathname)?.slice(1) ?? [];
    const params = Object.fromEntries(match.params.map((name, i) => [name, decodeURIComponent(values[i] ?? '')]));
    const input = { ...Object.fromEntries(url.searchParams), ...(await readBody(request)) };
    try {
      const caller = this.authenticate(request, url, input, match.route);
      record.tokenKind = caller.kind;
      record.username = caller.username;
      delete input.job_token;
      if (match.route.name !== 'trigger-pipeline') delete input.token;
      this.checkRequest(match.route, input);
      const body = this.answer(match.route.name, params, input, caller);
      const problems =
        match.route.response.body === null
          ? []
          : conforms(body, match.route.response.body, contract.shapes, 'response');
      for (const p of problems) this.violations.push(`${match.route.name}: ${p}`);
      send(match.route.response.status, body);
    } catch (error) {
      if (error instanceof HttpError) return send(error.status, error.body);
      throw error;
    }
  }

  /**
   * The Terraform state API (test/support/gitlab-terraform-state.ts), reached as the http backend reaches it: basic
   * auth whose password is a running job's token (user `gitlab-ci-token`) or a token with the `api` scope.
   */
  private async handleTerraformState(
    request: IncomingMessage,
    response: ServerResponse,
    url: URL,
    method: string,
    route: string,
  ): Promise<void> {
    const record: RecordedRequest = {
      method,
      route,
      path: url.pathname,
      status: 0,
      tokenKind: undefined,
      username: undefined,
    };
    this.requests.push(record);
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const send = (status: number, body?: string) => {
      record.status = status;
      response.writeHead(status, body === undefined ? {} : { 'content-type': 'application/json' }).end(body);
    };
    const token = basicPassword(request.headers.authorization);
    const grant = token === undefined ? undefined : this.state.tokens[token];
    const job = grant?.kind === 'job' && grant.jobId !== undefined ? this.state.jobs[grant.jobId] : undefined;
    const allowed =
      grant?.kind === 'job'
        ? job !== undefined && ['running', 'pending'].includes(job.status)
        : grant?.scopes?.includes('api');
    if (!grant || !allowed) return send(401, JSON.stringify({ message: '401 Unauthorized' }));
    record.tokenKind = grant.kind;
    record.username = grant.username;
    let project: DoubleProject;
    try {
      project = this.project(url.pathname.split('/')[4] ?? '');
    } catch (error) {
      if (error instanceof HttpError) return send(error.status, JSON.stringify(error.body));
      throw error;
    }
    const answer = this.terraformState.answer({
      method,
      projectId: project.id,
      path: url.pathname,
      query: url.searchParams,
      body: Buffer.concat(chunks).toString('utf8'),
      username: grant.username,
    });
    send(answer.status, answer.body);
  }

  /** GitLab's answer to a job token pushing to a project that does not allow it. */
  private refuseJobTokenPush(request: IncomingMessage, response: ServerResponse, url: URL): boolean {
    const pushing =
      url.searchParams.get('service') === 'git-receive-pack' || url.pathname.endsWith('/git-receive-pack');
    const token = basicPassword(request.headers.authorization);
    const grant = token === undefined ? undefined : this.state.tokens[token];
    const repository = url.pathname.replace(/^\//, '').replace(/\.git\/.*$/, '');
    const project = this.state.projects.find((p) => p.path === repository);
    if (!pushing || grant?.kind !== 'job' || !project || project.jobTokenPushAllowed) return false;
    request.resume();
    response
      .writeHead(403, { 'content-type': 'text/plain; charset=utf-8' })
      .end('You are not allowed to push code to this project.\n');
    return true;
  }

  private authenticate(
    request: IncomingMessage,
    url: URL,
    input: Record<string, unknown>,
    route: RouteContract,
  ): GitLabToken {
    const header = (name: string) => {
      const value = request.headers[name];
      return Array.isArray(value) ? value[0] : value;
    };
    const jobToken =
      header('job-token') ??
      url.searchParams.get('job_token') ??
      (typeof input.job_token === 'string' ? input.job_token : undefined);
    const privateToken = header('private-token') ?? header('authorization')?.replace(/^Bearer\s+/i, '');
    const triggerToken = route.name === 'trigger-pipeline' && typeof input.token === 'string' ? input.token : undefined;
    const presented = jobToken ?? privateToken ?? triggerToken;
    const grant = presented === undefined ? undefined : this.state.tokens[presented];
    if (!grant) throw new HttpError(401, { message: '401 Unauthorized' });
    if (grant.kind === 'job') {
      if (!route.jobToken) throw new HttpError(401, { message: '401 Unauthorized' });
      const job = grant.jobId === undefined ? undefined : this.state.jobs[grant.jobId];
      if (!job || !['running', 'pending'].includes(job.status))
        throw new HttpError(401, { message: '401 Unauthorized' });
      return grant;
    }
    if (route.scope === null) throw new HttpError(404, { message: '404 Not Found' });
    const scopes = grant.scopes ?? [];
    const enough =
      route.scope === 'api'
        ? WRITE_SCOPES
        : route.scope === 'read_user'
          ? ['api', 'read_api', 'read_user']
          : READ_SCOPES;
    if (!scopes.some((s) => enough.includes(s))) {
      throw new HttpError(403, {
        error: 'insufficient_scope',
        error_description: 'The request requires higher privileges than provided by the access token.',
        scope: enough.join(' '),
      });
    }
    return grant;
  }

  private checkRequest(route: RouteContract, input: Record<string, unknown>): void {
    const known = new Set([...route.request.required, ...route.request.optional]);
    for (const key of Object.keys(input)) {
      const base = key.replace(/\[.*$/, '');
      if (!known.has(base))
        this.violations.push(`${route.name}: attribute ${key} is not documented for ${route.method} ${route.path}`);
    }
    const missing = route.request.required.filter(
      (k) => !Object.keys(input).some((key) => key === k || key.startsWith(`${k}[`)),
    );
    if (missing.length > 0) throw new HttpError(400, { error: `${missing.join(', ')} is missing` });
  }

  private answer(
    name: string,
    params: Record<string, string>,
    input: Record<string, unknown>,
    caller: GitLabToken,
  ): unknown {
    const s = this.state;
    switch (name) {
      case 'current-user':
        return user(caller.username);
      case 'list-mr-notes': {
        const project = this.project(params.id ?? '');
        const iid = Number(params.merge_request_iid);
        this.mergeRequest(project.id, iid);
        const notes = s.notes.filter((n) => n.projectId === project.id && n.mergeRequestIid === iid);
        if (input.sort === 'desc') notes.reverse();
        return notes.map((n) => noteBody(n));
      }
      case 'create-mr-note': {
        const project = this.project(params.id ?? '');
        const iid = Number(params.merge_request_iid);
        this.mergeRequest(project.id, iid);
        const note: DoubleNote = {
          id: this.newId(),
          projectId: project.id,
          mergeRequestIid: iid,
          body: String(input.body),
          author: caller.username,
          system: false,
          createdAt: NOW(),
          updatedAt: NOW(),
        };
        s.notes.push(note);
        return noteBody(note);
      }
      case 'edit-mr-note':
      case 'delete-mr-note': {
        const project = this.project(params.id ?? '');
        const note = s.notes.find(
          (n) =>
            n.projectId === project.id &&
            n.mergeRequestIid === Number(params.merge_request_iid) &&
            n.id === Number(params.note_id),
        );
        if (!note) throw new HttpError(404, { message: '404 Note Not Found' });
        // Only the author (or an admin, which the double has none of) may change a note.
        if (note.author !== caller.username) throw new HttpError(403, { message: '403 Forbidden' });
        if (name === 'delete-mr-note') {
          s.notes.splice(s.notes.indexOf(note), 1);
          return undefined;
        }
        note.body = String(input.body);
        note.updatedAt = NOW();
        return noteBody(note);
      }
      case 'commit-merge-requests': {
        const project = this.project(params.id ?? '');
        return s.mergeRequests
          .filter((m) => m.projectId === project.id && m.sha === params.sha)
          .map((m) => mergeRequestBody(m, project));
      }
      case 'get-job': {
        const project = this.project(params.id ?? '');
        const id = Number(params.job_id);
        const job = s.jobs[id];
        if (!job || job.projectId !== project.id) throw new HttpError(404, { message: '404 Not found' });
        return jobBody(id, job, this.url, project);
      }
      case 'list-deployments': {
        const project = this.project(params.id ?? '');
        return s.deployments
          .filter(
            (d) =>
              d.projectId === project.id &&
              (input.environment === undefined || d.environment === input.environment) &&
              (input.status === undefined || d.status === input.status),
          )
          .map((d) => this.deploymentBody(d));
      }
      case 'get-deployment':
        return this.deploymentBody(this.deployment(params));
      case 'approve-deployment': {
        const deployment = this.deployment(params);
        if (deployment.status !== 'blocked')
          throw new HttpError(400, { message: 'This deployment is not waiting for approvals.' });
        if (deployment.user === caller.username)
          throw new HttpError(400, { message: 'You cannot approve your own deployment.' });
        const status = input.status === 'rejected' ? 'rejected' : input.status === 'approved' ? 'approved' : undefined;
        if (!status) throw new HttpError(400, { error: 'status does not have a valid value' });
        const approval = {
          user: caller.username,
          status,
          comment: typeof input.comment === 'string' ? input.comment : null,
          createdAt: NOW(),
        } as const;
        deployment.approvals = deployment.approvals.filter((a) => a.user !== caller.username).concat(approval);
        const approved = deployment.approvals.filter((a) => a.status === 'approved').length;
        if (status === 'rejected') deployment.status = 'canceled';
        else if (approved >= deployment.requiredApprovals) deployment.status = 'created';
        return {
          user: user(approval.user),
          status: approval.status,
          created_at: approval.createdAt,
          comment: approval.comment,
        };
      }
      case 'trigger-pipeline': {
        const project = this.project(params.id ?? '');
        const variables: Record<string, string> = {};
        for (const [key, value] of Object.entries(input)) {
          const m = /^variables\[(.+)\]$/.exec(key);
          if (m?.[1]) variables[m[1]] = String(value);
        }
        if (input.variables && typeof input.variables === 'object') Object.assign(variables, input.variables);
        const id = this.newId();
        s.triggered.push({ id, projectId: project.id, ref: String(input.ref), variables, username: caller.username });
        return {
          id,
          iid: s.triggered.length,
          project_id: project.id,
          sha: '0'.repeat(40),
          ref: String(input.ref),
          status: 'created',
          source: caller.kind === 'job' ? 'pipeline' : 'trigger',
          created_at: NOW(),
          updated_at: NOW(),
          web_url: `${this.url}/${project.path}/-/pipelines/${id}`,
        };
      }
      case 'list-protected-branches': {
        const project = this.project(params.id ?? '');
        return s.protectedBranches.filter((b) => b.projectId === project.id).map((b) => protectedBranchBody(b));
      }
      case 'get-protected-environment': {
        const project = this.project(params.id ?? '');
        const found = s.protectedEnvironments.find((e) => e.projectId === project.id && e.name === params.name);
        if (!found) throw new HttpError(404, { message: '404 Not found' });
        return {
          name: found.name,
          deploy_access_levels: [accessBody({ accessLevel: 40 })],
          required_approval_count: found.requiredApprovals,
          approval_rules: [],
        };
      }
      case 'get-project': {
        const project = this.project(params.id ?? '');
        const name = project.path.split('/').at(-1) ?? project.path;
        return {
          id: project.id,
          name,
          path: name,
          path_with_namespace: project.path,
          default_branch: project.defaultBranch ?? 'main',
          web_url: `${this.url}/${project.path}`,
          visibility: 'private',
          ci_push_repository_for_job_token_allowed: project.jobTokenPushAllowed,
        };
      }
      case 'list-project-variables': {
        const project = this.project(params.id ?? '');
        const variables = s.variables.filter((v) => v.projectId === project.id);
        for (const v of variables)
          if (v.masked && !MASKABLE.test(v.value))
            this.violations.push(`variable ${v.key}: GitLab refuses to mask a value that is not ${MASKABLE}`);
        return variables.map((v) => ({
          key: v.key,
          variable_type: v.variableType ?? 'env_var',
          value: v.value,
          protected: v.protected,
          masked: v.masked,
          hidden: false,
          raw: false,
          environment_scope: '*',
          description: null,
        }));
      }
      case 'list-schedule-pipelines': {
        const schedule = this.schedule(params);
        const project = this.project(params.id ?? '');
        return (schedule.pipelines ?? []).map((at, i) => ({
          id: schedule.id * 100 + i,
          iid: i + 1,
          project_id: project.id,
          sha: '0'.repeat(40),
          ref: schedule.ref,
          status: 'success',
          source: 'schedule',
          created_at: at,
          updated_at: at,
          web_url: `${this.url}/${project.path}/-/pipelines/${schedule.id * 100 + i}`,
        }));
      }
      case 'list-schedules': {
        const project = this.project(params.id ?? '');
        return s.schedules.filter((x) => x.projectId === project.id).map((x) => scheduleBody(x));
      }
      case 'get-schedule':
        return scheduleBody(this.schedule(params), true);
      case 'create-schedule': {
        const project = this.project(params.id ?? '');
        const schedule: DoubleSchedule = {
          id: this.newId(),
          projectId: project.id,
          description: String(input.description),
          ref: String(input.ref).startsWith('refs/') ? String(input.ref) : `refs/heads/${String(input.ref)}`,
          cron: String(input.cron),
          cronTimezone: typeof input.cron_timezone === 'string' ? input.cron_timezone : 'UTC',
          active: input.active === undefined ? true : input.active === true || input.active === 'true',
          owner: caller.username,
          variables: [],
        };
        s.schedules.push(schedule);
        return scheduleBody(schedule);
      }
      case 'delete-schedule': {
        const schedule = this.schedule(params);
        s.schedules.splice(s.schedules.indexOf(schedule), 1);
        return scheduleBody(schedule);
      }
      case 'create-schedule-variable': {
        const schedule = this.schedule(params);
        const key = String(input.key);
        if (!/^[A-Za-z0-9_]{1,255}$/.test(key))
          throw new HttpError(400, { message: { key: ["can contain only letters, digits and '_'."] } });
        if (schedule.variables.some((v) => v.key === key))
          throw new HttpError(400, { message: { key: ['(' + key + ') has already been taken'] } });
        const variable = {
          key,
          value: String(input.value),
          variableType: input.variable_type === 'file' ? ('file' as const) : ('env_var' as const),
        };
        schedule.variables.push(variable);
        return { key: variable.key, variable_type: variable.variableType, value: variable.value };
      }
      case 'list-project-issues': {
        const project = this.project(params.id ?? '');
        const labels = typeof input.labels === 'string' && input.labels !== '' ? input.labels.split(',') : [];
        const state = input.state === undefined || input.state === 'all' ? undefined : input.state;
        return s.issues
          .filter(
            (i) =>
              i.projectId === project.id &&
              (state === undefined || i.state === state) &&
              labels.every((l) => i.labels.includes(l)),
          )
          .sort((a, b) => b.iid - a.iid)
          .map((i) => issueBody(i, this.url, project));
      }
      case 'create-issue': {
        const project = this.project(params.id ?? '');
        const issue: DoubleIssue = {
          projectId: project.id,
          iid: s.issues.filter((i) => i.projectId === project.id).length + 1,
          title: String(input.title),
          description: typeof input.description === 'string' ? input.description : null,
          state: 'opened',
          labels: typeof input.labels === 'string' && input.labels !== '' ? input.labels.split(',') : [],
          author: caller.username,
          notes: [],
          createdAt: NOW(),
          updatedAt: NOW(),
          closedAt: null,
        };
        s.issues.push(issue);
        return issueBody(issue, this.url, project);
      }
      case 'edit-issue': {
        const project = this.project(params.id ?? '');
        const issue = this.issue(project.id, Number(params.issue_iid));
        if (typeof input.description === 'string') issue.description = input.description;
        if (typeof input.title === 'string') issue.title = input.title;
        if (input.state_event === 'close' && issue.state === 'opened') {
          issue.state = 'closed';
          issue.closedAt = NOW();
        } else if (input.state_event === 'reopen' && issue.state === 'closed') {
          issue.state = 'opened';
          issue.closedAt = null;
        } else if (input.state_event !== undefined && input.state_event !== 'close' && input.state_event !== 'reopen') {
          throw new HttpError(400, { error: 'state_event does not have a valid value' });
        }
        issue.updatedAt = NOW();
        return issueBody(issue, this.url, project);
      }
      case 'create-issue-note': {
        const project = this.project(params.id ?? '');
        const issue = this.issue(project.id, Number(params.issue_iid));
        issue.notes.push({ body: String(input.body), author: caller.username });
        const id = this.newId();
        return {
          id,
          type: null,
          body: String(input.body),
          author: user(caller.username),
          created_at: NOW(),
          updated_at: NOW(),
          system: false,
          noteable_id: issue.iid + 20_000,
          noteable_type: 'Issue',
          project_id: project.id,
          noteable_iid: issue.iid,
          resolvable: false,
          confidential: false,
          internal: false,
        };
      }
      default:
        throw new Error(`no handler for ${name}`);
    }
  }

  private mergeRequest(projectId: number, iid: number): DoubleMergeRequest {
    const mr = this.state.mergeRequests.find((m) => m.projectId === projectId && m.iid === iid);
    if (!mr) throw new HttpError(404, { message: '404 Not found' });
    return mr;
  }

  private issue(projectId: number, iid: number): DoubleIssue {
    const issue = this.state.issues.find((i) => i.projectId === projectId && i.iid === iid);
    if (!issue) throw new HttpError(404, { message: '404 Issue Not Found' });
    return issue;
  }

  private deployment(params: Record<string, string>): DoubleDeployment {
    const project = this.project(params.id ?? '');
    const deployment = this.state.deployments.find(
      (d) => d.projectId === project.id && d.id === Number(params.deployment_id),
    );
    if (!deployment) throw new HttpError(404, { message: '404 Not found' });
    return deployment;
  }

  private schedule(params: Record<string, string>): DoubleSchedule {
    const project = this.project(params.id ?? '');
    const schedule = this.state.schedules.find(
      (x) => x.projectId === project.id && x.id === Number(params.pipeline_schedule_id),
    );
    if (!schedule) throw new HttpError(404, { message: '404 Pipeline Schedule Not Found' });
    return schedule;
  }

  private deploymentBody(d: DoubleDeployment) {
    const job = this.state.jobs[d.jobId];
    const approved = d.approvals.filter((a) => a.status === 'approved').length;
    return {
      id: d.id,
      iid: d.id,
      ref: job?.ref ?? 'main',
      sha: job?.sha ?? '0'.repeat(40),
      created_at: NOW(),
      updated_at: NOW(),
      status: d.status,
      user: user(d.user),
      environment: { id: 1, name: d.environment },
      deployable: {
        id: d.jobId,
        status: job?.status ?? 'manual',
        name: job?.name ?? 'apply',
        pipeline: {
          id: job?.pipelineId ?? 0,
          project_id: d.projectId,
          ref: job?.ref ?? 'main',
          sha: job?.sha ?? '0'.repeat(40),
          status: 'running',
        },
      },
      pending_approval_count: Math.max(0, d.requiredApprovals - approved),
      approvals: d.approvals.map((a) => ({
        user: user(a.user),
        status: a.status,
        created_at: a.createdAt,
        comment: a.comment,
      })),
    };
  }
}

/** A started double whose git holds an empty bare repository for `project` under `<root>/git`. */
export async function startDoubleWithProject(root: string, project: DoubleProject): Promise<GitLabDouble> {
  const gitRoot = join(root, 'git');
  await mkdir(join(gitRoot, project.path, '..'), { recursive: true });
  await runProcess('git', ['init', '--quiet', '--bare', join(gitRoot, `${project.path}.git`)]);
  const double = new GitLabDouble({ gitRoot });
  await double.start();
  double.state.projects.push({ ...project });
  return double;
}

function user(username: string) {
  let id = 0;
  for (const c of username) id = (id * 31 + c.charCodeAt(0)) % 100_000;
  return { id: id + 1, username, name: username, state: 'active', web_url: `http://gitlab.invalid/${username}` };
}

function noteBody(n: DoubleNote) {
  return {
    id: n.id,
    type: null,
    body: n.body,
    author: user(n.author),
    created_at: n.createdAt,
    updated_at: n.updatedAt,
    system: n.system,
    noteable_id: n.mergeRequestIid + 10_000,
    noteable_type: 'MergeRequest',
    project_id: n.projectId,
    noteable_iid: n.mergeRequestIid,
    resolvable: false,
    confidential: false,
    internal: false,
  };
}

function issueBody(i: DoubleIssue, base: string, project: DoubleProject) {
  return {
    id: i.iid + 20_000,
    iid: i.iid,
    project_id: i.projectId,
    title: i.title,
    description: i.description,
    state: i.state,
    labels: i.labels,
    author: user(i.author),
    web_url: `${base}/${project.path}/-/issues/${i.iid}`,
    created_at: i.createdAt,
    updated_at: i.updatedAt,
    closed_at: i.closedAt,
  };
}

function mergeRequestBody(m: DoubleMergeRequest, project: DoubleProject) {
  return {
    id: m.iid + 10_000,
    iid: m.iid,
    project_id: m.projectId,
    title: `merge request ${m.iid}`,
    state: m.state ?? 'opened',
    source_branch: m.sourceBranch,
    target_branch: m.targetBranch,
    sha: m.sha,
    author: user(m.author),
    web_url: `http://gitlab.invalid/${project.path}/-/merge_requests/${m.iid}`,
  };
}

function jobBody(id: number, job: DoubleJob, base: string, project: DoubleProject) {
  const finished = ['success', 'failed', 'canceled', 'skipped'].includes(job.status);
  return {
    id,
    status: job.status,
    stage: job.stage,
    name: job.name,
    ref: job.ref,
    tag: false,
    created_at: NOW(),
    started_at: job.status === 'created' || job.status === 'pending' ? null : NOW(),
    finished_at: finished ? NOW() : null,
    user: user(job.user),
    pipeline: {
      id: job.pipelineId,
      project_id: job.projectId,
      ref: job.ref,
      sha: job.sha,
      status: finished ? job.status : 'running',
    },
    web_url: `${base}/${project.path}/-/jobs/${id}`,
  };
}

let accessIds = 5000;
function accessBody(access: DoubleProtectedBranch['push'][number]) {
  accessIds += 1;
  const level = 'accessLevel' in access ? access.accessLevel : 40;
  return {
    id: accessIds,
    access_level: level,
    access_level_description:
      'userId' in access ? 'A user' : 'deployKeyId' in access ? 'Deploy key' : (ACCESS_NAMES[level] ?? 'Custom'),
    user_id: 'userId' in access ? access.userId : null,
    group_id: null,
    deploy_key_id: 'deployKeyId' in access ? access.deployKeyId : null,
  };
}
const ACCESS_NAMES: Record<number, string> = {
  0: 'No one',
  30: 'Developers + Maintainers',
  40: 'Maintainers',
  60: 'Admins',
};

function protectedBranchBody(b: DoubleProtectedBranch) {
  return {
    id: b.projectId * 1000 + b.name.length,
    name: b.name,
    push_access_levels: b.push.map((access) => accessBody(access)),
    merge_access_levels: [accessBody({ accessLevel: 40 })],
    allow_force_push: b.allowForcePush,
    code_owner_approval_required: false,
  };
}

function scheduleBody(x: DoubleSchedule, expanded = false) {
  return {
    id: x.id,
    description: x.description,
    ref: x.ref,
    cron: x.cron,
    cron_timezone: x.cronTimezone,
    next_run_at: NOW(),
    active: x.active,
    created_at: NOW(),
    updated_at: NOW(),
    owner: user(x.owner),
    ...(expanded
      ? { variables: x.variables.map((v) => ({ key: v.key, variable_type: v.variableType, value: v.value })) }
      : {}),
  };
}

/** Problems of `value` against a documented field type (see routes.json `shapes`). */
export function conforms(value: unknown, type: FieldType, shapes: Contract['shapes'], where: string): string[] {
  if (Array.isArray(type)) {
    if (!Array.isArray(value)) return [`${where} should be an array`];
    return value.flatMap((item, i) => conforms(item, type[0], shapes, `${where}[${i}]`));
  }
  if (typeof type === 'object') {
    if (typeof value !== 'object' || value === null) return [`${where} should be an object`];
    return Object.entries(type).flatMap(([field, t]) =>
      field in value
        ? conforms((value as Record<string, unknown>)[field], t, shapes, `${where}.${field}`)
        : [`${where}.${field} is missing`],
    );
  }
  const shape = shapes[type];
  if (shape) return conforms(value, shape, shapes, where);
  const allowed = type.split('|');
  const actual = value === null ? 'null' : Number.isInteger(value) ? 'integer' : typeof value;
  return allowed.includes(actual) ? [] : [`${where} is ${actual}, documented as ${type}`];
}

async function readBody(request: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  if (text === '') return {};
  const type = request.headers['content-type'] ?? '';
  if (type.includes('application/json')) return JSON.parse(text) as Record<string, unknown>;
  if (type.includes('multipart/form-data')) {
    const form = await new Request('http://double.invalid/', {
      method: 'POST',
      headers: { 'content-type': type },
      body: Buffer.concat(chunks),
    }).formData();
    return Object.fromEntries(
      [...form.entries()].map(([key, value]) => [key, typeof value === 'string' ? value : value.name]),
    );
  }
  return Object.fromEntries(new URLSearchParams(text));
}

function basicPassword(header: string | undefined): string | undefined {
  const match = /^basic\s+(\S+)$/i.exec(header ?? '');
  if (!match?.[1]) return undefined;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? undefined : decoded.slice(colon + 1);
}
