/**
 * The issue tracker of the project a CI run belongs to (GitHub issues, GitLab
 * issues): only what the sticky drift issue needs. A face adapts its API to it
 * once; what to open, update or close is decided in src/domain/drift-issue.ts
 * and carried out in src/app/drift/drift-issue.ts, the same on every platform.
 */
import type { OpenIssue } from '../../domain/drift-issue.js';

/** An issue as a person finds it: its number (GitHub) or iid (GitLab), and a link. */
export interface IssueRef {
  number: number;
  url: string;
}

export interface IssueTracker {
  /** The open issues carrying `label`, with their body and author. */
  openIssues(label: string): Promise<OpenIssue[]>;
  open(issue: { title: string; body: string; label: string }): Promise<IssueRef>;
  /** Replaces the body of an open issue. */
  edit(number: number, body: string): Promise<IssueRef>;
  /** Comments, then closes. */
  close(number: number, comment: string): Promise<IssueRef>;
}
