/**
 * The ledger as a git branch, read and written without a work tree.
 *
 * A bare cache repository per remote (shared by concurrent processes) holds
 * the objects. Each operation fetches the branch into a ref only it uses,
 * reads every file with one `ls-tree` and one `cat-file --batch`, builds the
 * next commit in a temporary index, and pushes it without force. The push is
 * the compare-and-swap: git accepts it only when the branch still points at
 * the commit the change was computed from (or, for the first commit, when the
 * branch still does not exist), so a rejected push means someone else wrote
 * first and the change is recomputed from their snapshot.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { homedir, hostname, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ExocompError, UsageError } from '../domain/errors.js';
import { isRemoteUrl, ProcessGitCli, redactRemote, type GitCli, type GitConfigEntry } from '../adapters/git.js';
import { isProcessAlive } from '../adapters/process.js';
import { applyWrites, FileSnapshot } from './memory-store.js';
import type { LedgerChange, LedgerSnapshot, LedgerStore } from './store.js';

export interface GitLedgerStoreOptions {
  /** Any git URL or local path (relative paths are taken from the current directory). */
  remote: string;
  /** Default `exocomp-ledger`. */
  branch?: string;
  /** Where cache repositories live (one per remote). Default `$XDG_CACHE_HOME/exocomp/ledgers` or `~/.cache/exocomp/ledgers`. */
  cacheDir?: string;
  /** How many times an update is tried when other writers keep winning. Default 12. */
  maxAttempts?: number;
  /** Extra environment for git (e.g. GIT_SSH_COMMAND). */
  extraEnv?: Readonly<Record<string, string>>;
  /** Git configuration passed through the environment, e.g. an auth header from `httpAuthConfig`. */
  gitConfig?: readonly GitConfigEntry[];
  /** Values to keep out of every message (tokens and their derived forms). */
  secrets?: readonly string[];
  /** Builds the git adapter for the cache repository; tests substitute a double. */
  git?: (gitDir: string) => GitCli;
}

export const DEFAULT_LEDGER_BRANCH = 'exocomp-ledger';
const DEFAULT_MAX_ATTEMPTS = 12;
const BACKOFF_BASE_MS = 25;
const BACKOFF_CAP_MS = 2_000;
const NETWORK_TIMEOUT_MS = 120_000;
/** A writer lock older than this is presumed abandoned (a write normally takes well under a second). */
const WRITER_LOCK_STALE_MS = 30_000;
/** How long a writer waits for the lock before going ahead without it (the push stays safe either way). */
const WRITER_LOCK_WAIT_MS = 60_000;

/** Commits are made by the ledger itself, so they work without any user git config. */
const LEDGER_IDENTITY: Readonly<Record<string, string>> = {
  GIT_AUTHOR_NAME: 'exocomp-ledger',
  GIT_AUTHOR_EMAIL: 'ledger@exocomp.invalid',
  GIT_COMMITTER_NAME: 'exocomp-ledger',
  GIT_COMMITTER_EMAIL: 'ledger@exocomp.invalid',
};

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

/** A snapshot plus what the next commit needs: the tree entries behind the files. */
interface BranchState {
  snapshot: FileSnapshot;
  entries: ReadonlyMap<string, TreeEntry>;
}

type PushOutcome = 'pushed' | 'conflict';
/** `latest` is the commit we pushed, when we did. */
type Attempt<T> = { done: true; result: T; latest: string | null } | { done: false; latest: null };

export class GitLedgerStore implements LedgerStore {
  readonly description: string;
  readonly branch: string;
  private readonly remote: string;
  private readonly shownRemote: string;
  private readonly cacheRoot: string;
  private readonly maxAttempts: number;
  private readonly makeGit: (gitDir: string) => GitCli;
  private readonly secrets: readonly string[];
  /** Names this process's temporary refs, so processes sharing the cache never touch each other's refs. */
  private readonly refPrefix = `refs/exocomp/tmp/${process.pid}-${randomBytes(6).toString('hex')}`;
  private sequence = 0;
  private cacheGit: Promise<{ git: GitCli; lock: WriterLock }> | undefined;

