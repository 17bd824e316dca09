/**
 * The ledger as git refs, read and written without a work tree (ADR 0001,
 * ADR 0013 for the layout: one branch per record, see layout.ts; ADR 0015 for
 * the read path).
 *
 * A bare cache repository per remote holds the objects. A read asks the remote
 * for the tips of every ledger ref (`ls-remote`); when they are exactly the
 * tips this store last read or pushed, that snapshot is the ledger (a snapshot
 * is a function of the tips). Otherwise it fetches the tips' objects the
 * cache lacks, by id, making no ref (tips only, `--depth=1`, on a cache that
 * holds none), then runs one `diff-tree --stdin` listing every record's files
 * and one `cat-file --batch` for their contents: the index of records is
 * rebuilt from the remote's refs, never written by a writer. Processes sharing
 * a cache therefore share no ref, and none can move or delete what another is
 * reading (ADR 0040). A write builds one commit per record it changes
 * (objects checked and hashed here, written by one `unpack-objects`) and
 * pushes them without force, atomically when there are several. The push is
 * the compare-and-swap: git accepts a record's new commit only when the
 * record's branch still points at its parent (or, for a new record, still
 * does not exist). Writers of different records push different refs and never
 * conflict; a writer that loses a race on its record recomputes its change
 * from the new snapshot, with jittered backoff, until a deadline.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { homedir, hostname, userInfo } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { formatDuration } from '../domain/duration.js';
import { ExocompError, UsageError } from '../domain/errors.js';
import { parseLedgerName } from '../domain/names.js';
import {
  gitFailureText,
  isRemoteUrl,
  ProcessGitCli,
  redactRemote,
  type GitCli,
  type GitConfigEntry,
} from '../adapters/git.js';
import type { RunResult } from '../adapters/process.js';
import { isProcessAlive } from '../adapters/process.js';
import {
  buildTrees,
  commitBytes,
  EMPTY_TREE_ID,
  objectId,
  packOf,
  type BlobEntry,
  type LooseObject,
} from './git-objects.js';
import {
  isLedgerPath,
  MOVED_MARKER,
  movedMarkerText,
  recordOf,
  recordRef,
  recordRefProblem,
  RECORDS_SUFFIX,
} from './layout.js';
import { applyWrites, checkLedgerPath, FileSnapshot } from './memory-store.js';
import { LedgerRecordError } from './record-error.js';
import type { LedgerChange, LedgerSnapshot, LedgerStore, UpdateOptions } from './store.js';

export interface GitLedgerStoreOptions {
  /** Any git URL or local path (relative paths are taken from the current directory). */
  remote: string;
  /** The configured ledger name, default `exocomp-ledger` (records live on `<branch>-records/*`). */
  branch?: string;
  /** Where cache repositories live (one per remote). Default `$XDG_CACHE_HOME/exocomp/ledgers` or `~/.cache/exocomp/ledgers`. */
  cacheDir?: string;
  /** How long an update keeps retrying while other writers win the race on its record. Default 5 minutes. */
  retryForMs?: number;
  /** Who writes, for the commit trailer other writers name in their conflict errors. Default user@host pid. */
  writer?: string;
  /** Extra environment for git (e.g. GIT_SSH_COMMAND). */
  extraEnv?: Readonly<Record<string, string>>;
  /** Git configuration passed through the environment, e.g. an auth header from `httpAuthConfig`. */
  gitConfig?: readonly GitConfigEntry[];
  /** Values to keep out of every message (tokens and their derived forms). */
  secrets?: readonly string[];
  /** Builds the git adapter for the cache repository; tests substitute a double. */
  git?: (gitDir: string) => GitCli;
  /** The clock that stamps commits (author and committer date): the app's injected clock. Default: the machine's. */
  now?: () => Date;
}

export const DEFAULT_LEDGER_BRANCH = 'exocomp-ledger';
export const DEFAULT_LEDGER_RETRY_MS = 5 * 60_000;
const BACKOFF_BASE_MS = 25;
const BACKOFF_CAP_MS = 2_000;
const NETWORK_TIMEOUT_MS = 120_000;
/** A cache lock older than this is presumed abandoned (a fetch normally takes well under a second). */
const CACHE_LOCK_STALE_MS = 30_000;
/** How long a fetch waits for the cache lock before going ahead without it (its ref updates retry either way). */
const CACHE_LOCK_WAIT_MS = 60_000;
/** How many of the tips a cache holds a fetch names to tell the remote what it has: a few hundred say enough. */
const NEGOTIATION_TIPS = 256;
/**
 * git's words for another process holding a lock file in the cache (`shallow.lock`, `packed-refs.lock`, a
 * ref's), or deleting a ref between git's listing and its reading (a fetch's connectivity check lists every
 * ref, also those older versions keep): waited out.
 */
const CACHE_CONTENTION = /Unable to create '[^']*\.lock': File exists|bad object refs\//;
const WRITER_TRAILER = 'Exocomp-Writer';

/** Commits are made by the ledger itself, so they work without any user git config. */
const LEDGER_IDENTITY = { name: 'exocomp-ledger', email: 'ledger@exocomp.invalid' };

/**
 * Test hook: when this variable names a file, the store writes the commit id
 * it is about to push into that file and waits until the file is removed.
 * Tests use it to kill a writer between commit and push.
 */
export const TEST_PAUSE_BEFORE_PUSH_VARIABLE = 'EXOCOMP_LEDGER_TEST_PAUSE_BEFORE_PUSH';

interface TreeEntry {
  mode: string;
  type: string;
  object: string;
}

/** A tip's object as the cache holds it: its type, and a commit's tree. */
interface HeldObject {
  type: string;
  tree: string;
}

/** One ref as fetched: its commit and every entry of its tree, by path. */
interface RefState {
  commit: string;
  entries: ReadonlyMap<string, TreeEntry>;
}

/** A record ref that points at something other than a commit (a blob, a tree, an annotated tag, a missing object). */
interface NonCommitRef {
  record: string;
  /** The object's type, or `missing` when the repository does not hold it. */
  type: string;
  object: string;
}

/** How git (LC_ALL=C) names the object of a ref that the remote does not hold, when a fetch asks for it. */
const MISSING_OBJECT = /(?:not our ref|bad object) ([0-9a-f]{40,64})/;

