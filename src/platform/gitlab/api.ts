/**
 * The one adapter to GitLab's REST API (@gitbeaker/rest). Two identities: the
 * job token, which GitLab lets reach only a few routes (reading notes, the
 * commit's merge requests, deployments, the pipeline trigger), and an optional
 * access token (EXOCOMP_GITLAB_TOKEN) for the rest (writing notes, jobs,
 * schedules, issues). A call that needs the access token and has none says so.
 */
import { Commits, Deployments, IssueNotes, Issues, Jobs, MergeRequestNotes, PipelineSchedules, PipelineScheduleVariables, PipelineTriggerTokens, Users } from '@gitbeaker/rest';
import { ExocompError } from '../../domain/errors.js';
import type { SecretRegistry } from '../../app/secrets.js';

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
}

function clients(auth: { host: string; token?: string; jobToken?: string }): Clients {
  const make = <T>(C: Client<T>) => new C({ ...auth, queryTimeout: 60_000 });
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
  };
}

/** A string field of an API object; '' when it is missing or not text. */
function text(value: unknown, fallback = ''): string {
  return typeof value === 'string' ? value : typeof value === 'number' ? String(value) : fallback;
}

/** The username of an API user object. */
function username(user: unknown): string {
  return typeof user === 'object' && user !== null ? text((user as { username?: unknown }).username) : '';
}

/** The HTTP status of a failed API call, when it got that far. */
export function apiStatus(error: unknown): number | undefined {
  const cause = (error as { cause?: { response?: { status?: unknown } } } | undefined)?.cause;
  return typeof cause?.response?.status === 'number' ? cause.response.status : undefined;
}

export class GitLabApi {
  private readonly viaJob: Clients | undefined;
  private readonly viaToken: Clients | undefined;

  constructor(
    /** The instance URL (CI_SERVER_URL); the API is under /api/v4. */
    readonly serverUrl: string,
    tokens: { jobToken?: string | undefined; accessToken?: string | undefined },
    secrets: SecretRegistry,
  ) {
    secrets.add(tokens.jobToken, tokens.accessToken);
    this.viaJob = tokens.jobToken ? clients({ host: serverUrl, jobToken: tokens.jobToken }) : undefined;
    this.viaToken = tokens.accessToken ? clients({ host: serverUrl, token: tokens.accessToken }) : undefined;
  }

  get hasAccessToken(): boolean {
    return this.viaToken !== undefined;
  }

  /** The access token's clients; throws naming the variable when there is none. */
  private token(what: string): Clients {
    if (this.viaToken) return this.viaToken;
    throw new ExocompError('permission', `${what} needs an access token: GitLab's job token cannot do it`, {
      help: `set the CI/CD variable ${GITLAB_TOKEN_VARIABLE} (masked) to a project access token with the api scope`,
    });
  }

  /** Reads go through the access token when there is one, else the job token (where GitLab allows it). */
  private reader(what: string): Clients {
    return this.viaToken ?? this.viaJob ?? this.token(what);
  }

  async currentUser(): Promise<string> {
    const user = await this.token('finding who the token is').users.showCurrentUser();
    return String(user.username);
  }

  async notes(project: number | string, mergeRequestIid: number): Promise<Note[]> {
    const notes = await this.reader('reading merge request notes').notes.all(project, mergeRequestIid, { sort: 'asc', orderBy: 'created_at' });
    return notes.map((n) => ({ id: Number(n.id), body: String(n.body), author: username(n.author), system: n.system === true }));
  }

  async createNote(project: number | string, mergeRequestIid: number, body: string): Promise<number> {
    const note = await this.token('writing a merge request note').notes.create(project, mergeRequestIid, body);
    return Number(note.id);
  }

  async editNote(project: number | string, mergeRequestIid: number, noteId: number, body: string): Promise<void> {
    await this.token('editing a merge request note').notes.edit(project, mergeRequestIid, noteId, { body });
  }

  async deleteNote(project: number | string, mergeRequestIid: number, noteId: number): Promise<void> {
    await this.token('deleting a merge request note').notes.remove(project, mergeRequestIid, noteId);
  }