  constructor(options: GitLedgerStoreOptions) {
    if (options.remote.trim() === '' || options.remote.startsWith('-')) {
      throw new UsageError(`invalid ledger repository ${JSON.stringify(options.remote)}`, 'pass a git URL or a path to --ledger');
    }
    this.branch = options.branch ?? DEFAULT_LEDGER_BRANCH;
    if (!isValidBranchName(this.branch)) {
      throw new UsageError(`invalid ledger branch name ${JSON.stringify(this.branch)}`, 'pass a plain branch name to --ledger-branch, e.g. exocomp-ledger');
    }
    this.remote = isRemoteUrl(options.remote) ? options.remote : resolve(options.remote);
    this.secrets = [...(options.secrets ?? [])];
    this.shownRemote = redactRemote(this.remote, this.secrets);
    this.description = `branch ${this.branch} of ${this.shownRemote}`;
    this.cacheRoot = options.cacheDir ?? defaultCacheRoot();
    this.maxAttempts = Math.max(1, options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS);
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
    const { git } = await this.cache();
    const { ref, state } = await this.fetchState(git);
    await this.release(git, ref, state.snapshot.revision);
    return state.snapshot;
  }

  async update<T>(mutate: (snapshot: LedgerSnapshot) => LedgerChange<T>): Promise<T> {
    const { git, lock } = await this.cache();
    for (let attempt = 1; ; attempt++) {
      const unlock = await lock.acquire();
      let fetched: { ref: string | null; state: BranchState } | undefined;
      let outcome: Attempt<T> = { done: false, latest: null };
      try {
        fetched = await this.fetchState(git);
        outcome = await this.attempt(git, fetched.state, mutate);
      } finally {
        await unlock();
        // The temporary ref goes after unlocking: its cleanup needs no lock.
        if (fetched) await this.release(git, fetched.ref, outcome.latest ?? fetched.state.snapshot.revision);
      }
      if (outcome.done) return outcome.result;
      if (attempt >= this.maxAttempts) {
        throw new ExocompError(
          'ledger-conflict',
          `gave up writing to the ledger (${this.description}) after ${attempt} attempts: another writer changed it every time`,
          { help: 'the ledger is under heavy concurrent writes; re-run the command, and serialise runs that touch the same workflow (e.g. a CI concurrency group)' },
        );
      }
      await sleep(backoffMs(attempt));
    }
  }

  /** Applies `mutate` to the fetched state, commits and pushes; not done when another writer pushed first. */
  private async attempt<T>(git: GitCli, state: BranchState, mutate: (snapshot: LedgerSnapshot) => LedgerChange<T>): Promise<Attempt<T>> {
    const change = mutate(state.snapshot);
    const files = applyWrites(state.snapshot.entries(), change.writes);
    if (files === null) return { done: true, result: change.result, latest: null };
    const commit = await this.commit(git, state, files, change.message);
    await pauseBeforePushForTests(commit);
    if ((await this.push(git, commit)) === 'conflict') return { done: false, latest: null };
    return { done: true, result: change.result, latest: commit };
  }

  private cache(): Promise<{ git: GitCli; lock: WriterLock }> {
    this.cacheGit ??= this.openCache().catch((error: unknown) => {
      this.cacheGit = undefined;
      throw error;
    });
    return this.cacheGit;
  }

  /** Creates the cache repository atomically (init elsewhere, then rename) so concurrent first runs cannot collide. */
  private async openCache(): Promise<{ git: GitCli; lock: WriterLock }> {
    const dir = join(this.cacheRoot, createHash('sha256').update(this.remote).digest('hex'));
    if (!existsSync(join(dir, 'HEAD'))) {
      await mkdir(this.cacheRoot, { recursive: true });
      const staging = await mkdtemp(`${dir}.init-`);
      try {
        const init = await new ProcessGitCli({ cwd: this.cacheRoot }).run(['init', '--quiet', '--bare', staging]);
        if (init.code !== 0) {
          throw new ExocompError('tool-failed', `cannot create the ledger cache repository in ${this.cacheRoot}: ${init.stderr.trim()}`, {
            help: 'make sure the cache directory is writable, or set XDG_CACHE_HOME to a writable directory',
          });
        }
        await rename(staging, dir).catch((error: NodeJS.ErrnoException) => {
          if (error.code !== 'EEXIST' && error.code !== 'ENOTEMPTY') throw error;
        });
      } finally {
        await rm(staging, { recursive: true, force: true });
      }
    }
    const lockName = `exocomp-writer-${createHash('sha256').update(this.branch).digest('hex').slice(0, 16)}.lock`;
    return { git: this.makeGit(dir), lock: new WriterLock(join(dir, lockName)) };
  }