/** The corruption of a record whose ref is not a commit; `consequence` says what else it stops. */
function nonCommitError(
  branch: string,
  { record, type, object }: NonCommitRef,
  consequence = 'every other record stays usable',
): LedgerRecordError {
  const ref = recordRef(branch, record);
  const problem =
    type === 'missing'
      ? `its ref points at ${object}, an object the repository does not hold, not a commit`
      : `its ref points at a ${type} (${object}), not a commit`;
  return new LedgerRecordError(record, problem, {
    ref,
    damage: 'corrupt',
    help:
      `nothing was written; ${consequence}. A record's ref always points at a commit: find the ` +
      `record's last commit (\`git log --all --format='%H %cd %s' -- ${record}\`, or the ref's reflog) and point ` +
      `the ref back at it (\`git update-ref ${ref} <commit> ${object}\` in that repository, or ` +
      `\`git push --force-with-lease=${ref}:${object} <remote> <commit>:${ref}\`), or delete the ref if the record ` +
      'should not exist',
  });
}

/** A ledger ref: the old single branch (name null) or a record's branch. */
interface LedgerRef extends RefState {
  name: string | null;
}

/** The ledger as read: the files, and what the next write needs to know about each ref. */
interface LedgerState {
  snapshot: FileSnapshot;
  /** Record refs by record name. */
  records: Map<string, RefState>;
  /** The old single branch, while it still holds records (null once migrated or when absent). */
  legacy: RefState | null;
  /** The writer trailer of each record ref's tip, for the records asked about. */
  writers: Map<string, string>;
  /** Every ledger ref the state was built from. */
  refs: readonly LedgerRef[];
  /** Every remote ref the fetch refspec covers (name → commit): what the remote's tips are compared with. */
  tips: ReadonlyMap<string, string>;
  /** The contents of the snapshot's files, by blob id (null: not UTF-8 text). */
  contents: ReadonlyMap<string, string | null>;
  /** Record refs that are not commits: corruption, reported on every read and write of those records. */
  nonCommits: readonly NonCommitRef[];
}

interface PushOutcome {
  ok: boolean;
  /** Records whose push was refused because their ref moved. */
  conflicts: string[];
  /** How many of the pushed refs the remote already had at the pushed commit. */
  alreadyThere?: number;
}

/** A change that threw on the snapshot last seen: the fresh snapshot decides. */
class RefusedLastSeen extends Error {
  constructor(cause: unknown) {
    super('the change refused the ledger as last seen', { cause });
  }
}

/** The cache repository, and the lock a first fetch into it takes. */
interface Cache {
  dir: string;
  git: GitCli;
  lock: CacheLock;
}

type Attempt<T> = { done: true; result: T } | { done: false; conflicts: string[] };

export class GitLedgerStore implements LedgerStore {
  readonly description: string;
  readonly branch: string;
  private readonly remote: string;
  private readonly shownRemote: string;
  private readonly cacheRoot: string;
  private readonly retryForMs: number;
  private readonly writer: string;
  private readonly now: () => Date;
  private readonly makeGit: (gitDir: string) => GitCli;
  private readonly secrets: readonly string[];
  private cacheGit: Promise<Cache> | undefined;
  /** The ledger as this store last read or pushed it; reused while the remote's tips are still these. */
  private lastSeen: LedgerState | undefined;
  /** This store has just made the cache, and fetched nothing into it yet: it holds no object of the ledger. */
  private cacheHoldsNothing = false;

  constructor(options: GitLedgerStoreOptions) {
    if (options.remote.trim() === '' || options.remote.startsWith('-')) {
      throw new UsageError(
        `invalid ledger repository ${JSON.stringify(options.remote)}`,
        'pass a git URL or a path to --ledger',
      );
    }
    this.branch = parseLedgerName(options.branch ?? DEFAULT_LEDGER_BRANCH);
    this.remote = isRemoteUrl(options.remote) ? options.remote : resolve(options.remote);
    this.secrets = [...(options.secrets ?? [])];
    this.shownRemote = redactRemote(this.remote, this.secrets);
    this.description = `ledger ${this.branch} (refs/heads/${this.branch}${RECORDS_SUFFIX}/*) of ${this.shownRemote}`;
    this.cacheRoot = options.cacheDir ?? defaultCacheRoot();
    this.retryForMs = Math.max(0, options.retryForMs ?? DEFAULT_LEDGER_RETRY_MS);
    this.writer = (options.writer ?? defaultWriter()).replace(/[\r\n]+/g, ' ').slice(0, 200);
    this.now = options.now ?? (() => new Date());
    this.makeGit =
      options.git ??
      ((gitDir) =>
        new ProcessGitCli({
          gitDir,
          ...(options.gitConfig ? { config: options.gitConfig } : {}),
          ...(options.extraEnv ? { extraEnv: options.extraEnv } : {}),
          secrets: this.secrets,
        }));
  }

  async read(): Promise<LedgerSnapshot> {
    const cache = await this.cache();
    return (await this.load(cache, [])).snapshot;
  }

  async update<T>(mutate: (snapshot: LedgerSnapshot) => LedgerChange<T>, options: UpdateOptions = {}): Promise<T> {
    if (options.readsOnlyItsWrites === true) {
      const guessed = await this.writeOnLastSeen(mutate);
      if (guessed.done) return guessed.result;
    }
    return this.write(mutate, false);
  }

  /**
   * A change that reads only what it writes, tried on the ledger as this store
   * last saw it, without asking the remote first: the push accepts each record's
   * commit only if that record's branch is still at its parent, so a stale
   * snapshot can only be refused. Not done (the caller then writes as usual) when
   * there is no such snapshot, it still holds the old layout, the push is
   * refused or moves nothing, or the change throws, writes nothing or read
   * other records on it (each may be the stale copy speaking).
   */
  private async writeOnLastSeen<T>(mutate: (snapshot: LedgerSnapshot) => LedgerChange<T>): Promise<Attempt<T>> {
    const { git } = await this.cache();
    try {
      const state = this.lastSeen;
      if (state === undefined || state.legacy !== null) return { done: false, conflicts: [] };
      return await this.attempt(
        git,
        state,
        (snapshot) => {
          try {
            return mutate(snapshot);
          } catch (error) {
            throw new RefusedLastSeen(error);
          }
        },
        false,
        { guess: true },
      );
    } catch (error) {
      if (error instanceof RefusedLastSeen) return { done: false, conflicts: [] };
      throw error;
    }
  }

  /**
   * Moves an old single-branch ledger to one branch per record, keeping each
   * record's history. Any write does this too; returns how many records moved.
   */
  async migrate(): Promise<number> {
    return this.write((snapshot) => ({ writes: new Map(), message: '', result: snapshot.list('').length }), true);
  }

