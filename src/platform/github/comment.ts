/**
 * The sticky PR comment: one per workflow, found by its hidden marker AND its
 * author (a comment someone else wrote with the same marker is left alone),
 * edited in place on every transition. A token that may not comment (pull
 * requests from forks get a read-only one) never fails the job.
 */
import { ExocompError } from '../../domain/errors.js';
import type { GitHubPort, RepoRef } from './port.js';
import { commentMarker } from './status.js';

export type CommentOutcome =
  { kind: 'created' | 'updated'; id: number; url: string } | { kind: 'refused'; reason: string };

export async function upsertStickyComment(
  github: GitHubPort,
  request: { repo: RepoRef; issue: number; workflowId: string; author: string; body: string },
): Promise<CommentOutcome> {
  const marker = commentMarker(request.workflowId);
  try {
    const comments = await github.listIssueComments(request.repo, request.issue);
    const ours = comments.find((comment) => comment.author === request.author && comment.body.includes(marker));
    if (ours) {
      const updated = await github.updateIssueComment(request.repo, ours.id, request.body);
      return { kind: 'updated', id: updated.id, url: updated.htmlUrl };
    }
    const created = await github.createIssueComment(request.repo, request.issue, request.body);
    return { kind: 'created', id: created.id, url: created.htmlUrl };
  } catch (error) {
    if (error instanceof ExocompError && error.kind === 'permission') return { kind: 'refused', reason: error.message };
    throw error;
  }
}
