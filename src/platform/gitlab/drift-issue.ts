/**
 * GitLab project issues as the issue tracker of the sticky drift issue
 * (src/app/drift-issue.ts). The issue is ours when the access token's own user
 * wrote it, as with the status note. GitLab's job token cannot read or write
 * issues: without EXOCOMP_GITLAB_TOKEN this is a `refused` outcome (the report
 * stays in the job log and its artifact), never a failure.
 */
import { describeDriftIssueOutcome, publishDriftIssue, type DriftIssueOutcome } from '../../app/drift-issue.js';
import type { IssueTracker } from '../../app/ports/issue-tracker.js';
import type { DriftReport } from '../../domain/drift.js';
import type { SecretRegistry } from '../../app/secrets.js';
import { apiStatus, GitLabApi, GITLAB_TOKEN_VARIABLE } from './api.js';
import { readGitLabJob } from './job.js';

export function gitlabIssueTracker(api: GitLabApi, project: number | string): IssueTracker {
  const ref = (issue: { iid: number; webUrl: string }) => ({ number: issue.iid, url: issue.webUrl });
  return {
    openIssues: async (label) => (await api.openIssues(project, label)).map((i) => ({ number: i.iid, body: i.description, author: i.author })),
    open: async ({ title, body, label }) => ref(await api.createIssue(project, { title, description: body, labels: [label] })),
    edit: async (number, body) => ref(await api.editIssue(project, number, { description: body })),
    close: async (number, comment) => {
      await api.createIssueNote(project, number, comment);
      return ref(await api.editIssue(project, number, { close: true }));
    },
  };
}

export type GitLabDriftIssueOutcome = (DriftIssueOutcome & { kind: 'published'; line: string | undefined }) | { kind: 'refused'; reason: string };

export async function publishGitLabDriftIssue(
  api: GitLabApi,
  project: number | string,
  report: DriftReport,
  options: { runUrl: string; redact(text: string): string },
): Promise<GitLabDriftIssueOutcome> {
  if (!api.hasAccessToken) {
    return { kind: 'refused', reason: `no drift issue: GitLab's job token cannot write issues; set ${GITLAB_TOKEN_VARIABLE} (api scope) to get one` };
  }
  try {
    const author = await api.currentUser();
    const outcome = await publishDriftIssue(gitlabIssueTracker(api, project), report, { ...options, author });
    return { kind: 'published', ...outcome, line: describeDriftIssueOutcome(outcome) };
  } catch (error) {
    const status = apiStatus(error);
    if (status === 401 || status === 403) {
      return { kind: 'refused', reason: `no drift issue: GitLab refused the token (HTTP ${status}); ${GITLAB_TOKEN_VARIABLE} needs the api scope and at least the Reporter role` };
    }
    throw error;
  }
}

/** The GitLab job a `drift --gitlab-issue` runs in, read (and checked) before anything else happens. */
export function gitlabIssueContext(env: NodeJS.ProcessEnv, secrets: SecretRegistry): { api: GitLabApi; project: number; runUrl: string } {
  const job = readGitLabJob(env);
  const api = new GitLabApi(job.serverUrl, { jobToken: job.jobToken, accessToken: env[GITLAB_TOKEN_VARIABLE] || undefined }, secrets);
  return { api, project: job.projectId, runUrl: job.jobUrl };
}
