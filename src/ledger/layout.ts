/**
 * How the ledger's files map onto git refs (ADR 0013). The configured branch
 * name B stands for two things:
 *
 * - `refs/heads/B-records/<record>`: one branch per record. A record is one
 *   file (`workflows/<id>.json`, `locks/<key>.json`, `known_hosts`), except
 *   that a standing inventory's registration, its materialized file and its
 *   sealed outputs travel together under `inventories/<name>.json`. Each
 *   branch's tree holds its files at their ledger paths, so
 *   `git show B-records/workflows/x.json:workflows/x.json` prints the record
 *   and `git log B-records/workflows/x.json` is its history.
 * - `refs/heads/B`: the single branch of the old layout. Once migrated it ends
 *   in a commit whose tree holds only `MOVED.md`, saying where the records went.
 *
 * Writers of different records push different refs, so they never conflict.
 */
import { LEDGER_RECORDS_SUFFIX } from '../domain/names.js';

export const RECORDS_SUFFIX = LEDGER_RECORDS_SUFFIX;
/** The only file of the old branch once its records have moved. */
export const MOVED_MARKER = 'MOVED.md';

export function recordsNamespace(branch: string): string {
  return `refs/heads/${branch}${RECORDS_SUFFIX}/`;
}

/** The full ref name of a record. */
export function recordRef(branch: string, record: string): string {
  return `${recordsNamespace(branch)}${record}`;
}

const NAME = '[a-z0-9][a-z0-9._-]*';
const LEDGER_PATH = new RegExp(
  `^(?:known_hosts|user-ca\\.json|(?:workflows|inventories|sealed|locks|drift|schedules)/${NAME}\\.json|` +
    `converges/${NAME}/history\\.json|converges/${NAME}/shards/${NAME}/[1-9][0-9]*\\.json|converges/${NAME}/rollouts/${NAME}\\.json)$`,
);

/** Whether `path` has the shape of a file exocomp keeps in a ledger (records.ts LEDGER_PATHS). */
export function isLedgerPath(path: string): boolean {
  return LEDGER_PATH.test(path);
}

/** The record (ref suffix) a ledger path belongs to. */
export function recordOf(path: string): string {
  const inventory = /^inventories\/([^/]+)\.inventory\.json$/.exec(path) ?? /^sealed\/([^/]+)\.json$/.exec(path);
  return inventory ? `inventories/${inventory[1]}.json` : path;
}

/**
 * Says why `record` cannot be a ref component sequence (git check-ref-format
 * rules), or undefined when it can. Paths are checked by checkLedgerPath first.
 */
export function recordRefProblem(record: string): string | undefined {
  // eslint-disable-next-line no-control-regex -- git refuses these in ref names
  if (/[\u0000-\u0020\u007f~^:?*[\\]/.test(record))
    return 'it contains a space, a control character or one of ~ ^ : ? * [ \\';
  if (record.includes('..') || record.includes('@{') || record.includes('//')) return 'it contains "..", "@{" or "//"';
  const parts = record.split('/');
  if (parts.some((part) => part === '' || part.startsWith('.') || part.endsWith('.lock')))
    return 'a component is empty, starts with "." or ends with ".lock"';
  if (record.endsWith('.') || record.endsWith('/')) return 'it ends with "." or "/"';
  return undefined;
}

/** The text of the old branch's last commit. */
export function movedMarkerText(branch: string): string {
  return [
    `# This ledger moved`,
    '',
    `exocomp now keeps one branch per record: refs/heads/${branch}${RECORDS_SUFFIX}/*`,
    `(for example ${branch}${RECORDS_SUFFIX}/workflows/<id>.json). Each record's history`,
    `continues from this branch's history. See docs/ledger.md.`,
    '',
  ].join('\n');
}

/**
 * A branch name with the shape of a workflow record (no such record needs to exist), to ask a platform which
 * protections cover the record branches: GitHub's `*` stops at `/`, so a rule must reach two levels down.
 */
export function sampleRecordBranch(branch: string): string {
  return recordRef(branch, 'workflows/exocomp-doctor.json').slice('refs/heads/'.length);
}
