/**
 * GitLab project issues as the issue tracker of the sticky drift issue
 * (src/app/drift/drift-issue.ts). The issue is ours when the access token's own user
 * wrote it, as with the status note. GitLab's job token cannot read or write
 * issues: without EXOCOMP_GITLAB_TOKEN this is a `refused` outcome (the report
 * stays in the job log and its artifact), never a failure: the refusals are
 * `permission` errors, which publishDriftIssueTo (src/app/drift/drift-issue.ts) reports.
 */
import type { DriftIssueTarget } from '../../app/drift/drift-issue.js';
import type { IssueTracker } from '../../app/ports/issue-tracker.js';
import type { SecretRegistry } from '../../app/runtime/secrets.js';
import { ExocompError } from '../../domain/errors.js';
import { apiStatus, GitLabApi, GITLAB_TOKEN_VARIABLE } from './api.js';
import { readGitLabJob } from './job.js';

export function gitlabIssueTracker(api: GitLabApi, project: number | string): IssueTracker {
  const ref = (issue: { iid: number; webUrl: string }) => ({ number: issue.iid, url: issue.webUrl });
  return {
    openIssues: async (label) =>
      (await api.openIssues(project, label)).map((i) => ({ number: i.iid, body: i.description, author: i.author })),
    open: async ({ title, body, label }) =>
      ref(await api.createIssue(project, { title, description: body, labels: [label] })),
    edit: async (number, body) => ref(await api.editIssue(project, number, { description: body })),
    close: async (number, comment) => {
      await api.createIssueNote(project, number, comment);
      return ref(await api.editIssue(project, number, { close: true }));
    },
  };
}

/** A refusal of the token (HTTP 401/403) is a `permission` error: the job loses only the issue. */
async function orRefused<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    const status = apiStatus(error);
    if (status === 401 || status === 403) {
      throw new ExocompError(
        'permission',
        `no drift issue: GitLab refused the token (HTTP ${status}); ${GITLAB_TOKEN_VARIABLE} needs the api scope and at least the Reporter role`,
      );
    }
    throw error;
  }
}

/** The project's issues as the place of the sticky drift issue; ours are those the access token's own user wrote. */
export function gitlabDriftIssueTarget(api: GitLabApi, project: number | string, runUrl: string): DriftIssueTarget {
  const tracker = gitlabIssueTracker(api, project);
  return {
    tracker: {
      openIssues: (label) => orRefused(() => tracker.openIssues(label)),
      open: (issue) => orRefused(() => tracker.open(issue)),
      edit: (number, body) => orRefused(() => tracker.edit(number, body)),
      close: (number, comment) => orRefused(() => tracker.close(number, comment)),
    },
    author: async () => {
      if (!api.hasAccessToken) {
        throw new ExocompError(
          'permission',
          `no drift issue: GitLab's job token cannot write issues; set ${GITLAB_TOKEN_VARIABLE} (api scope) to get one`,
        );
      }
      return orRefused(() => api.currentUser());
    },
    runUrl,
  };
}

/** The sticky drift issue of the GitLab project a `drift --gitlab-issue` job runs in (the job is read, and checked, before anything else happens). */
export function gitlabJobDriftIssue(env: NodeJS.ProcessEnv, secrets: SecretRegistry): DriftIssueTarget {
  const job = readGitLabJob(env);
  const api = new GitLabApi(
    job.apiUrl,
    { jobToken: job.jobToken, accessToken: env[GITLAB_TOKEN_VARIABLE] || undefined },
    secrets,
  ).optional();
  return gitlabDriftIssueTarget(api, job.projectId, job.jobUrl);
}