  /** Fetches the branch into a ref of our own and reads every file at that commit. */
  private async fetchState(git: GitCli): Promise<{ ref: string | null; state: BranchState }> {
    const ref = `${this.refPrefix}-${++this.sequence}`;
    const fetched = await git.run(
      ['fetch', '--quiet', '--no-write-fetch-head', '--no-tags', '--no-show-forced-updates', this.remote, `+refs/heads/${this.branch}:${ref}`],
      { timeoutMs: NETWORK_TIMEOUT_MS },
    );
    if (fetched.code !== 0) {
      if (/couldn't find remote ref/i.test(fetched.stderr)) {
        return { ref: null, state: { snapshot: new FileSnapshot(null, new Map()), entries: new Map() } };
      }
      throw new ExocompError('ledger-unreachable', `cannot read the ledger ${this.description}: ${this.gitMessage(fetched.stderr)}`, {
        help: `check that ${this.shownRemote} exists and is reachable from here with read access; --ledger (or the ledger-repository input) chooses another repository`,
      });
    }
    try {
      return { ref, state: await this.readCommit(git, ref) };
    } catch (error) {
      await this.release(git, ref, null);
      throw error;
    }
  }

  private async readCommit(git: GitCli, ref: string): Promise<BranchState> {
    const listing = await git.run(['ls-tree', '-r', '-z', '--full-tree', ref]);
    if (listing.code !== 0) throw this.cacheFailure('ls-tree', listing.stderr);
    const entries = new Map<string, TreeEntry>();
    for (const record of listing.stdout.split('\0')) {
      if (record === '') continue;
      const match = /^(\d+) (\w+) ([0-9a-f]+)\t(.*)$/s.exec(record);
      if (!match) throw this.cacheFailure('ls-tree', `unexpected output ${JSON.stringify(record)}`);
      const [, mode = '', type = '', object = '', path = ''] = match;
      entries.set(path, { mode, type, object });
    }
    const blobIds = [...new Set([...entries.values()].filter((entry) => entry.type === 'blob').map((entry) => entry.object))];
    // One cat-file process for the commit and every blob, whatever the number of files.
    const batch = await git.run(['cat-file', '--batch'], { input: `${[ref, ...blobIds].join('\n')}\n`, rawStdout: true });
    if (batch.code !== 0) throw this.cacheFailure('cat-file', batch.stderr);
    const [commit, ...blobs] = parseBatchOutput(batch.stdout, this.description);
    if (commit?.type !== 'commit' || blobs.length !== blobIds.length) throw this.cacheFailure('cat-file', 'incomplete output');
    const texts = new Map(blobs.map((blob) => [blob.id, blob.content]));
    const files = new Map<string, string>();
    for (const [path, entry] of entries) {
      const text = texts.get(entry.object);
      if (entry.type === 'blob' && text !== undefined) files.set(path, text);
    }
    return { snapshot: new FileSnapshot(commit.id, files), entries };
  }

