/** The sticky drift issue through the GitHub port (decisions in domain/drift-issue.ts). */
import { decideDriftIssue, DRIFT_ISSUE_LABEL, findDriftIssue, type DriftIssueAction } from '../../domain/drift-issue.js';
import type { DriftReport } from '../../domain/drift.js';
import type { GitHubPort, RepoRef } from './port.js';

export async function publishDriftIssue(
  github: GitHubPort,
  repo: RepoRef,
  report: DriftReport,
  options: { author: string; runUrl: string; redact(text: string): string },
): Promise<{ action: DriftIssueAction['kind']; number?: number; url?: string }> {
  const open = await github.listOpenIssues(repo, DRIFT_ISSUE_LABEL);
  const existing = findDriftIssue(open, report.workspace, options.author);
  const action = decideDriftIssue(report, existing, options.runUrl);
  switch (action.kind) {
    case 'open': {
      const issue = await github.createIssue(repo, { title: action.title, body: options.redact(action.body), labels: [DRIFT_ISSUE_LABEL] });
      return { action: 'open', number: issue.number, url: issue.htmlUrl };
    }
    case 'update': {
      const issue = await github.updateIssue(repo, action.number, { body: options.redact(action.body) });
      return { action: 'update', number: issue.number, url: issue.htmlUrl };
    }
    case 'close': {
      await github.createIssueComment(repo, action.number, options.redact(action.comment));
      const issue = await github.updateIssue(repo, action.number, { state: 'closed' });
      return { action: 'close', number: issue.number, url: issue.htmlUrl };
    }
    default:
      return { action: 'none' };
  }
}