  private async write<T>(mutate: (snapshot: LedgerSnapshot) => LedgerChange<T>, forceMigration: boolean): Promise<T> {
    const cache = await this.cache();
    const started = Date.now();
    const seen = new Set<string>();
    let contended: string[] = [];
    for (let attempt = 1; ; attempt++) {
      const release = await this.takeTurns(cache, attempt === 1 ? this.recordsWrittenOnLastSeen(mutate) : contended);
      let outcome: Attempt<T>;
      try {
        const state = await this.load(cache, contended);
        for (const record of contended) {
          const writer = state.writers.get(record);
          if (writer !== undefined && writer !== this.writer) seen.add(writer);
        }
        outcome = await this.attempt(cache.git, state, mutate, forceMigration);
      } finally {
        await release();
      }
      if (outcome.done) return outcome.result;
      contended = outcome.conflicts;
      const pause = backoffMs(attempt);
      const elapsed = Date.now() - started;
      // One retry always: it re-reads the record, so the error can name who else wrote it.
      if (attempt > 1 && elapsed + pause > this.retryForMs)
        throw this.conflictError(contended, [...seen], attempt, elapsed);
      await sleep(pause);
    }
  }

  /**
   * Processes sharing this cache take turns on the records a write changes
   * (read, change, push) — known from the ledger as last seen, or after a lost
   * race from the conflict — so N writers of one record on one machine do not
   * keep rejecting each other; writers of other records never wait. Locks are
   * taken in name order, so two writers cannot wait on each other.
   */
  private async takeTurns({ dir }: Cache, records: readonly string[]): Promise<() => Promise<void>> {
    const held: (() => Promise<void>)[] = [];
    for (const record of [...new Set(records)].sort()) {
      const name = createHash('sha256').update(`${this.branch}\0${record}`).digest('hex').slice(0, 16);
      held.push((await new CacheLock(join(dir, `exocomp-record-${name}.lock`)).acquire()).release);
    }
    return async () => {
      for (const release of held.reverse()) await release();
    };
  }

  /**
   * The records `mutate` would write on the ledger as last seen (none without
   * one, or when it throws there): what a write takes turns on before it reads.
   */
  private recordsWrittenOnLastSeen<T>(mutate: (snapshot: LedgerSnapshot) => LedgerChange<T>): string[] {
    if (this.lastSeen === undefined) return [];
    try {
      return [...mutate(this.lastSeen.snapshot).writes.keys()].map(recordOf);
    } catch {
      return [];
    }
  }

  private conflictError(
    records: readonly string[],
    writers: readonly string[],
    attempts: number,
    elapsedMs: number,
  ): ExocompError {
    const what =
      records.length > 0
        ? records.map((record) => `${this.branch}${RECORDS_SUFFIX}/${record}`).join(', ')
        : `the ledger ${this.branch}`;
    const who =
      writers.length > 0
        ? `; other writers seen: ${writers.slice(0, 5).join('; ')}${writers.length > 5 ? ` and ${writers.length - 5} more` : ''}`
        : '';
    return new ExocompError(
      'ledger-conflict',
      `could not write ${what} in ${formatDuration(elapsedMs)} (${attempts} attempts): another writer changed it first every time${who}`,
      {
        help: 'runs that change the same record are racing; serialise them (a CI concurrency group, or --concurrency-key), or give the write longer (--ledger-retry-for / the ledger-retry-for input), then re-run',
      },
    );
  }

  /** Applies `mutate` to the fetched state, commits and pushes; not done when another writer pushed first. */
  private async attempt<T>(
    git: GitCli,
    state: LedgerState,
    mutate: (snapshot: LedgerSnapshot) => LedgerChange<T>,
    forceMigration: boolean,
    { guess = false } = {},
  ): Promise<Attempt<T>> {
    const change = mutate(state.snapshot);
    // What it read beyond its own records may be stale on a guess, and no compare-and-swap covers it.
    if (guess && change.readOthers === true) return { done: false, conflicts: [] };
    const migrating = state.legacy !== null;
    const files = applyWrites(state.snapshot.entries(), change.writes);
    if (files === null && !(migrating && (forceMigration || change.writes.size > 0))) {
      return guess ? { done: false, conflicts: [] } : { done: true, result: change.result };
    }
    const next = files ?? new Map(state.snapshot.entries());

    // The records this write changes, and with a migration every record still on the old branch.
    const changed = new Set<string>();
    for (const path of change.writes.keys()) {
      if (state.snapshot.read(path) !== (next.get(path) ?? undefined)) changed.add(this.recordFor(path));
    }
    const touched = new Set(changed);
    if (migrating) {
      this.refuseStrays(state.legacy!, `the old ledger branch ${this.branch}`, (path) => this.recordFor(path));
      for (const path of state.legacy!.entries.keys()) {
        if (!state.records.has(recordOf(path))) touched.add(this.recordFor(path));
      }
    }
    // An unreadable record is never overwritten, nor moved: its error says how to restore it.
    for (const record of touched) {
      const damage = state.snapshot.damageOf(record);
      if (damage !== undefined) throw damage;
    }
    const byRecord = new Map<string, Map<string, string>>();
    for (const record of touched) byRecord.set(record, new Map());
    for (const [path, content] of next) byRecord.get(recordOf(path))?.set(path, content);

    const objects: LooseObject[] = [];
    const contents = new Map(state.contents);
    const pushedRefs: LedgerRef[] = [];
    const refspecs: string[] = [];
    const when = this.now();
    const trailer = `\n\n${WRITER_TRAILER}: ${this.writer}\n`;
    const moved = `move to ${this.branch}${RECORDS_SUFFIX}/* from the single branch ${this.branch}`;
    const addBlob = (content: string): string => {
      const bytes = Buffer.from(content, 'utf8');
      const id = objectId('blob', bytes);
      // A blob the snapshot already holds is in the cache.
      if (!contents.has(id)) objects.push({ type: 'blob', bytes });
      contents.set(id, content);
      return id;
    };
    const addCommit = (
      name: string | null,
      entries: ReadonlyMap<string, BlobEntry>,
      parent: string | undefined,
      message: string,
    ): void => {
      const built = buildTrees(entries);
      objects.push(...built.trees.map((tree) => ({ type: 'tree' as const, bytes: tree.bytes })));
      const bytes = commitBytes({
        tree: built.root,
        parents: parent ? [parent] : [],
        ...LEDGER_IDENTITY,
        when,
        message,
      });
      objects.push({ type: 'commit', bytes });
      const commit = objectId('commit', bytes);
      pushedRefs.push({
        name,
        commit,
        entries: new Map(
          [...entries].map(([path, blob]) => [path, { mode: blob.mode, type: 'blob', object: blob.id }]),
        ),
      });
      refspecs.push(`${commit}:${name === null ? `refs/heads/${this.branch}` : recordRef(this.branch, name)}`);
    };
    for (const [record, files] of byRecord) {
      const current = state.records.get(record);
      if (current)
        this.refuseStrays(current, `the ledger record ${this.branch}${RECORDS_SUFFIX}/${record}`, () => record);
      const entries = new Map<string, BlobEntry>();
      for (const [path, content] of files) {
        const previous = current?.entries.get(path) ?? (migrating ? state.legacy!.entries.get(path) : undefined);
        entries.set(path, { mode: previous?.mode === '100755' ? '100755' : '100644', id: addBlob(content) });
      }
      // A record created during the migration continues the old branch's history.
      const parent = current?.commit ?? (migrating ? state.legacy!.commit : undefined);
      addCommit(record, entries, parent, `${changed.has(record) ? change.message : moved}${trailer}`);
    }
    if (migrating) {
      const marker = new Map([[MOVED_MARKER, { mode: '100644', id: addBlob(movedMarkerText(this.branch)) }]]);
      addCommit(null, marker, state.legacy!.commit, `${moved}${trailer}`);
    }
    await this.writeObjects(git, objects);
    await pauseBeforePushForTests(refspecs.map((refspec) => refspec.split(':')[0]).join('\n'));
    const pushed = await this.push(git, refspecs);
    if (!pushed.ok) return { done: false, conflicts: pushed.conflicts };
    // Nothing moved: the remote already held these very commits, another writer's of the same name, parents and second.
    if (pushed.alreadyThere === refspecs.length) return { done: false, conflicts: [...touched] };
    this.lastSeen = this.afterPush(state, pushedRefs, contents);
    return { done: true, result: change.result };
  }