  /** Builds the commit holding `files` on top of the snapshot, in a temporary index, and returns its id. */
  private async commit(git: GitCli, state: BranchState, files: ReadonlyMap<string, string>, message: string): Promise<string> {
    const work = await mkdtemp(join(tmpdir(), 'exocomp-ledger-'));
    try {
      const changed = [...files].filter(([path, content]) => state.snapshot.read(path) !== content);
      const blobFiles = changed.map((_, index) => join(work, `blob-${index}`));
      await Promise.all(changed.map(([, content], index) => writeFile(blobFiles[index] ?? '', content)));
      const ids = changed.length === 0 ? [] : await this.hashBlobs(git, blobFiles);
      const newIds = new Map(changed.map(([path], index) => [path, ids[index] ?? '']));

      const indexLines: string[] = [];
      for (const path of files.keys()) {
        const previous = state.entries.get(path);
        const id = newIds.get(path);
        if (id === undefined && previous) indexLines.push(`${previous.mode} ${previous.object}\t${path}`);
        else indexLines.push(`${previous?.mode === '100755' ? '100755' : '100644'} ${id}\t${path}`);
      }
      // Entries that are not text files (e.g. submodule links) are carried over untouched.
      for (const [path, entry] of state.entries) {
        if (entry.type !== 'blob' && !files.has(path)) indexLines.push(`${entry.mode} ${entry.object}\t${path}`);
      }
      const indexEnv = { GIT_INDEX_FILE: join(work, 'index') };
      const indexed = await git.run(['update-index', '-z', '--index-info'], {
        input: indexLines.map((line) => `${line}\0`).join(''),
        env: indexEnv,
      });
      if (indexed.code !== 0) throw this.cacheFailure('update-index', indexed.stderr);
      const tree = await git.run(['write-tree'], { env: indexEnv });
      if (tree.code !== 0) throw this.cacheFailure('write-tree', tree.stderr);

      const parent = state.snapshot.revision;
      const committed = await git.run(['commit-tree', tree.stdout.trim(), ...(parent === null ? [] : ['-p', parent])], {
        input: message.endsWith('\n') ? message : `${message}\n`,
        env: LEDGER_IDENTITY,
      });
      if (committed.code !== 0) throw this.cacheFailure('commit-tree', committed.stderr);
      return committed.stdout.trim();
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }

  /** Writes the blobs with one hash-object process and returns their ids in order. */
  private async hashBlobs(git: GitCli, blobFiles: readonly string[]): Promise<string[]> {
    const hashed = await git.run(['hash-object', '-w', '--no-filters', '--stdin-paths'], { input: `${blobFiles.join('\n')}\n` });
    const ids = hashed.stdout.split('\n').filter((line) => line !== '');
    if (hashed.code !== 0 || ids.length !== blobFiles.length) throw this.cacheFailure('hash-object', hashed.stderr);
    return ids;
  }

  /** Pushes without force: git refuses unless the branch is still where our commit's parent says. */
  private async push(git: GitCli, commit: string): Promise<PushOutcome> {
    const pushed = await git.run(['push', '--porcelain', '--no-verify', this.remote, `${commit}:refs/heads/${this.branch}`], {
      timeoutMs: NETWORK_TIMEOUT_MS,
    });
    if (pushed.code === 0) return 'pushed';
    const output = `${pushed.stdout}\n${pushed.stderr}`;
    if (/\[rejected\] \((fetch first|non-fast-forward|stale info)\)/.test(output)) return 'conflict';
    const remoteRejected = /\[remote rejected\]/.test(output);
    if (remoteRejected && /hook declined|GH0\d\d|protected branch|rule violation|ruleset/i.test(output)) {
      throw new ExocompError('ledger-unreachable', `the push to the ledger ${this.description} was rejected by a rule or hook: ${this.gitMessage(output)}`, {
        help: `branch rules that target every branch (e.g. GitHub rulesets for "All branches") block the ledger branch ${this.branch} too: exclude ${this.branch} from the rule, or keep the ledger in another repository (the ledger-repository input, or --ledger)`,
      });
    }
    // The remote moved between our fetch and its ref update (its lock or old-value check failed).
    if (remoteRejected && /cannot lock ref|but expected|incorrect old value|failed to update ref/i.test(output)) return 'conflict';
    throw new ExocompError('ledger-unreachable', `cannot push to the ledger ${this.description}: ${this.gitMessage(output)}`, {
      help: `check that ${this.shownRemote} is reachable and that these credentials may push to it (in GitHub Actions: permissions: contents: write), then re-run`,
    });
  }

  /**
   * Deletes the operation's temporary ref and records the newest commit we know
   * in a shared ref, so the next fetch (by any process) negotiates from it
   * instead of downloading the whole history. The shared ref is only a hint.
   */
  private async release(git: GitCli, ref: string | null, latest: string | null): Promise<void> {
    if (ref === null) return;
    if (latest !== null) {
      const moved = await git.run(['update-ref', '--stdin'], {
        input: `update refs/exocomp/known/${this.branch} ${latest}\ndelete ${ref}\n`,
      });
      if (moved.code === 0) return;
    }
    // Another process holds the shared ref's lock: only delete ours.
    await git.run(['update-ref', '-d', ref]);
  }

  private gitMessage(output: string): string {
    const lines = output
      .split(this.remote)
      .join(this.shownRemote)
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== '' && !line.startsWith('hint:') && line !== 'Done' && !line.startsWith('To '));
    return lines.slice(0, 12).join(' | ') || 'git reported no detail';
  }