  /** Open merge requests whose head is `sha`, newest first. */
  async mergeRequestsOfCommit(project: number | string, sha: string): Promise<number[]> {
    const mrs = await this.reader('finding the merge request of a commit').commits.allMergeRequests(project, sha);
    return mrs
      .filter((m) => m.state === 'opened')
      .map((m) => Number(m.iid))
      .sort((a, b) => b - a);
  }

  /** The job's status, or undefined when the API cannot tell (no access token, job gone). */
  async jobStatus(project: number | string, jobId: number): Promise<string | undefined> {
    if (!this.viaToken) return undefined;
    try {
      const job = await this.viaToken.jobs.show(project, jobId);
      return String(job.status);
    } catch (error) {
      if (apiStatus(error) === 404) return undefined;
      throw error;
    }
  }

  /** The deployment the job `jobId` makes to `environment`, if it makes one. */
  async deploymentOfJob(project: number | string, environment: string, jobId: number): Promise<Deployment | undefined> {
    const all = await this.reader('reading deployments').deployments.all(project, { environment, orderBy: 'id', sort: 'desc' } as never);
    const found = all.find((d) => Number((d.deployable as { id?: unknown } | null)?.id) === jobId);
    if (!found) return undefined;
    const approvals = Array.isArray(found.approvals) ? (found.approvals as Array<{ user?: { username?: unknown }; status?: unknown; comment?: unknown }>) : [];
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
  async triggerPipeline(project: number | string, ref: string, variables: Record<string, string>, token: string): Promise<{ id: number; webUrl: string }> {
    const clientsToUse = this.viaJob ?? this.token('triggering a pipeline');
    const pipeline = await clientsToUse.triggers.trigger(project, ref, token, { variables });
    return { id: Number(pipeline.id), webUrl: String(pipeline.web_url) };
  }

  async schedules(project: number | string): Promise<Schedule[]> {
    const all = await this.token('listing pipeline schedules').schedules.all(project);
    return all.map((s) => toSchedule(s));
  }

  async schedule(project: number | string, id: number): Promise<Schedule> {
    return toSchedule(await this.token('reading a pipeline schedule').schedules.show(project, id));
  }

  async createSchedule(project: number | string, spec: { description: string; ref: string; cron: string; variables: Record<string, string> }): Promise<Schedule> {
    const api = this.token('creating a pipeline schedule');
    const created = toSchedule(await api.schedules.create(project, spec.description, spec.ref, spec.cron, { cronTimezone: 'UTC', active: true }));
    for (const [key, value] of Object.entries(spec.variables)) await api.scheduleVariables.create(project, created.id, key, value);
    return { ...created, variables: Object.entries(spec.variables).map(([key, value]) => ({ key, value })) };
  }

  /** Open issues carrying `label`. GitLab's job token cannot read issues: this needs the access token. */
  async openIssues(project: number | string, label: string): Promise<ProjectIssue[]> {
    const all = await this.token('reading issues').issues.all({ projectId: project, labels: label, state: 'opened' });
    return all.map((i) => toIssue(i));
  }

  async createIssue(project: number | string, spec: { title: string; description: string; labels: string[] }): Promise<ProjectIssue> {
    return toIssue(await this.token('opening an issue').issues.create(project, spec.title, { description: spec.description, labels: spec.labels.join(',') }));
  }

  async editIssue(project: number | string, iid: number, change: { description?: string; close?: boolean }): Promise<ProjectIssue> {
    const options = { ...(change.description !== undefined ? { description: change.description } : {}), ...(change.close ? { stateEvent: 'close' as const } : {}) };
    return toIssue(await this.token('editing an issue').issues.edit(project, iid, options));
  }

  async createIssueNote(project: number | string, iid: number, body: string): Promise<void> {
    await this.token('commenting on an issue').issueNotes.create(project, iid, body);
  }

  async removeSchedule(project: number | string, id: number): Promise<void> {
    await this.token('removing a pipeline schedule').schedules.remove(project, id);
  }
}

function toIssue(i: Record<string, unknown>): ProjectIssue {
  return { iid: Number(i.iid), description: text(i.description), author: username(i.author), state: text(i.state), webUrl: text(i.web_url) };
}

function toSchedule(s: Record<string, unknown>): Schedule {
  const variables = Array.isArray(s.variables) ? (s.variables as Array<{ key?: unknown; value?: unknown }>).map((v) => ({ key: text(v.key), value: text(v.value) })) : undefined;
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