  /**
   * The ledger as it stands right after this store's push: what a fetch of
   * the pushed tips (and the others as they were) would read. It is reused only
   * while `ls-remote` shows exactly these tips.
   */
  private afterPush(
    before: LedgerState,
    pushed: readonly LedgerRef[],
    contents: ReadonlyMap<string, string | null>,
  ): LedgerState {
    const tips = new Map(before.tips);
    for (const ref of pushed)
      tips.set(ref.name === null ? `refs/heads/${this.branch}` : recordRef(this.branch, ref.name), ref.commit);
    const replaced = new Set(pushed.map((ref) => ref.name));
    const refs = [...before.refs.filter((ref) => !replaced.has(ref.name)), ...pushed];
    return stateOf(this.branch, refs, before.nonCommits, tips, contents, new Map());
  }

  /** The record a path belongs to; a path that cannot become a ref is refused before anything is written. */
  private recordFor(path: string): string {
    checkLedgerPath(path);
    const record = recordOf(path);
    const problem = recordRefProblem(record);
    if (problem !== undefined) {
      throw new ExocompError(
        'ledger-record',
        `the ledger path ${JSON.stringify(path)} cannot become the branch ${this.branch}${RECORDS_SUFFIX}/${record}: ${problem}`,
        {
          help: 'nothing was written; rename or remove that file on the ledger branch by hand (git rm, commit, push without force), then re-run',
        },
      );
    }
    return record;
  }

  /** A write never drops what it does not understand: entries that are not ledger files of this ref stop it, named. */
  private refuseStrays(ref: RefState, where: string, recordOfPath: (path: string) => string): void {
    for (const [path, entry] of ref.entries) {
      let problem: string | undefined;
      if (entry.type !== 'blob') problem = `a ${entry.type} entry, not a file`;
      else {
        try {
          checkLedgerPath(path);
          if (recordOfPath(path) !== recordOf(path) || recordRefProblem(recordOf(path)) !== undefined)
            problem = 'a file that does not belong here';
        } catch {
          problem = 'a path git and GitHub refuse';
        }
      }
      if (problem !== undefined) {
        throw new ExocompError(
          'ledger-record',
          `${where} holds ${JSON.stringify(path)} (${problem}); a write never drops what it does not understand, so nothing was written`,
          {
            help: 'remove or rename that entry by hand (git rm, commit, push without force), then re-run',
          },
        );
      }
    }
  }

  /** Writes blobs, trees and commits with one `unpack-objects` process; `--strict` has git check them as its receiving side would. */
  private async writeObjects(git: GitCli, objects: readonly LooseObject[]): Promise<void> {
    // Once each: two deletions in one write share the empty tree.
    const unique = [...new Map(objects.map((object) => [objectId(object.type, object.bytes), object])).values()];
    if (unique.length === 0) return;
    this.cacheHoldsNothing = false;
    const unpacked = await git.run(['unpack-objects', '-q', '--strict'], { input: packOf(unique) });
    if (unpacked.code !== 0) throw this.cacheFailure('unpack-objects', unpacked);
  }

  private cache(): Promise<Cache> {
    this.cacheGit ??= this.openCache().catch((error: unknown) => {
      this.cacheGit = undefined;
      throw error;
    });
    return this.cacheGit;
  }

  /** Creates the cache repository atomically (init elsewhere, then rename) so concurrent first runs cannot collide. */
  private async openCache(): Promise<Cache> {
    const dir = join(this.cacheRoot, createHash('sha256').update(this.remote).digest('hex'));
    if (!existsSync(join(dir, 'HEAD'))) {
      await mkdir(this.cacheRoot, { recursive: true });
      const staging = await mkdtemp(`${dir}.init-`);
      try {
        const init = await new ProcessGitCli({ cwd: this.cacheRoot }).run(['init', '--quiet', '--bare', staging]);
        if (init.code !== 0) {
          throw new ExocompError(
            'tool-failed',
            `cannot create the ledger cache repository in ${this.cacheRoot}: ${gitFailureText(init)}`,
            {
              help: 'make sure the cache directory is writable, or set XDG_CACHE_HOME to a writable directory',
            },
          );
        }
        // Made here: it holds no ref yet. Made by another process meanwhile: unknown.
        await rename(staging, dir).then(
          () => (this.cacheHoldsNothing = true),
          (error: NodeJS.ErrnoException) => {
            if (error.code !== 'EEXIST' && error.code !== 'ENOTEMPTY') throw error;
          },
        );
      } finally {
        await rm(staging, { recursive: true, force: true });
      }
    }
    const lockName = `exocomp-writer-${createHash('sha256').update(this.branch).digest('hex').slice(0, 16)}.lock`;
    return { dir, git: this.makeGit(dir), lock: new CacheLock(join(dir, lockName)) };
  }

