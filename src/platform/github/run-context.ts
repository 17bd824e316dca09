/**
 * The run an action executes in, from the runner's GITHUB_* variables and the
 * event payload file, validated once.
 */
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename } from 'node:path';
import { z } from 'zod';
import { ExocompError } from '../../domain/errors.js';
import { parseScheduleTick, type ScheduleTick } from '../../domain/schedule-fires.js';
import type { Trigger } from '../../domain/workflow.js';
import type { RepoRef } from './port.js';

export interface RunContext {
  repository: RepoRef;
  /** owner/repo */
  slug: string;
  serverUrl: string;
  apiUrl: string;
  runId: number;
  runAttempt: number;
  runUrl: string;
  sha: string;
  /** The short ref name (branch or tag) the run is on. */
  refName: string;
  /** The full ref the run is on (`refs/heads/main`, `refs/tags/v1`, `refs/pull/7/merge`); '' when unknown. */
  ref: string;
  /** The repository's default branch, as the event payload names it. */
  defaultBranch: string | undefined;
  actor: string;
  /** Who started this attempt (differs from actor on a re-run). */
  triggeringActor: string;
  eventName: string;
  jobId: string;
  /** `.github/workflows/x.yml` file name of the running workflow, when known. */
  workflowFile: string | undefined;
  workflowRef: string | undefined;
  /** The pull request (or issue) the event is about. */
  pullRequest: number | undefined;
  /** The cron that fired a `schedule` event (five fields, as the workflow spells it). */
  schedule: string | undefined;
  runnerTemp: string;
  workspace: string;
  /** The job may request an OIDC token: `permissions: id-token: write` makes the runner set ACTIONS_ID_TOKEN_REQUEST_URL. */
  idToken: boolean;
}

const envSchema = z.object({
  GITHUB_REPOSITORY: z.string().regex(/^[^/\s]+\/[^/\s]+$/, 'must be owner/repo'),
  GITHUB_SERVER_URL: z.string().url().default('https://github.com'),
  GITHUB_API_URL: z.string().url().default('https://api.github.com'),
  GITHUB_RUN_ID: z.coerce.number().int().positive(),
  GITHUB_RUN_ATTEMPT: z.coerce.number().int().positive().default(1),
  GITHUB_SHA: z.string().default(''),
  GITHUB_REF_NAME: z.string().default(''),
  GITHUB_REF: z.string().default(''),
  GITHUB_ACTOR: z.string().min(1),
  GITHUB_TRIGGERING_ACTOR: z.string().optional(),
  GITHUB_EVENT_NAME: z.string().min(1),
  GITHUB_EVENT_PATH: z.string().optional(),
  GITHUB_JOB: z.string().default('job'),
  GITHUB_WORKFLOW_REF: z.string().optional(),
  RUNNER_TEMP: z.string().optional(),
  GITHUB_WORKSPACE: z.string().optional(),
  ACTIONS_ID_TOKEN_REQUEST_URL: z.string().optional(),
});

/** The few payload fields the actions read; everything else is ignored. */
const payloadSchema = z.looseObject({
  pull_request: z.looseObject({ number: z.number().int() }).optional(),
  issue: z.looseObject({ number: z.number().int() }).optional(),
  schedule: z.string().optional(),
  repository: z.looseObject({ default_branch: z.string().min(1).optional() }).optional(),
});

export function readRunContext(env: NodeJS.ProcessEnv, cwd: string): RunContext {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const names = [...new Set(parsed.error.issues.map((issue) => String(issue.path[0])))].join(', ');
    throw new ExocompError('usage', `this action must run inside a GitHub Actions job: ${names} missing or malformed`, {
      help: 'use it as a step of a workflow (`uses: exocomp/provision@v1`); locally, use the exocomp CLI',
    });
  }
  const e = parsed.data;
  const [owner = '', repo = ''] = e.GITHUB_REPOSITORY.split('/');
  const payload = readPayload(e.GITHUB_EVENT_PATH);
  const serverUrl = e.GITHUB_SERVER_URL.replace(/\/+$/, '');
  return {
    repository: { owner, repo },
    slug: e.GITHUB_REPOSITORY,
    serverUrl,
    apiUrl: e.GITHUB_API_URL.replace(/\/+$/, ''),
    runId: e.GITHUB_RUN_ID,
    runAttempt: e.GITHUB_RUN_ATTEMPT,
    runUrl: `${serverUrl}/${e.GITHUB_REPOSITORY}/actions/runs/${e.GITHUB_RUN_ID}/attempts/${e.GITHUB_RUN_ATTEMPT}`,
    sha: e.GITHUB_SHA,
    refName: e.GITHUB_REF_NAME,
    ref: e.GITHUB_REF,
    defaultBranch: payload.repository?.default_branch,
    actor: e.GITHUB_ACTOR,
    triggeringActor: e.GITHUB_TRIGGERING_ACTOR || e.GITHUB_ACTOR,
    eventName: e.GITHUB_EVENT_NAME,
    jobId: e.GITHUB_JOB,
    workflowFile: workflowFileOf(e.GITHUB_WORKFLOW_REF),
    workflowRef: e.GITHUB_WORKFLOW_REF,
    pullRequest: payload.pull_request?.number ?? payload.issue?.number,
    schedule: e.GITHUB_EVENT_NAME === 'schedule' ? payload.schedule : undefined,
    runnerTemp: e.RUNNER_TEMP ?? tmpdir(),
    workspace: e.GITHUB_WORKSPACE ?? cwd,
    idToken: (e.ACTIONS_ID_TOKEN_REQUEST_URL ?? '') !== '',
  };
}

function readPayload(path: string | undefined): z.infer<typeof payloadSchema> {
  if (path === undefined || path === '') return {};
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    throw new ExocompError('usage', `cannot read the event payload ${path}`, {
      help: 'GITHUB_EVENT_PATH must name the runner’s event JSON file',
    });
  }
  const parsed = payloadSchema.safeParse(data);
  return parsed.success ? parsed.data : {};
}

/** `owner/repo/.github/workflows/provision.yml@refs/heads/main` → `provision.yml`. */
export function workflowFileOf(workflowRef: string | undefined): string | undefined {
  if (!workflowRef) return undefined;
  const path = workflowRef.split('@')[0] ?? '';
  return path.includes('/.github/workflows/') ? basename(path) : undefined;
}

export function githubTrigger(run: RunContext, pullRequest = run.pullRequest): Trigger {
  return {
    kind: 'github',
    runId: run.runId,
    runAttempt: run.runAttempt,
    runUrl: run.runUrl,
    ...(run.sha ? { sha: run.sha } : {}),
    ...(pullRequest !== undefined ? { pullRequest } : {}),
    repository: run.slug,
    ...(run.workflowRef ? { workflowRef: run.workflowRef } : {}),
  };
}

/** The schedule tick this run is, when a `schedule` event fired it and the step names its schedule: recorded, so missed ticks show. */
export function scheduleTick(run: RunContext, scheduleName: string | undefined): ScheduleTick | undefined {
  return scheduleName !== undefined && run.schedule !== undefined
    ? parseScheduleTick(scheduleName, run.schedule, { name: 'schedule-name', cron: 'the schedule event' })
    : undefined;
}
