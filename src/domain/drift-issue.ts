/**
 * The sticky "drift" issue of a workspace on GitHub: one open issue per
 * `tf:<name>`, found by its label, its marker and its author (so an issue
 * anyone could open with the same text is never taken for it), opened or
 * updated while drift exists and closed with a comment once a check is clean.
 */
import { driftVerdict, type DriftReport } from './drift.js';
import { renderDriftMarkdown } from './drift-render.js';

export const DRIFT_ISSUE_LABEL = 'exocomp-drift';

export function driftIssueMarker(name: string): string {
  return `<!-- exocomp:drift-issue tf:${name} -->`;
}

export function driftIssueTitle(name: string): string {
  return `Drift in tf:${name}`;
}

export interface OpenIssue {
  number: number;
  body: string;
  author: string;
}

export type DriftIssueAction =
  | { kind: 'open'; title: string; body: string }
  | { kind: 'update'; number: number; body: string }
  | { kind: 'close'; number: number; comment: string }
  | { kind: 'none' };

/** The sticky issue among open ones: ours by marker and author; the oldest when there are several. */
export function findDriftIssue(issues: readonly OpenIssue[], name: string, author: string): OpenIssue | undefined {
  const marker = driftIssueMarker(name);
  return [...issues]
    .filter((i) => i.author === author && i.body.startsWith(marker))
    .sort((a, b) => a.number - b.number)[0];
}

export function decideDriftIssue(
  report: DriftReport,
  existing: OpenIssue | undefined,
  runUrl: string,
): DriftIssueAction {
  const verdict = driftVerdict(report);
  const body = `${driftIssueMarker(report.workspace)}\n${renderDriftMarkdown(report)}\n_Last checked ${report.checkedAt} by [this run](${runUrl})._\n`;
  if (verdict === 'drift')
    return existing
      ? { kind: 'update', number: existing.number, body }
      : { kind: 'open', title: driftIssueTitle(report.workspace), body };
  if (verdict === 'clean') {
    return existing
      ? {
          kind: 'close',
          number: existing.number,
          comment: `✅ No drift any more: checked ${report.checkedAt} by [this run](${runUrl}). Closing.`,
        }
      : { kind: 'none' };
  }
  // A failed check proves nothing either way: an open issue shows the failure, none is opened for it.
  return existing ? { kind: 'update', number: existing.number, body } : { kind: 'none' };
}
