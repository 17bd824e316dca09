/** GitHub issues as the issue tracker of the sticky drift issue (src/app/drift-issue.ts). */
import { publishDriftIssue as publish, type DriftIssueOutcome } from '../../app/drift-issue.js';
import type { IssueTracker } from '../../app/ports/issue-tracker.js';
import type { DriftReport } from '../../domain/drift.js';
import type { GitHubPort, RepoRef } from './port.js';

export function githubIssueTracker(github: GitHubPort, repo: RepoRef): IssueTracker {
  const ref = (issue: { number: number; htmlUrl: string }) => ({ number: issue.number, url: issue.htmlUrl });
  return {
    openIssues: async (label) => (await github.listOpenIssues(repo, label)).map((i) => ({ number: i.number, body: i.body, author: i.author })),
    open: async ({ title, body, label }) => ref(await github.createIssue(repo, { title, body, labels: [label] })),
    edit: async (number, body) => ref(await github.updateIssue(repo, number, { body })),
    close: async (number, comment) => {
      await github.createIssueComment(repo, number, comment);
      return ref(await github.updateIssue(repo, number, { state: 'closed' }));
    },
  };
}

export function publishDriftIssue(
  github: GitHubPort,
  repo: RepoRef,
  report: DriftReport,
  options: { author: string; runUrl: string; redact(text: string): string },
): Promise<DriftIssueOutcome> {
  return publish(githubIssueTracker(github, repo), report, options);
}
