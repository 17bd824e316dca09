/**
 * The GitLab CI job this process runs in, from the predefined CI/CD variables,
 * validated once. Nothing here calls the API.
 */
import { tmpdir } from 'node:os';
import { z } from 'zod';
import { ExocompError } from '../../domain/errors.js';
import type { Trigger } from '../../domain/workflow.js';

export interface GitLabJob {
  serverUrl: string;
  apiUrl: string;
  projectId: number;
  /** `group/sub/name` */
  projectPath: string;
  pipelineId: number;
  pipelineUrl: string;
  pipelineSource: string;
  jobId: number;
  jobName: string;
  jobUrl: string;
  /** Who started the job (for a manual job: who ran it). */
  userLogin: string;
  sha: string;
  refName: string;
  /** CI_DEFAULT_BRANCH (GitLab sets it in every pipeline). */
  defaultBranch: string | undefined;
  /** The merge request of a merge-request pipeline; other pipelines look it up from the commit. */
  mergeRequestIid: number | undefined;
  environment: string | undefined;
  jobToken: string;
  projectDir: string;
  tempDir: string;
}

const number = z.coerce.number().int().positive();
const envSchema = z.object({
  CI_SERVER_URL: z.string().url(),
  CI_API_V4_URL: z.string().url().optional(),
  CI_PROJECT_ID: number,
  CI_PROJECT_PATH: z.string().regex(/^[^\s/]+(\/[^\s/]+)+$/, 'must be group/project'),
  CI_PIPELINE_ID: number,
  CI_PIPELINE_URL: z.string().optional(),
  CI_PIPELINE_SOURCE: z.string().default('push'),
  CI_JOB_ID: number,
  CI_JOB_NAME: z.string().default('job'),
  CI_JOB_URL: z.string().optional(),
  CI_JOB_TOKEN: z.string().min(1),
  GITLAB_USER_LOGIN: z.string().min(1),
  CI_COMMIT_SHA: z.string().default(''),
  CI_COMMIT_REF_NAME: z.string().default(''),
  CI_MERGE_REQUEST_IID: number.optional(),
  CI_DEFAULT_BRANCH: z.string().optional(),
  CI_ENVIRONMENT_NAME: z.string().optional(),
  CI_BUILDS_DIR: z.string().optional(),
});

/** Reads the job from GitLab's predefined variables; throws naming the first missing or malformed one. */
export function readGitLabJob(env: NodeJS.ProcessEnv = process.env): GitLabJob {
  const parsed = envSchema.safeParse(Object.fromEntries(Object.entries(env).filter(([, v]) => v !== '')));
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ExocompError(
      'usage',
      `the GitLab CI variable ${String(issue?.path[0] ?? '?')} is missing or malformed (${issue?.message ?? 'invalid'})`,
      {
        help: 'run this inside a GitLab CI job (the runner sets CI_SERVER_URL, CI_PROJECT_ID, CI_PIPELINE_ID, CI_JOB_ID, CI_JOB_TOKEN, GITLAB_USER_LOGIN)',
      },
    );
  }
  const v = parsed.data;
  const projectUrl = `${v.CI_SERVER_URL.replace(/\/+$/, '')}/${v.CI_PROJECT_PATH}`;
  return {
    serverUrl: v.CI_SERVER_URL.replace(/\/+$/, ''),
    apiUrl: (v.CI_API_V4_URL ?? `${v.CI_SERVER_URL.replace(/\/+$/, '')}/api/v4`).replace(/\/+$/, ''),
    projectId: v.CI_PROJECT_ID,
    projectPath: v.CI_PROJECT_PATH,
    pipelineId: v.CI_PIPELINE_ID,
    pipelineUrl: v.CI_PIPELINE_URL ?? `${projectUrl}/-/pipelines/${v.CI_PIPELINE_ID}`,
    pipelineSource: v.CI_PIPELINE_SOURCE,
    jobId: v.CI_JOB_ID,
    jobName: v.CI_JOB_NAME,
    jobUrl: v.CI_JOB_URL ?? `${projectUrl}/-/jobs/${v.CI_JOB_ID}`,
    userLogin: v.GITLAB_USER_LOGIN,
    sha: v.CI_COMMIT_SHA,
    refName: v.CI_COMMIT_REF_NAME,
    defaultBranch: v.CI_DEFAULT_BRANCH,
    mergeRequestIid: v.CI_MERGE_REQUEST_IID,
    environment: v.CI_ENVIRONMENT_NAME || undefined,
    jobToken: v.CI_JOB_TOKEN,
    // A job's script starts in CI_PROJECT_DIR; the directory it runs in is the one that holds the project's files.
    projectDir: process.cwd(),
    tempDir: tmpdir(),
  };
}

/** The lease holder id of this job: `gitlab:<project>:<pipeline>:<job>`. */
export function gitlabHolderId(job: Pick<GitLabJob, 'projectPath' | 'pipelineId' | 'jobId'>): string {
  return `gitlab:${job.projectPath}:${job.pipelineId}:${job.jobId}`;
}

/** Parses a holder id written by gitlabHolderId; undefined for any other holder. */
export function parseGitLabHolderId(
  id: string,
): { projectPath: string; pipelineId: number; jobId: number } | undefined {
  const match = /^gitlab:([^:\s]+):(\d+):(\d+)$/.exec(id);
  if (!match) return undefined;
  return { projectPath: match[1] as string, pipelineId: Number(match[2]), jobId: Number(match[3]) };
}

/** What a workflow created in this job records as its trigger. */
export function gitlabTrigger(job: GitLabJob): Trigger {
  return {
    kind: 'gitlab',
    runId: job.pipelineId,
    runUrl: job.pipelineUrl,
    ...(job.sha ? { sha: job.sha } : {}),
    ...(job.mergeRequestIid !== undefined ? { pullRequest: job.mergeRequestIid } : {}),
    repository: job.projectPath,
  };
}
