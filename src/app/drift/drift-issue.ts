/**
 * The sticky drift issue of a workspace, through whichever tracker the face
 * gives (decisions in src/domain/drift-issue.ts): opened or updated while drift
 * exists, closed with a comment when a check is clean. Everything written is
 * redacted first.
 */
import {
  decideDriftIssue,
  DRIFT_ISSUE_LABEL,
  findDriftIssue,
  type DriftIssueAction,
} from '../../domain/drift-issue.js';
import type { DriftReport } from '../../domain/drift.js';
import { ExocompError } from '../../domain/errors.js';
import type { IssueTracker } from '../ports/issue-tracker.js';

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
      return {
        action: 'open',
        ...(await tracker.open({ title: action.title, body: options.redact(action.body), label: DRIFT_ISSUE_LABEL })),
      };
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

/** Where a drift job keeps its sticky issue: the project's tracker, who the tracker knows as this tool (its own issues), and this run's link. */
export interface DriftIssueTarget {
  tracker: IssueTracker;
  /** The author of the issues this tool wrote; a tracker that cannot be written throws a `permission` ExocompError. */
  author(): Promise<string>;
  runUrl: string;
}

export type DriftIssueResult =
  (DriftIssueOutcome & { kind: 'published'; line: string | undefined }) | { kind: 'refused'; reason: string };

/**
 * Publishes the sticky issue of `report` to `target`. A token that may not
 * read or write issues (a `permission` ExocompError) loses only the issue: it
 * is a `refused` outcome the face reports, never the job's failure.
 */
export async function publishDriftIssueTo(
  target: DriftIssueTarget,
  report: DriftReport,
  redact: (text: string) => string,
): Promise<DriftIssueResult> {
  try {
    const outcome = await publishDriftIssue(target.tracker, report, {
      author: await target.author(),
      runUrl: target.runUrl,
      redact,
    });
    return { kind: 'published', ...outcome, line: describeDriftIssueOutcome(outcome) };
  } catch (error) {
    if (error instanceof ExocompError && error.kind === 'permission')
      return { kind: 'refused', reason: redact(error.message) };
    throw error;
  }
}