  private cacheFailure(command: string, stderr: string): ExocompError {
    return new ExocompError('internal', `git ${command} failed in the ledger cache repository: ${this.gitMessage(stderr)}`, {
      help: `remove the cache directory ${this.cacheRoot} and re-run; if it persists, report it`,
    });
  }
}

interface BatchObject {
  id: string;
  type: string;
  content: string;
}

/**
 * Splits `cat-file --batch` output into objects. Sizes are in bytes, so the
 * output is handled as bytes; ledger files are UTF-8 text, which survives the
 * round trip through a string exactly — anything else breaks the framing and
 * is reported.
 */
function parseBatchOutput(stdout: string, description: string): BatchObject[] {
  const bytes = Buffer.from(stdout, 'utf8');
  const objects: BatchObject[] = [];
  let position = 0;
  while (position < bytes.length) {
    const headerEnd = bytes.indexOf(0x0a, position);
    const [id = '', type = '', sizeText = ''] = bytes.toString('utf8', position, headerEnd === -1 ? bytes.length : headerEnd).split(' ');
    const size = Number(sizeText);
    const end = headerEnd + 1 + size;
    if (headerEnd === -1 || type === 'missing' || !Number.isInteger(size) || bytes[end] !== 0x0a) {
      throw new ExocompError('ledger-record', `the ledger ${description} holds a file that is not UTF-8 text (object ${id})`, {
        help: 'ledger files are UTF-8 text written by exocomp; remove the offending file from the ledger branch',
      });
    }
    objects.push({ id, type, content: bytes.toString('utf8', headerEnd + 1, end) });
    position = end + 1;
  }
  return objects;
}

/**
 * Lets processes that share a cache repository take turns writing a branch.
 * Without it, N writers on one machine mostly reject each other's pushes and
 * the unlucky ones run out of attempts. It is advisory only: the push's
 * compare-and-swap keeps the ledger correct, so a lock whose holder died or
 * that is held too long is broken, and a writer that waits too long goes
 * ahead without it.
 */
class WriterLock {
  constructor(private readonly path: string) {}

  async acquire(): Promise<() => Promise<void>> {
    const token = `${process.pid} ${hostname()} ${randomBytes(6).toString('hex')}`;
    const deadline = Date.now() + WRITER_LOCK_WAIT_MS;
    while (Date.now() < deadline) {
      try {
        await writeFile(this.path, token, { flag: 'wx' });
        return () => this.release(token);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') break;
      }
      const holder = await this.holder();
      if (holder === 'abandoned') await rm(this.path, { force: true });
      else if (holder === 'alive') await sleep(5 + Math.random() * 20);
    }
    return () => Promise.resolve();
  }

  private async release(token: string): Promise<void> {
    const holder = await readFile(this.path, 'utf8').catch(() => '');
    if (holder === token) await rm(this.path, { force: true });
  }

  private async holder(): Promise<'alive' | 'abandoned' | 'none'> {
    try {
      const [holder, info] = await Promise.all([readFile(this.path, 'utf8'), stat(this.path)]);
      if (Date.now() - info.mtimeMs > WRITER_LOCK_STALE_MS) return 'abandoned';
      const [pid, host] = holder.split(' ');
      const dead = host === hostname() && pid !== undefined && pid !== '' && !isProcessAlive(Number(pid));
      return dead ? 'abandoned' : 'alive';
    } catch (error) {
      // Released meanwhile: try again at once.
      return (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'none' : 'alive';
    }
  }
}

function backoffMs(attempt: number): number {
  const ceiling = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** (attempt - 1));
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

function defaultCacheRoot(): string {
  const base = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(base, 'exocomp', 'ledgers');
}

function isValidBranchName(name: string): boolean {
  return (
    /^[A-Za-z0-9._/-]+$/.test(name) &&
    !name.startsWith('-') &&
    !name.split('/').some((part) => part === '' || part.startsWith('.') || part.endsWith('.lock')) &&
    !name.includes('..') &&
    !name.endsWith('.')
  );
}

async function pauseBeforePushForTests(commit: string): Promise<void> {
  const marker = process.env[TEST_PAUSE_BEFORE_PUSH_VARIABLE];
  if (!marker) return;
  await writeFile(marker, commit);
  while (existsSync(marker)) await sleep(20);
}