  /**
   * The ledger as the remote holds it now. The remote is asked for its tips
   * (`ls-remote`); when they are the ones this store last read or pushed, that
   * state is it. Otherwise the cache is given every tip's objects (fetchTips),
   * then the files of each are read. Nothing here is read through a ref of the
   * cache, so no process sharing it can move or delete what this read lists.
   * `writersOf` names records whose tip's writer the caller wants to know (a
   * retry after a conflict: always read in full).
   */
  private async load(cache: Cache, writersOf: readonly string[]): Promise<LedgerState> {
    const { git } = cache;
    const listed = await this.remoteTips(git);
    if (this.lastSeen !== undefined && writersOf.length === 0 && sameTips(listed, this.lastSeen.tips))
      return this.lastSeen;
    const { tips, missing, held } = await this.fetchTips(cache, listed);
    const legacyName = `refs/heads/${this.branch}`;
    const recordsPrefix = `refs/heads/${this.branch}${RECORDS_SUFFIX}/`;
    const refs: { name: string | null; commit: string; tree: string }[] = [];
    const nonCommits: NonCommitRef[] = [];
    for (const [name, commit] of tips) {
      const { type, tree } = missing.has(name) ? { type: 'missing', tree: '' } : held.get(commit)!;
      const record = name.startsWith(recordsPrefix) ? name.slice(recordsPrefix.length) : undefined;
      if (name === legacyName) {
        if (type === 'missing') throw this.notALedger(`it points at ${commit}, an object the repository does not hold`);
        if (type !== 'commit') throw this.notALedger(`it points at a ${type} (${commit}), not a commit`);
        refs.push({ name: null, commit, tree });
      } else if (record !== undefined && recordRefProblem(record) === undefined) {
        if (type === 'commit') refs.push({ name: record, commit, tree });
        else nonCommits.push({ record, type, object: commit });
      }
    }
    const listings = await this.listTrees(
      git,
      refs.map((ref) => ref.tree),
    );
    const ledgerRefs = refs.map((ref, index): LedgerRef => ({
      name: ref.name,
      commit: ref.commit,
      entries: listings[index] ?? new Map<string, TreeEntry>(),
    }));
    const legacy = ledgerRefs.find((ref) => ref.name === null);
    const notOld = legacy && oldLayoutProblem(legacy.entries);
    if (notOld) throw this.notALedger(notOld);
    const view = ledgerView(ledgerRefs);
    const writerTips = writersOf
      .map((record) => view.records.get(record)?.commit)
      .filter((commit): commit is string => commit !== undefined);
    const objects = await this.readObjects(git, [...new Set([...view.chosen.values(), ...writerTips])]);
    const writers = new Map<string, string>();
    for (const record of writersOf) {
      const commit = view.records.get(record)?.commit;
      const trailer = commit
        ? new RegExp(`^${WRITER_TRAILER}: (.*)$`, 'm').exec(objects.get(commit) ?? '')?.[1]
        : undefined;
      if (trailer !== undefined) writers.set(record, trailer);
    }
    this.lastSeen = stateOf(this.branch, ledgerRefs, nonCommits, tips, objects, writers);
    return this.lastSeen;
  }

  /** The configured name is a branch that is neither an old-layout ledger nor a moved one: nothing reads or writes it. */
  private notALedger(problem: string): ExocompError {
    return new ExocompError(
      'usage',
      `refs/heads/${this.branch} of ${this.shownRemote} is not an exocomp ledger: ${problem}; nothing was read or written`,
      {
        help: `--ledger-branch / ledger-branch names the ledger, and refs/heads/${this.branch} must be an old-layout ledger or absent: choose another ledger name, or point --ledger at the repository that holds this ledger`,
      },
    );
  }

  /**
   * Makes sure the cache holds the objects of the remote's tips `listed`. Returns the tips it holds them
   * for (the remote's, asked again when a ref moved meanwhile), the refs left out because the remote does
   * not hold their object, and what each tip object is. A fetch names the objects it wants by id and makes
   * no ref of its own (ADR 0040), so processes sharing the cache have nothing of each other's to read or
   * delete. Another process holding a git lock the fetch needs (the `shallow.lock` of a first fetch) is
   * waited out with jittered backoff within the ledger's time budget (`retryForMs`).
   */
  private async fetchTips(
    cache: Cache,
    listed: Map<string, string>,
  ): Promise<{ tips: Map<string, string>; missing: Map<string, string>; held: Map<string, HeldObject> }> {
    const started = Date.now();
    let tips = listed;
    const missing = new Map<string, string>();
    let fetched = false;
    /** The last fetch's failure, when another process held a lock it needed. */
    let contended: RunResult | undefined;
    for (let attempt = 1; ; attempt++) {
      const wanted = new Map([...tips].filter(([name]) => !missing.has(name)));
      // A cache this store has just made holds nothing yet: no need to look. The tips this store last saw,
      // held unless something outside removed them, tell the remote what the cache has when every tip moved.
      const held =
        this.cacheHoldsNothing && !fetched
          ? new Map<string, HeldObject>()
          : await this.heldObjects(cache.git, [
              ...new Set([...wanted.values(), ...(this.lastSeen?.tips.values() ?? [])]),
            ]);
      const absent = [...new Set(wanted.values())].filter((id) => !held.has(id));
      if (absent.length === 0) return { tips, missing, held };
      if (fetched) throw this.cacheFailure('fetch', `the fetch succeeded but the cache lacks ${absent[0]}`);
      if (contended !== undefined) {
        const pause = backoffMs(Math.min(attempt, 6));
        if (Date.now() - started + pause > this.retryForMs) throw this.stillLocked(cache, contended);
        await sleep(pause);
      }
      const failure = await this.fetchObjects(cache, absent, held);
      this.cacheHoldsNothing = false;
      contended = undefined;
      if (failure === 'fetched' || failure === 'look-again') {
        fetched = failure === 'fetched';
        continue;
      }
      const notOnRemote = MISSING_OBJECT.exec(failure.stderr)?.[1];
      if (notOnRemote !== undefined) {
        // The remote lacks the object (that record alone is reported), or the ref moved since it was listed.
        const relisted = await this.remoteTips(cache.git);
        const moved = !sameTips(relisted, tips);
        tips = relisted;
        for (const [name, id] of missing) if (tips.get(name) !== id) missing.delete(name);
        const leftOut = [...tips].filter(([name, id]) => id === notOnRemote && !missing.has(name));
        for (const [name, id] of leftOut) missing.set(name, id);
        if (moved || leftOut.length > 0) continue;
      }
      if (!CACHE_CONTENTION.test(failure.stderr)) throw this.unreachable(failure);
      contended = failure;
    }
  }

  /**
   * One fetch of the objects `absent`: `fetched`, a failed fetch's result, or `look-again` when another
   * process's fetch may have brought them. A cache that holds some of the tips fetches the others beside
   * any other process, telling the remote what it has by those it holds (`--negotiation-tip`). One that
   * holds none takes the tips only (`--depth=1`, the cost of a fresh CI runner), and git holds the cache's
   * `shallow.lock` through such a fetch, failing (not waiting) any other: those take turns under the cache's
   * fetch lock, and one that waited looks again (the fetch it waited for may have brought its tips). git
   * keeps side-by-side fetches safe: objects are written under their own id through a temporary file, so
   * two fetches bringing one object do not clash.
   */
  private async fetchObjects(
    { git, lock }: Cache,
    absent: readonly string[],
    held: ReadonlyMap<string, HeldObject>,
  ): Promise<RunResult | 'fetched' | 'look-again'> {
    const heldCommits = [...held].filter(([, object]) => object.type === 'commit').map(([id]) => id);
    if (heldCommits.length > 0) return this.fetch(git, absent, heldCommits.slice(0, NEGOTIATION_TIPS));
    const { release, waited } = await lock.acquire();
    try {
      return waited ? 'look-again' : await this.fetch(git, absent, []);
    } finally {
      await release();
    }
  }

