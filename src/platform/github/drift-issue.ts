/** A drift job's report on GitHub, and GitHub issues as the issue tracker of the sticky drift issue (src/app/drift/drift-issue.ts). */
import type { DriftIssueTarget } from '../../app/drift/drift-issue.js';
import type { DriftJobResult } from '../../app/drift/drift-job.js';
import type { IssueTracker } from '../../app/ports/issue-tracker.js';
import { renderDriftMarkdown, renderDriftText } from '../../domain/drift-render.js';
import type { GitHubPort, RepoRef } from './port.js';
import type { Session } from './session.js';

export function githubIssueTracker(github: GitHubPort, repo: RepoRef): IssueTracker {
  const ref = (issue: { number: number; htmlUrl: string }) => ({ number: issue.number, url: issue.htmlUrl });
  return {
    openIssues: async (label) =>
      (await github.listOpenIssues(repo, label)).map((i) => ({ number: i.number, body: i.body, author: i.author })),
    open: async ({ title, body, label }) => ref(await github.createIssue(repo, { title, body, labels: [label] })),
    edit: async (number, body) => ref(await github.updateIssue(repo, number, { body })),
    close: async (number, comment) => {
      await github.createIssueComment(repo, number, comment);
      return ref(await github.updateIssue(repo, number, { state: 'closed' }));
    },
  };
}

/** The repository's issues as the place of the sticky drift issue; ours are those `author` (the issue-author input) wrote. */
export function githubDriftIssueTarget(
  github: GitHubPort,
  repo: RepoRef,
  author: string,
  runUrl: string,
): DriftIssueTarget {
  return { tracker: githubIssueTracker(github, repo), author: () => Promise.resolve(author), runUrl };
}

/**
 * A drift job's result on GitHub: the report in the log and the job summary,
 * the outputs, the sticky issue (a token without `issues: write` loses only
 * the issue), and the job failed when the use case says it fails.
 */
export async function publishDrift(session: Session<'drift'>, result: DriftJobResult): Promise<void> {
  const { platform, secrets } = session;
  const redact = (text: string) => secrets.redact(text);
  // Host output is in the report: printed as text, never a workflow command.
  const info = (message: string) => session.progress.emit({ type: 'info', message: redact(message) });
  info(renderDriftText(result.report).trimEnd());
  session.progress.flush();
  platform.setOutput('verdict', result.verdict);
  platform.setOutput('exit-code', String(result.exitCode));
  platform.setOutput('headline', result.headline);
  await platform.writeSummary(redact(renderDriftMarkdown(result.report)));
  // The report is in the summary; a token without `issues: write` loses only the issue.
  if (result.issue?.kind === 'refused')
    platform.log.warning(redact(`the drift issue was not updated: ${result.issue.reason}`));
  if (result.issue?.kind === 'published') {
    if (result.issue.number !== undefined) platform.setOutput('issue', String(result.issue.number));
    if (result.issue.line) info(result.issue.line);
  }
  if (result.failure) throw result.failure;
}
