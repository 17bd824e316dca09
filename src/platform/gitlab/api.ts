/**
 * The one adapter to GitLab's REST API (@gitbeaker/rest). Two identities: the
 * job token, which GitLab lets reach only a few routes (reading notes, the
 * commit's merge requests, deployments, the pipeline trigger), and an optional
 * access token (EXOCOMP_GITLAB_TOKEN) for the rest (writing notes, jobs,
 * schedules, issues). A call that needs the access token and has none says so.
 */
import type {
  Commits,
  Deployments,
  IssueNotes,
  Issues,
  Jobs,
  MergeRequestNotes,
  PipelineSchedules,
  PipelineScheduleVariables,
  PipelineTriggerTokens,
  ProjectProtectedEnvironments,
  Projects,
  ProjectVariables,
  ProtectedBranches,
  Users,
} from '@gitbeaker/rest';
import { z } from 'zod';
import { ExocompError, UnansweredError } from '../../domain/errors.js';
import type { SecretRegistry } from '../../app/runtime/secrets.js';
import type { VariableFlags } from '../../domain/setup-check.js';

export const GITLAB_TOKEN_VARIABLE = 'EXOCOMP_GITLAB_TOKEN';

export interface Note {
  id: number;
  body: string;
  author: string;
  system: boolean;
}

/** A project issue; `iid` is the number a person sees (#7). */
export interface ProjectIssue {
  iid: number;
  description: string;
  author: string;
  state: string;
  webUrl: string;
}

export interface DeploymentApproval {
  user: string;
  status: 'approved' | 'rejected';
  comment: string | null;
}

export interface Deployment {
  id: number;
  status: string;
  environment: string;
  jobId: number | undefined;
  /** Who started the deployment job. */
  user: string;
  pendingApprovalCount: number | undefined;
  approvals: DeploymentApproval[];
}

export interface Schedule {
  id: number;
  description: string;
  ref: string;
  cron: string;
  cronTimezone: string;
  active: boolean;
  owner: string;
  variables: { key: string; value: string }[] | undefined;
}

type Client<T> = new (options: { host: string; token?: string; jobToken?: string; queryTimeout?: number }) => T;

interface Clients {
  notes: MergeRequestNotes;
  commits: Commits;
  jobs: Jobs;
  deployments: Deployments;
  triggers: PipelineTriggerTokens;
  schedules: PipelineSchedules;
  scheduleVariables: PipelineScheduleVariables;
  users: Users;
  issues: Issues;
  issueNotes: IssueNotes;
  protectedBranches: ProtectedBranches;
  protectedEnvironments: ProjectProtectedEnvironments;
  projects: Projects;
  variables: ProjectVariables;
}

type Auth = { host: string; token: string } | { host: string; jobToken: string };

/** @gitbeaker/rest and what it needs are a quarter of the CLI's code: loaded by the first API call, not by every start. */
let gitbeaker: Promise<typeof import('@gitbeaker/rest')> | undefined;

async function clients(auth: Auth, timeoutMs: number, guard: Guard): Promise<Clients> {
  const {
    Commits,
    Deployments,
    IssueNotes,
    Issues,
    Jobs,
    MergeRequestNotes,
    PipelineSchedules,
    PipelineScheduleVariables,
    PipelineTriggerTokens,
    ProjectProtectedEnvironments,
    Projects,
    ProjectVariables,
    ProtectedBranches,
    Users,
  } = await (gitbeaker ??= import('@gitbeaker/rest'));
  const make = <T extends object>(C: Client<T>) => guarded(new C({ ...auth, queryTimeout: timeoutMs }), guard);
  return {
    notes: make(MergeRequestNotes as unknown as Client<MergeRequestNotes>),
    commits: make(Commits as unknown as Client<Commits>),
    jobs: make(Jobs as unknown as Client<Jobs>),
    deployments: make(Deployments as unknown as Client<Deployments>),
    triggers: make(PipelineTriggerTokens as unknown as Client<PipelineTriggerTokens>),
    schedules: make(PipelineSchedules as unknown as Client<PipelineSchedules>),
    scheduleVariables: make(PipelineScheduleVariables as unknown as Client<PipelineScheduleVariables>),
    users: make(Users as unknown as Client<Users>),
    issues: make(Issues as unknown as Client<Issues>),
    issueNotes: make(IssueNotes as unknown as Client<IssueNotes>),
    protectedBranches: make(ProtectedBranches as unknown as Client<ProtectedBranches>),
    protectedEnvironments: make(ProjectProtectedEnvironments as unknown as Client<ProjectProtectedEnvironments>),
    projects: make(Projects as unknown as Client<Projects>),
    variables: make(ProjectVariables as unknown as Client<ProjectVariables>),
  };
}