  /** The remote's ledger refs and their commits, without fetching anything. */
  private async remoteTips(git: GitCli): Promise<Map<string, string>> {
    const listed = await git.run(['ls-remote', '--heads', this.remote, `refs/heads/${this.branch}*`], {
      timeoutMs: NETWORK_TIMEOUT_MS,
    });
    if (listed.code !== 0) throw this.unreachable(listed);
    const tips = new Map<string, string>();
    for (const line of listed.stdout.split('\n')) {
      const [commit = '', name = ''] = line.split('\t');
      // ls-remote matches patterns against the end of a name; the ledger's refs are those that begin so.
      if (name.startsWith(`refs/heads/${this.branch}`) && !name.endsWith('^{}')) tips.set(name, commit);
    }
    return tips;
  }

  /**
   * One fetch of the objects `ids` (given on standard input: a ledger may have thousands of records),
   * storing no ref: git fetches an object named by id when the remote holds it (protocol v2, git's default
   * since 2.26, serves any object it has). With no commit to negotiate from (`negotiateFrom`), it takes the
   * tips only (`--depth=1`); otherwise just the new commits, without marking each new tip as a shallow
   * boundary (that list would grow by one per write and slow every push). Returns a failed fetch's result.
   */
  private async fetch(
    git: GitCli,
    ids: readonly string[],
    negotiateFrom: readonly string[],
  ): Promise<RunResult | 'fetched'> {
    const fetched = await git.run(
      [
        'fetch',
        '--quiet',
        ...(negotiateFrom.length === 0 ? ['--depth=1'] : negotiateFrom.map((id) => `--negotiation-tip=${id}`)),
        '--no-write-fetch-head',
        '--no-tags',
        '--no-show-forced-updates',
        '--no-auto-gc',
        '--stdin',
        this.remote,
      ],
      { input: `${ids.join('\n')}\n`, timeoutMs: NETWORK_TIMEOUT_MS },
    );
    return fetched.code === 0 ? 'fetched' : fetched;
  }

  /** What each of `ids` is in the cache (type, and a commit's tree), for those it holds; one `cat-file` process. */
  private async heldObjects(git: GitCli, ids: readonly string[]): Promise<Map<string, HeldObject>> {
    const held = new Map<string, HeldObject>();
    if (ids.length === 0) return held;
    const checked = await git.run(['cat-file', '--batch-check=%(objectname) %(objecttype)'], {
      input: ids.map((id) => `${id}\n${id}^{tree}\n`).join(''),
    });
    if (checked.code !== 0) throw this.cacheFailure('cat-file', checked);
    const lines = checked.stdout.split('\n');
    ids.forEach((id, index) => {
      const [object = '', type = ''] = (lines[2 * index] ?? '').split(' ');
      const [tree = '', treeType = ''] = (lines[2 * index + 1] ?? '').split(' ');
      if (object !== id || type === 'missing' || type === '') return;
      held.set(id, { type, tree: type === 'commit' && treeType === 'tree' ? tree : '' });
    });
    return held;
  }

  private unreachable(failure: RunResult): ExocompError {
    return new ExocompError('ledger-unreachable', `cannot read the ${this.description}: ${this.gitMessage(failure)}`, {
      help: `check that ${this.shownRemote} exists and is reachable from here with read access; --ledger (or the ledger-repository input) chooses another repository`,
    });
  }

  /** Another process kept one of git's locks in the cache past the ledger's time budget. */
  private stillLocked({ dir }: Cache, failure: RunResult): ExocompError {
    return new ExocompError(
      'ledger-unreachable',
      `cannot read the ${this.description}: its cache repository ${dir} is still locked by another process after ${formatDuration(this.retryForMs)} (${this.gitMessage(failure)})`,
      {
        help: 'another process on this machine is holding a lock in that repository: let it finish (or end it, if it is stuck, and remove the lock file git names), or give the ledger longer (--ledger-retry-for / the ledger-retry-for input), then re-run',
      },
    );
  }

  /** Every entry of each tree (recursively), with one `diff-tree` process for all of them. */
  private async listTrees(git: GitCli, trees: readonly string[]): Promise<Map<string, TreeEntry>[]> {
    if (trees.length === 0) return [];
    const listed = await git.run(['diff-tree', '--stdin', '-r', '-z', '--no-renames'], {
      input: trees.map((tree) => `${EMPTY_TREE_ID} ${tree}\n`).join(''),
      rawStdout: true,
    });
    if (listed.code !== 0) throw this.cacheFailure('diff-tree', listed);
    const out = listed.stdout;
    const results: Map<string, TreeEntry>[] = [];
    let current: Map<string, TreeEntry> | undefined;
    let position = 0;
    while (position < out.length) {
      if (out[position] === ':') {
        const metaEnd = out.indexOf('\0', position);
        const pathEnd = out.indexOf('\0', metaEnd + 1);
        if (metaEnd === -1 || pathEnd === -1 || current === undefined)
          throw this.cacheFailure('diff-tree', 'unexpected output');
        const [, mode = '', , object = ''] = out.slice(position + 1, metaEnd).split(' ');
        const type = mode === '160000' ? 'commit' : mode === '040000' ? 'tree' : 'blob';
        current.set(out.slice(metaEnd + 1, pathEnd), { mode, type, object });
        position = pathEnd + 1;
      } else {
        const lineEnd = out.indexOf('\n', position);
        if (lineEnd === -1) throw this.cacheFailure('diff-tree', 'unexpected output');
        current = new Map();
        results.push(current);
        position = lineEnd + 1;
      }
    }
    // Empty trees still print their header line, so there is one listing per tree.
    if (results.length !== trees.length)
      throw this.cacheFailure('diff-tree', `listed ${results.length} of ${trees.length} trees`);
    return results;
  }

  /** The contents of objects (UTF-8 text; null for one that is not), with one `cat-file --batch` process. */
  private async readObjects(git: GitCli, ids: readonly string[]): Promise<Map<string, string | null>> {
    if (ids.length === 0) return new Map();
    const batch = await git.run(['cat-file', '--batch'], { input: `${ids.join('\n')}\n`, rawStdout: true });
    if (batch.code !== 0) throw this.cacheFailure('cat-file', batch);
    const objects = parseBatchOutput(batch.stdoutBytes ?? Buffer.from(batch.stdout, 'utf8'), this.description);
    if (objects.length !== ids.length) throw this.cacheFailure('cat-file', 'incomplete output');
    return new Map(objects.map((object) => [object.id, object.content]));
  }

