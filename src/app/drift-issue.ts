/**
 * The sticky drift issue of a workspace, through whichever tracker the face
 * gives (decisions in src/domain/drift-issue.ts): opened or updated while drift
 * exists, closed with a comment when a check is clean. Everything written is
 * redacted first.
 */
import { decideDriftIssue, DRIFT_ISSUE_LABEL, findDriftIssue, type DriftIssueAction } from '../domain/drift-issue.js';
import type { DriftReport } from '../domain/drift.js';
import type { IssueTracker } from './ports/issue-tracker.js';

export interface DriftIssueOutcome {
  action: DriftIssueAction['kind'];
  number?: number;
  url?: string;
}

export async function publishDriftIssue(
  tracker: IssueTracker,
  report: DriftReport,
  options: { author: string; runUrl: string; redact(text: string): string },
): Promise<DriftIssueOutcome> {
  const existing = findDriftIssue(await tracker.openIssues(DRIFT_ISSUE_LABEL), report.workspace, options.author);
  const action = decideDriftIssue(report, existing, options.runUrl);
  switch (action.kind) {
    case 'open':
      return { action: 'open', ...(await tracker.open({ title: action.title, body: options.redact(action.body), label: DRIFT_ISSUE_LABEL })) };
    case 'update':
      return { action: 'update', ...(await tracker.edit(action.number, options.redact(action.body))) };
    case 'close':
      return { action: 'close', ...(await tracker.close(action.number, options.redact(action.comment))) };
    default:
      return { action: 'none' };
  }
}

/** One line for the log: `drift issue #7: opened`. */
export function describeDriftIssueOutcome(outcome: DriftIssueOutcome): string | undefined {
  if (outcome.action === 'none') return undefined;
  const verb = outcome.action === 'open' ? 'opened' : outcome.action === 'update' ? 'updated' : 'closed';
  return `drift issue #${outcome.number}: ${verb}${outcome.url ? ` (${outcome.url})` : ''}`;
}
