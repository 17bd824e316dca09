/**
 * The sticky status note on a merge request: one note per key, found by a
 * hidden marker AND its author (the token's own user), edited in place; copies
 * a race left behind are deleted; notes of anyone else are never touched, even
 * when they quote the marker. GitLab's job token may not write notes, so without
 * an access token this is a `refused` outcome (a notice), never a failure.
 */
import { apiStatus, GITLAB_TOKEN_VARIABLE, type GitLabApi } from './api.js';

export type NoteOutcome =
  { kind: 'created' | 'updated'; id: number; removedDuplicates: number } | { kind: 'refused'; reason: string };

export function statusMarker(key: string): string {
  return `<!-- exocomp:status:${key} -->`;
}

export async function upsertStatusNote(
  api: GitLabApi,
  project: number | string,
  mergeRequestIid: number,
  key: string,
  body: string,
): Promise<NoteOutcome> {
  if (!api.hasAccessToken) {
    return {
      kind: 'refused',
      reason: `no merge request note: GitLab's job token cannot write notes; set ${GITLAB_TOKEN_VARIABLE} (api scope) to get one`,
    };
  }
  const marker = statusMarker(key);
  const text = `${marker}\n${body}`;
  try {
    const me = await api.currentUser();
    const mine = (await api.notes(project, mergeRequestIid)).filter(
      (n) => !n.system && n.author === me && n.body.includes(marker),
    );
    const [first, ...duplicates] = mine;
    let id: number;
    let kind: 'created' | 'updated';
    if (first === undefined) {
      id = await api.createNote(project, mergeRequestIid, text);
      kind = 'created';
    } else {
      id = first.id;
      kind = 'updated';
      if (first.body !== text) await api.editNote(project, mergeRequestIid, id, text);
    }
    for (const duplicate of duplicates) await api.deleteNote(project, mergeRequestIid, duplicate.id);
    return { kind, id, removedDuplicates: duplicates.length };
  } catch (error) {
    const status = apiStatus(error);
    if (status === 401 || status === 403) {
      return {
        kind: 'refused',
        reason: `no merge request note: GitLab refused the token (HTTP ${status}); ${GITLAB_TOKEN_VARIABLE} needs the api scope and at least the Reporter role`,
      };
    }
    if (status === 404)
      return { kind: 'refused', reason: `no merge request note: merge request !${mergeRequestIid} was not found` };
    throw error;
  }
}

/** The merge request a job reports to: its own (merge request pipelines), else the newest open one whose head is the commit. */
export async function findMergeRequest(
  api: GitLabApi,
  project: number | string,
  job: { mergeRequestIid: number | undefined; sha: string },
): Promise<number | undefined> {
  if (job.mergeRequestIid !== undefined) return job.mergeRequestIid;
  if (!job.sha) return undefined;
  try {
    return (await api.mergeRequestsOfCommit(project, job.sha))[0];
  } catch (error) {
    const status = apiStatus(error);
    if (status === 401 || status === 403 || status === 404) return undefined;
    throw error;
  }
}