  /** Pushes without force, all refs or none: git refuses a ref unless it is still where our commit's parent says. */
  private async push(git: GitCli, refspecs: readonly string[]): Promise<PushOutcome> {
    const pushed = await git.run(
      ['push', '--porcelain', '--no-verify', ...(refspecs.length > 1 ? ['--atomic'] : []), this.remote, ...refspecs],
      {
        timeoutMs: NETWORK_TIMEOUT_MS,
      },
    );
    if (pushed.code === 0) {
      // `=` marks a ref the remote already had at the pushed commit.
      return {
        ok: true,
        conflicts: [],
        alreadyThere: pushed.stdout.split('\n').filter((line) => line.startsWith('=\t')).length,
      };
    }
    const output = `${pushed.stdout}\n${pushed.stderr}`;
    const conflicts: string[] = [];
    const namespace = `refs/heads/${this.branch}${RECORDS_SUFFIX}/`;
    for (const line of pushed.stdout.split('\n')) {
      const match =
        /^!\t[^:]*:(\S+)\t\[(?:rejected|remote rejected)\] \((fetch first|non-fast-forward|stale info|cannot lock ref.*|failed to update ref.*|incorrect old value.*)\)/.exec(
          line,
        );
      if (match) conflicts.push(match[1]!.startsWith(namespace) ? match[1]!.slice(namespace.length) : match[1]!);
    }
    // The remote's ref moved between its check and its update (its lock or old-value check failed).
    for (const match of output.matchAll(
      /cannot lock ref '([^']+)'|ref (\S+) (?:is at \S+ but expected|incorrect old value)/g,
    )) {
      const ref = match[1] ?? match[2] ?? '';
      conflicts.push(ref.startsWith(namespace) ? ref.slice(namespace.length) : ref);
    }
    if (conflicts.length > 0) return { ok: false, conflicts: [...new Set(conflicts)] };
    // git's receive-pack checks new objects against every ref, so a ref to a missing object refuses every push.
    const broken = /bad object (refs\/heads\/\S+)/.exec(output)?.[1];
    const brokenRecord = this.lastSeen?.nonCommits.find((ref) => recordRef(this.branch, ref.record) === broken);
    if (brokenRecord) {
      throw nonCommitError(this.branch, brokenRecord, 'the repository refuses every push until that ref is repaired');
    }
    const remoteRejected = /\[remote rejected\]/.test(output);
    if (remoteRejected && /hook declined|GH0\d\d|protected branch|rule violation|ruleset/i.test(output)) {
      throw new ExocompError(
        'ledger-unreachable',
        `the push to the ${this.description} was rejected by a rule or hook: ${this.gitMessage(pushed)}`,
        {
          help: `branch rules that target every branch (e.g. GitHub rulesets for "All branches") block the ledger branches ${this.branch} and ${this.branch}${RECORDS_SUFFIX}/* too: exclude them from the rule, or keep the ledger in another repository (the ledger-repository input, or --ledger)`,
        },
      );
    }
    if (/does not support --atomic/i.test(output)) {
      throw new ExocompError(
        'ledger-unreachable',
        `the ledger ${this.shownRemote} does not accept atomic pushes, which writes of several records need`,
        {
          help: 'GitHub and GitLab accept them; keep the ledger in a repository on such a host (the ledger-repository input, or --ledger)',
        },
      );
    }
    throw new ExocompError('ledger-unreachable', `cannot push to the ${this.description}: ${this.gitMessage(pushed)}`, {
      help: `check that ${this.shownRemote} is reachable and that these credentials may push to it (in GitHub Actions: permissions: contents: write), then re-run`,
    });
  }

  /** A failed git call, or what is wrong with its output, as people should read it (the remote as shown). */
  private gitMessage(failure: RunResult | string): string {
    const text = typeof failure === 'string' ? failure : gitFailureText(failure);
    return text.split(this.remote).join(this.shownRemote);
  }

  private cacheFailure(command: string, failure: RunResult | string): ExocompError {
    return new ExocompError(
      'internal',
      `git ${command} failed in the ledger cache repository: ${this.gitMessage(failure)}`,
      {
        help: `remove the cache directory ${this.cacheRoot} and re-run; if it persists, report it`,
      },
    );
  }
}

/** Whether `path` is a well-formed ledger file that belongs on `record`'s branch. */
function isLedgerFileOf(path: string, record: string): boolean {
  try {
    checkLedgerPath(path);
  } catch {
    return false;
  }
  return recordOf(path) === record;
}

/** Which refs hold records, the old branch while it still holds any, and which blob each file is. */
function ledgerView(refs: readonly LedgerRef[]): {
  records: Map<string, RefState>;
  legacy: RefState | null;
  chosen: Map<string, string>;
} {
  const legacyRef = refs.find((ref) => ref.name === null);
  const legacyRetired = legacyRef !== undefined && legacyRef.entries.size === 1 && legacyRef.entries.has(MOVED_MARKER);
  const legacy = legacyRef && !legacyRetired && legacyRef.entries.size > 0 ? legacyRef : null;
  const records = new Map<string, RefState>();
  for (const ref of refs) if (ref.name !== null) records.set(ref.name, ref);
  // A record's own branch wins over the old branch.
  const chosen = new Map<string, string>();
  for (const [record, state] of records) {
    for (const [path, entry] of state.entries)
      if (entry.type === 'blob' && isLedgerFileOf(path, record)) chosen.set(path, entry.object);
  }
  if (legacy) {
    for (const [path, entry] of legacy.entries) {
      if (entry.type === 'blob' && !records.has(recordOf(path)) && isLedgerFileOf(path, recordOf(path)))
        chosen.set(path, entry.object);
    }
  }
  return { records, legacy, chosen };
}