/** Runs one API call (`what`: the resource and method); may refuse it or turn its failure into another. */
type Guard = <T>(what: string, call: () => Promise<T>) => Promise<T>;

/** The resource with every method call passed through `guard`. */
function guarded<T extends object>(resource: T, guard: Guard): T {
  const name = resource.constructor.name;
  return new Proxy(resource, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) =>
        guard(`${name}.${String(property)}`, () => Promise.resolve(value.apply(target, args) as unknown));
    },
  });
}

/** A call that got no HTTP answer at all (timed out, refused, reset, unresolvable), as opposed to an HTTP error. */
function unanswered(error: unknown): boolean {
  if (error instanceof ExocompError || apiStatus(error) !== undefined) return false;
  const name = error instanceof Error ? error.name : '';
  return name === 'GitbeakerTimeoutError' || name === 'TypeError' || name === 'AbortError' || name === 'TimeoutError';
}

/** Why a call got no answer, from the error fetch (undici) gives: its cause's code or message. */
function causeOf(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause;
  const said = typeof cause?.code === 'string' ? cause.code : typeof cause?.message === 'string' ? cause.message : '';
  return said || (error instanceof Error ? error.message : String(error));
}

/** Required calls (the approval, the pipeline trigger) wait this long for an answer, as GitLab's own requests may. */
const REQUIRED_CALL_TIMEOUT_MS = 60_000;
/**
 * Optional calls (the merge request lookup, the note, the gate's setup check, the drift issue) of one job share
 * this budget: each waits at most what is left of it, and once one got no answer the rest are skipped at once.
 */
export const OPTIONAL_CALLS_BUDGET_MS = 8_000;

/** The optional calls' budget of one job, shared by every client made for them. */
class OptionalBudget {
  private spentMs = 0;
  /** Why the API gave no answer, once it did not. */
  silence: string | undefined;
  get leftMs(): number {
    return Math.max(0, OPTIONAL_CALLS_BUDGET_MS - this.spentMs);
  }
  spend(ms: number): void {
    this.spentMs += ms;
  }
}

/** A string field of an API object; '' when it is missing or not text. */
function text(value: unknown, fallback = ''): string {
  return typeof value === 'string' ? value : typeof value === 'number' ? String(value) : fallback;
}

/** The username of an API user object. */
function username(user: unknown): string {
  return typeof user === 'object' && user !== null ? text((user as { username?: unknown }).username) : '';
}

/** The API v4 root of an instance given by its URL (`--gitlab-url`, CI_SERVER_URL), as GitLab serves it. */
export function gitlabApiRoot(serverUrl: string): string {
  return `${serverUrl.replace(/\/+$/, '')}/api/v4`;
}

/**
 * @gitbeaker/rest takes the instance and appends `/api/v4` itself; GitLab's CI_API_V4_URL is always that
 * (`<external URL>/api/v4`, also under a relative URL root). An API root of another form is refused, never guessed.
 */
