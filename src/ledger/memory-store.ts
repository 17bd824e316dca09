/**
 * An in-memory ledger with the same semantics as the git branch: whole-snapshot
 * compare-and-swap updates, one "commit" per change with writes, nothing
 * committed for a change without writes or when `mutate` throws. Also home of
 * the snapshot and path rules both stores share.
 */
import { createHash } from 'node:crypto';
import { ExocompError } from '../domain/errors.js';
import { recordOf } from './layout.js';
import type { LedgerRecordError } from './record-error.js';
import type { LedgerChange, LedgerSnapshot, LedgerStore } from './store.js';

/** Where a snapshot's files live, and the records that cannot be read at all. */
export interface SnapshotRefs {
  /** The git ref a file lives on. */
  refOf(path: string): string | undefined;
  /** Unreadable records, by record (layout.ts recordOf): every file of such a record throws this. */
  damaged: ReadonlyMap<string, LedgerRecordError>;
}

/** An immutable set of files at one revision. */
export class FileSnapshot implements LedgerSnapshot {
  readonly revision: string | null;
  private readonly files: ReadonlyMap<string, string>;
  private readonly refs: SnapshotRefs | undefined;
  private sortedPaths: string[] | undefined;

  constructor(revision: string | null, files: ReadonlyMap<string, string>, refs?: SnapshotRefs) {
    this.revision = revision;
    this.files = files;
    this.refs = refs;
  }

  read(path: string): string | undefined {
    const damage = this.refs?.damaged.get(path) ?? this.refs?.damaged.get(recordOf(path));
    if (damage !== undefined) throw damage;
    return this.files.get(path);
  }

  list(prefix: string): string[] {
    this.sortedPaths ??= [...new Set([...this.files.keys(), ...(this.refs?.damaged.keys() ?? [])])].sort();
    return this.sortedPaths.filter((path) => path.startsWith(prefix));
  }

  refOf(path: string): string | undefined {
    return this.refs?.refOf(path);
  }

  /** Why `record` (layout.ts recordOf) cannot be read or written, or undefined when it can. */
  damageOf(record: string): LedgerRecordError | undefined {
    const damaged = this.refs?.damaged;
    if (damaged === undefined) return undefined;
    return damaged.get(record) ?? [...damaged].find(([path]) => recordOf(path) === record)?.[1];
  }

  /** The records that cannot be read, as errors naming each. */
  damaged(): LedgerRecordError[] {
    return [...(this.refs?.damaged.values() ?? [])];
  }

  /** The files as a map (for stores building the next revision). */
  entries(): ReadonlyMap<string, string> {
    return this.files;
  }
}

/**
 * Rejects paths a git tree cannot hold or that would escape the ledger:
 * empty, absolute, `.`/`..`/`.git` segments, empty segments, control characters.
 */
export function checkLedgerPath(path: string): void {
  const segments = path.split('/');
  const bad =
    path.length === 0 ||
    // eslint-disable-next-line no-control-regex -- a control character in a path is what is refused
    /[\u0000-\u001f\u007f\\]/.test(path) ||
    segments.some(
      (segment) => segment === '' || segment === '.' || segment === '..' || segment.toLowerCase() === '.git',
    );
  if (bad) {
    throw new ExocompError('internal', `invalid ledger path ${JSON.stringify(path)}`, {
      help: 'ledger paths are relative, slash-separated, without empty, "." , ".." or ".git" segments; this is a bug in exocomp',
    });
  }
}

/**
 * Applies writes (null deletes) to a file map and returns the new map, or null
 * when nothing changes. A file may not take the place of a folder or the
 * other way round.
 */
export function applyWrites(
  files: ReadonlyMap<string, string>,
  writes: ReadonlyMap<string, string | null>,
): Map<string, string> | null {
  const next = new Map(files);
  let changed = false;
  for (const [path, content] of writes) {
    checkLedgerPath(path);
    if (content === null) {
      changed = next.delete(path) || changed;
    } else if (next.get(path) !== content) {
      next.set(path, content);
      changed = true;
    }
  }
  if (!changed) return null;
  for (const path of writes.keys()) {
    if (!next.has(path)) continue;
    const segments = path.split('/');
    for (let end = 1; end < segments.length; end++) {
      const folder = segments.slice(0, end).join('/');
      if (next.has(folder)) throw fileFolderClash(folder, path);
    }
    const asFolder = `${path}/`;
    for (const other of next.keys()) {
      if (other.startsWith(asFolder)) throw fileFolderClash(path, other);
    }
  }
  return next;
}

function fileFolderClash(file: string, inside: string): ExocompError {
  return new ExocompError('internal', `ledger path ${file} would be both a file and the folder of ${inside}`, {
    help: 'this is a bug in exocomp: ledger files and folders must not share a name',
  });
}

export interface MemoryCommit {
  revision: string;
  parent: string | null;
  message: string;
}

export class MemoryLedgerStore implements LedgerStore {
  readonly description: string;
  private current: FileSnapshot = new FileSnapshot(null, new Map());
  private readonly commits: MemoryCommit[] = [];

  constructor(options: { description?: string; files?: Readonly<Record<string, string>> } = {}) {
    this.description = options.description ?? 'in-memory ledger';
    if (options.files && Object.keys(options.files).length > 0) {
      this.commit(new Map(Object.entries(options.files)), 'initial content');
    }
  }

  read(): Promise<LedgerSnapshot> {
    return Promise.resolve(this.current);
  }

  /** A memory ledger has one layout only. */
  migrate(): Promise<number> {
    return Promise.resolve(this.current.list('').length);
  }

  /** The commits so far, oldest first (the equivalent of `git log --reverse`). */
  history(): readonly MemoryCommit[] {
    return this.commits;
  }

  async update<T>(mutate: (snapshot: LedgerSnapshot) => LedgerChange<T>): Promise<T> {
    // mutate is synchronous and nothing runs between reading and swapping, so
    // this compare-and-swap always succeeds on its first attempt.
    const change = mutate(this.current);
    const next = applyWrites(this.current.entries(), change.writes);
    if (next === null) return change.result;
    this.commit(next, change.message);
    return change.result;
  }

  private commit(files: Map<string, string>, message: string): void {
    const parent = this.current.revision;
    const revision = createHash('sha1')
      .update(`${parent ?? ''}\n${this.commits.length}\n${message}`)
      .digest('hex');
    this.commits.push({ revision, parent, message });
    this.current = new FileSnapshot(revision, files);
  }
}