/** The state of a ledger whose refs are `refs`, given the contents of (at least) their files' blobs. */
function stateOf(
  branch: string,
  refs: readonly LedgerRef[],
  nonCommits: readonly NonCommitRef[],
  tips: ReadonlyMap<string, string>,
  objects: ReadonlyMap<string, string | null>,
  writers: Map<string, string>,
): LedgerState {
  const { records, legacy, chosen } = ledgerView(refs);
  const refOf = (path: string): string =>
    legacy !== null && !records.has(recordOf(path)) && legacy.entries.has(path)
      ? `refs/heads/${branch}`
      : recordRef(branch, recordOf(path));
  const files = new Map<string, string>();
  const contents = new Map<string, string | null>();
  const damaged = new Map<string, LedgerRecordError>();
  for (const nonCommit of nonCommits) damaged.set(nonCommit.record, nonCommitError(branch, nonCommit));
  for (const [path, blob] of chosen) {
    const content = objects.has(blob) ? objects.get(blob)! : '';
    contents.set(blob, content);
    if (content === null) {
      damaged.set(path, new LedgerRecordError(path, 'it is not UTF-8 text', { ref: refOf(path), damage: 'corrupt' }));
    } else files.set(path, content);
  }
  const revision =
    refs.length === 0 && nonCommits.length === 0
      ? null
      : createHash('sha1')
          .update(
            [
              ...refs.map((ref) => `${ref.name ?? ''} ${ref.commit}`),
              ...nonCommits.map((ref) => `${ref.record} ${ref.object}`),
            ]
              .sort()
              .join('\n'),
          )
          .digest('hex');
  return {
    snapshot: new FileSnapshot(revision, files, { refOf, damaged }),
    records,
    legacy,
    writers,
    refs,
    tips,
    contents,
    nonCommits,
  };
}

/**
 * Says why a tree is not that of an old-layout ledger (or of one moved to
 * records), or undefined when it is: only ledger files, or only MOVED.md.
 * Checked, never assumed: a branch that is anything else is not ours to move.
 */
function oldLayoutProblem(entries: ReadonlyMap<string, TreeEntry>): string | undefined {
  if (entries.size === 1 && entries.get(MOVED_MARKER)?.type === 'blob') return undefined;
  for (const [path, entry] of entries) {
    if (entry.type !== 'blob') return `it holds ${JSON.stringify(path.slice(0, 120))}, a ${entry.type}`;
    if (!isLedgerPath(path))
      return `it holds ${JSON.stringify(path.slice(0, 120))}, which is not a ledger file (old-layout ledgers hold only workflows/, inventories/, sealed/, locks/, drift/, schedules/, converges/ records and known_hosts)`;
  }
  return undefined;
}

function sameTips(a: ReadonlyMap<string, string>, b: ReadonlyMap<string, string>): boolean {
  return a.size === b.size && [...a].every(([name, commit]) => b.get(name) === commit);
}

function defaultWriter(): string {
  let user = 'unknown';
  try {
    user = userInfo().username;
  } catch {
    // No passwd entry (some containers): the host and pid still tell writers apart.
  }
  return `${user}@${hostname()} pid ${process.pid}`;
}

interface BatchObject {
  id: string;
  type: string;
  /** The object's text, or null when its bytes are not UTF-8. */
  content: string | null;
}

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Splits `cat-file --batch` output into objects. Sizes are in bytes, so the
 * output is handled as bytes; an object that is not UTF-8 text is returned as
 * such (null), for the record holding it to be reported, not the whole ledger.
 */
function parseBatchOutput(bytes: Buffer, description: string): BatchObject[] {
  const objects: BatchObject[] = [];
  let position = 0;
  while (position < bytes.length) {
    const headerEnd = bytes.indexOf(0x0a, position);
    const [id = '', type = '', sizeText = ''] = bytes
      .toString('utf8', position, headerEnd === -1 ? bytes.length : headerEnd)
      .split(' ');
    const size = Number(sizeText);
    const end = headerEnd + 1 + size;
    if (headerEnd === -1 || type === 'missing' || !Number.isInteger(size) || bytes[end] !== 0x0a) {
      throw new ExocompError(
        'internal',
        `git cat-file printed unreadable output for object ${id} of the ${description}`,
        {
          help: 'remove the ledger cache directory and re-run; if it persists, report it',
        },
      );
    }
    let content: string | null;
    try {
      content = STRICT_UTF8.decode(bytes.subarray(headerEnd + 1, end));
    } catch {
      content = null;
    }
    objects.push({ id, type, content });
    position = end + 1;
  }
  return objects;
}

/**
 * Lets processes that share a cache repository take turns: the first fetch
 * into a cache that holds none of the tips (git allows one `--depth` fetch at
 * a time), and writing a record they raced for. It is advisory only: the push
 * is the compare-and-swap, so a lock whose holder died or that is held too
 * long is broken, and a process that waits too long goes ahead without it.
 * (The fetch lock keeps the writer lock's old file name, so older versions
 * sharing the cache still take turns with this one.)
 */
class CacheLock {
  constructor(private readonly path: string) {}

  /** Takes the lock; `waited` says whether another process held it first. */
  async acquire(): Promise<{ release: () => Promise<void>; waited: boolean }> {
    const token = newLockToken();
    const deadline = Date.now() + CACHE_LOCK_WAIT_MS;
    let waited = false;
    // Polls back off (5 ms doubling to 100 ms, jittered): fifteen processes polling every few ms for one record spent
    // more CPU looking at the lock than the holder spent writing (the 16-writer test: ~11 s of CPU per writer).
    let pauseMs = 5;
    while (Date.now() < deadline) {
      try {
        await writeFile(this.path, token, { flag: 'wx' });
        return { release: () => this.release(token), waited };
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') break;
      }
      waited = true;
      const holder = await this.holder();
      if (holder === 'abandoned') await rm(this.path, { force: true });
      else if (holder === 'alive') {
        await sleep(pauseMs / 2 + Math.random() * pauseMs);
        pauseMs = Math.min(pauseMs * 2, 100);
      }
    }
    return { release: () => Promise.resolve(), waited };
  }

  private async release(token: string): Promise<void> {
    const holder = await readFile(this.path, 'utf8').catch(() => '');
    if (holder === token) await rm(this.path, { force: true });
  }

  private async holder(): Promise<'alive' | 'abandoned' | 'none'> {
    try {
      const [holder, info] = await Promise.all([readFile(this.path, 'utf8'), stat(this.path)]);
      if (Date.now() - info.mtimeMs > CACHE_LOCK_STALE_MS) return 'abandoned';
      const [pid, host] = holder.split(' ');
      const dead = host === hostname() && pid !== undefined && pid !== '' && !isProcessAlive(Number(pid));
      return dead ? 'abandoned' : 'alive';
    } catch (error) {
      // Released meanwhile: try again at once.
      return (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'none' : 'alive';
    }
  }
}

function newLockToken(): string {
  return `${process.pid} ${hostname()} ${randomBytes(6).toString('hex')}`;
}

function backoffMs(attempt: number): number {
  const ceiling = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** (attempt - 1));
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

function defaultCacheRoot(): string {
  const base = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(base, 'exocomp', 'ledgers');
}

async function pauseBeforePushForTests(commit: string): Promise<void> {
  const marker = process.env[TEST_PAUSE_BEFORE_PUSH_VARIABLE];
  if (!marker) return;
  await writeFile(marker, commit);
  while (existsSync(marker)) await sleep(20);
}