function gitbeakerHost(apiUrl: string): string {
  const host = /^(https?:\/\/.+)\/api\/v4\/*$/.exec(apiUrl)?.[1];
  if (host === undefined)
    throw new ExocompError('usage', `the GitLab API root ${JSON.stringify(apiUrl)} does not end in /api/v4`, {
      help: 'leave CI_API_V4_URL as GitLab sets it (https://<instance>/api/v4)',
    });
  return host;
}

/** The HTTP status of a failed API call, when it got that far. */
export function apiStatus(error: unknown): number | undefined {
  const cause = (error as { cause?: { response?: { status?: unknown } } } | undefined)?.cause;
  return typeof cause?.response?.status === 'number' ? cause.response.status : undefined;
}

export class GitLabApi {
  private readonly jobAuth: Auth | undefined;
  private readonly tokenAuth: Auth | undefined;
  private jobClients: Promise<Clients> | undefined;
  private tokenClients: Promise<Clients> | undefined;
  private readonly tokens: { jobToken?: string | undefined; accessToken?: string | undefined };
  private readonly secrets: SecretRegistry;
  /** Set on the API of optional calls (`optional()`): their shared budget. */
  private readonly budget: OptionalBudget | undefined;
  private optionalApi: GitLabApi | undefined;

  constructor(
    /** The API v4 root: in a job, CI_API_V4_URL (see gitlabApiRoot). */
    readonly apiUrl: string,
    tokens: { jobToken?: string | undefined; accessToken?: string | undefined },
    secrets: SecretRegistry,
    budget?: OptionalBudget,
  ) {
    secrets.add(tokens.jobToken, tokens.accessToken);
    const host = gitbeakerHost(apiUrl);
    this.tokens = tokens;
    this.secrets = secrets;
    this.budget = budget;
    this.jobAuth = tokens.jobToken ? { host, jobToken: tokens.jobToken } : undefined;
    this.tokenAuth = tokens.accessToken ? { host, token: tokens.accessToken } : undefined;
  }

  /**
   * The same API for optional calls: bounded together by OPTIONAL_CALLS_BUDGET_MS, so an API that accepts
   * connections and never answers costs a job seconds once, not a minute per call; an unanswered call fails
   * naming the URL and the cause, and every later one fails at once with `quiet` set (said once, not per call).
   */
  optional(): GitLabApi {
    if (this.budget) return this;
    return (this.optionalApi ??= new GitLabApi(this.apiUrl, this.tokens, this.secrets, new OptionalBudget()));
  }

  get hasAccessToken(): boolean {
    return this.tokenAuth !== undefined;
  }

  private viaJob(): Promise<Clients> | undefined {
    return this.jobAuth && (this.jobClients ??= this.clientsFor(this.jobAuth));
  }

  private viaToken(): Promise<Clients> | undefined {
    return this.tokenAuth && (this.tokenClients ??= this.clientsFor(this.tokenAuth));
  }

  private clientsFor(auth: Auth): Promise<Clients> {
    const budget = this.budget;
    if (!budget) return clients(auth, REQUIRED_CALL_TIMEOUT_MS, (_what, call) => call());
    // Each request times out after the whole budget (gitbeaker's queryTimeout); one started after the budget
    // was spent, or after a call got no answer, is not made.
    return clients(auth, OPTIONAL_CALLS_BUDGET_MS, async (what, call) => {
      if (budget.silence === undefined && budget.leftMs === 0)
        budget.silence = `GitLab's API at ${this.apiUrl} took the ${OPTIONAL_CALLS_BUDGET_MS / 1000} s budget of this job's optional calls`;
      if (budget.silence !== undefined) throw new UnansweredError(`skipped ${what}: ${budget.silence}`, true);
      const started = Date.now();
      try {
        return await call();
      } catch (error) {
        if (!unanswered(error)) throw error;
        budget.silence ??= `GitLab's API at ${this.apiUrl} gave no answer (${causeOf(error)})`;
        throw new UnansweredError(`${what}: ${budget.silence}`, false, error);
      } finally {
        budget.spend(Date.now() - started);
      }
    });
  }

  /** The access token's clients; fails naming the variable when there is none. */
  private async token(what: string): Promise<Clients> {
    const viaToken = this.viaToken();
    if (viaToken) return viaToken;
    throw new ExocompError('permission', `${what} needs an access token: GitLab's job token cannot do it`, {
      help: `set the CI/CD variable ${GITLAB_TOKEN_VARIABLE} (masked) to a project access token with the api scope`,
    });
  }

  /** Reads go through the access token when there is one, else the job token (where GitLab allows it). */
  private reader(what: string): Promise<Clients> {
    return this.viaToken() ?? this.viaJob() ?? this.token(what);
  }

  async currentUser(): Promise<string> {
    const user = await (await this.token('finding who the token is')).users.showCurrentUser();
    return String(user.username);
  }

  async notes(project: number | string, mergeRequestIid: number): Promise<Note[]> {
    const notes = await (
      await this.reader('reading merge request notes')
    ).notes.all(project, mergeRequestIid, { sort: 'asc', orderBy: 'created_at' });
    return notes.map((n) => ({
      id: Number(n.id),
      body: String(n.body),
      author: username(n.author),
      system: n.system === true,
    }));
  }

  async createNote(project: number | string, mergeRequestIid: number, body: string): Promise<number> {
    const note = await (await this.token('writing a merge request note')).notes.create(project, mergeRequestIid, body);
    return Number(note.id);
  }

  async editNote(project: number | string, mergeRequestIid: number, noteId: number, body: string): Promise<void> {
    await (await this.token('editing a merge request note')).notes.edit(project, mergeRequestIid, noteId, { body });
  }

  async deleteNote(project: number | string, mergeRequestIid: number, noteId: number): Promise<void> {
    await (await this.token('deleting a merge request note')).notes.remove(project, mergeRequestIid, noteId);
  }

  /** Open merge requests whose head is `sha`, newest first. */
  async mergeRequestsOfCommit(project: number | string, sha: string): Promise<number[]> {
    const mrs = await (
      await this.reader('finding the merge request of a commit')
    ).commits.allMergeRequests(project, sha);
    return mrs
      .filter((m) => m.state === 'opened')
      .map((m) => Number(m.iid))
      .sort((a, b) => b - a);
  }

  /** The job's status, or undefined when the API cannot tell (no access token, job gone). */
  async jobStatus(project: number | string, jobId: number): Promise<string | undefined> {
    const viaToken = this.viaToken();
    if (!viaToken) return undefined;
    try {
      const job = await (await viaToken).jobs.show(project, jobId);
      return String(job.status);
    } catch (error) {
      if (apiStatus(error) === 404) return undefined;
      throw error;
    }
  }

  /** The deployment the job `jobId` makes to `environment`, if it makes one. */
  async deploymentOfJob(project: number | string, environment: string, jobId: number): Promise<Deployment | undefined> {
    const all = await (
      await this.reader('reading deployments')
    ).deployments.all(project, { environment, orderBy: 'id', sort: 'desc' } as never);
    const found = all.find((d) => Number((d.deployable as { id?: unknown } | null)?.id) === jobId);
    if (!found) return undefined;
    const approvals = Array.isArray(found.approvals)
      ? (found.approvals as Array<{ user?: { username?: unknown }; status?: unknown; comment?: unknown }>)
      : [];
    return {
      id: Number(found.id),
      status: String(found.status),
      environment,
      jobId,
      user: username(found.user),
      pendingApprovalCount: typeof found.pending_approval_count === 'number' ? found.pending_approval_count : undefined,
      approvals: approvals.map((a) => ({
        user: username(a.user),
        status: a.status === 'approved' ? 'approved' : 'rejected',
        comment: typeof a.comment === 'string' ? a.comment : null,
      })),
    };
  }

  /** Starts a pipeline on `ref` with `variables`, as a downstream pipeline of this job (job token). */
  async triggerPipeline(
    project: number | string,
    ref: string,
    variables: Record<string, string>,
    token: string,
  ): Promise<{ id: number; webUrl: string }> {
    const clientsToUse = await (this.viaJob() ?? this.token('triggering a pipeline'));
    const pipeline = await clientsToUse.triggers.trigger(project, ref, token, { variables });
    return { id: Number(pipeline.id), webUrl: String(pipeline.web_url) };
  }

  async schedules(project: number | string): Promise<Schedule[]> {
    const all = await (await this.token('listing pipeline schedules')).schedules.all(project);
    return all.map((s) => toSchedule(s));
  }

  async schedule(project: number | string, id: number): Promise<Schedule> {
    return toSchedule(await (await this.token('reading a pipeline schedule')).schedules.show(project, id));
  }

  async createSchedule(
    project: number | string,
    spec: { description: string; ref: string; cron: string; variables: Record<string, string> },
  ): Promise<Schedule> {
    const api = await this.token('creating a pipeline schedule');
    const created = toSchedule(
      await api.schedules.create(project, spec.description, spec.ref, spec.cron, { cronTimezone: 'UTC', active: true }),
    );
    for (const [key, value] of Object.entries(spec.variables))
      await api.scheduleVariables.create(project, created.id, key, value);
    return { ...created, variables: Object.entries(spec.variables).map(([key, value]) => ({ key, value })) };
  }

  /** Open issues carrying `label`. GitLab's job token cannot read issues: this needs the access token. */
  async openIssues(project: number | string, label: string): Promise<ProjectIssue[]> {
    const all = await (
      await this.token('reading issues')
    ).issues.all({ projectId: project, labels: label, state: 'opened' });
    return all.map((i) => toIssue(i));
  }

  async createIssue(
    project: number | string,
    spec: { title: string; description: string; labels: string[] },
  ): Promise<ProjectIssue> {
    return toIssue(
      await (
        await this.token('opening an issue')
      ).issues.create(project, spec.title, { description: spec.description, labels: spec.labels.join(',') }),
    );
  }

  async editIssue(
    project: number | string,
    iid: number,
    change: { description?: string; close?: boolean },
  ): Promise<ProjectIssue> {
    const options = {
      ...(change.description !== undefined ? { description: change.description } : {}),
      ...(change.close ? { stateEvent: 'close' as const } : {}),
    };
    return toIssue(await (await this.token('editing an issue')).issues.edit(project, iid, options));
  }

  async createIssueNote(project: number | string, iid: number, body: string): Promise<void> {
    await (await this.token('commenting on an issue')).issueNotes.create(project, iid, body);
  }

  /** Protected branches as defined (wildcards as written): GET /projects/:id/protected_branches. */
  async protectedBranches(project: number | string): Promise<ProtectedBranch[]> {
    const all = await (await this.token('reading protected branches')).protectedBranches.all(project);
    return z.array(protectedBranchSchema).parse(all);
  }

  /** A protected environment's required approvals; undefined when the environment is not protected (404). */
  async protectedEnvironmentApprovals(project: number | string, name: string): Promise<number | undefined> {
    try {
      // gitbeaker builds this one path without encoding it (unlike its other routes): a `group/project` path or an
      // environment name with `/` would reach another route, so both are encoded here.
      const found = await (
        await this.token('reading protected environments')
      ).protectedEnvironments.show(encodeURIComponent(String(project)), encodeURIComponent(name));
      return protectedEnvironmentSchema.parse(found).required_approval_count;
    } catch (error) {
      if (apiStatus(error) === 404) return undefined;
      throw error;
    }
  }

  /** The project's default branch and "Allow Git push requests to the repository" (GitLab 17.2+; absent: off). */
  async projectSettings(project: number | string): Promise<{ defaultBranch: string; jobTokenPush: boolean }> {
    const found = projectSchema.parse(await (await this.token('reading the project')).projects.show(project));
    return { defaultBranch: found.default_branch, jobTokenPush: found.ci_push_repository_for_job_token_allowed };
  }

  /** The project's CI/CD variables: names and flags only, the values are dropped here. */
  async variableFlags(project: number | string): Promise<VariableFlags[]> {
    const all = await (await this.token('reading CI/CD variables')).variables.all(project);
    return z
      .array(variableFlagsSchema)
      .parse(all)
      .map(({ variable_type, ...flags }) => ({ ...flags, file: variable_type === 'file' }));
  }

  /** When the schedule last started a pipeline (GET …/pipeline_schedules/:id/pipelines); undefined: never. */
  async lastScheduledPipeline(project: number | string, scheduleId: number): Promise<string | undefined> {
    const pipelines = await (
      await this.token('reading the pipelines of a schedule')
    ).schedules.allTriggeredPipelines(project, scheduleId);
    const times = z.array(z.looseObject({ created_at: z.string() })).parse(pipelines);
    return times
      .map((pipeline) => pipeline.created_at)
      .sort()
      .at(-1);
  }

  async removeSchedule(project: number | string, id: number): Promise<void> {
    await (await this.token('removing a pipeline schedule')).schedules.remove(project, id);
  }
}

/** GitLab's access levels: 0 no one, 30 Developer, 40 Maintainer, 60 admin; users, groups and deploy keys carry an id. */
const accessLevelSchema = z.looseObject({
  access_level: z.number().int(),
  user_id: z.number().nullish(),
  group_id: z.number().nullish(),
  deploy_key_id: z.number().nullish(),
});

const protectedBranchSchema = z
  .looseObject({
    name: z.string(),
    push_access_levels: z.array(accessLevelSchema).default([]),
    allow_force_push: z.boolean().default(false),
  })
  .transform((branch) => {
    const named = (level: z.output<typeof accessLevelSchema>) =>
      level.user_id != null || level.group_id != null || level.deploy_key_id != null;
    return {
      name: branch.name,
      pushLevels: branch.push_access_levels.filter((level) => !named(level)).map((level) => level.access_level),
      pushByOthers: branch.push_access_levels.some(named),
      allowForcePush: branch.allow_force_push,
    };
  });
export type ProtectedBranch = z.output<typeof protectedBranchSchema>;

const protectedEnvironmentSchema = z.looseObject({ required_approval_count: z.number().int().default(0) });

const projectSchema = z.looseObject({
  default_branch: z.string(),
  ci_push_repository_for_job_token_allowed: z.boolean().default(false),
});

/** `value` is deliberately not part of it: z.object drops it. */
/** GET …/variables: `variable_type` is `env_var` or `file` (https://docs.gitlab.com/api/project_level_variables/). */
const variableFlagsSchema = z.object({
  key: z.string(),
  variable_type: z.enum(['env_var', 'file']),
  protected: z.boolean(),
  masked: z.boolean(),
});

function toIssue(i: Record<string, unknown>): ProjectIssue {
  return {
    iid: Number(i.iid),
    description: text(i.description),
    author: username(i.author),
    state: text(i.state),
    webUrl: text(i.web_url),
  };
}

function toSchedule(s: Record<string, unknown>): Schedule {
  const variables = Array.isArray(s.variables)
    ? (s.variables as Array<{ key?: unknown; value?: unknown }>).map((v) => ({
        key: text(v.key),
        value: text(v.value),
      }))
    : undefined;
  return {
    id: Number(s.id),
    description: text(s.description),
    ref: text(s.ref),
    cron: text(s.cron),
    cronTimezone: text(s.cron_timezone, 'UTC'),
    active: s.active === true,
    owner: username(s.owner),
    variables,
  };
}
