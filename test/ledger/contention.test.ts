/**
 * The ledger cache under contention (issue 37), with real git: other processes holding git's lock files in
 * the cache, or deleting its refs, never fail a read; only a lock the read needs, held past the ledger's
 * time budget, does, and then it says so.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ProcessGitCli, type GitCli } from '../../src/adapters/git.js';
import { runProcess } from '../../src/adapters/process.js';
import { ExocompError } from '../../src/domain/errors.js';
import { GitLedgerStore } from '../../src/ledger/git-store.js';
import type { LedgerChange } from '../../src/ledger/store.js';
import { git, makeBareRemote, makeTempDir } from './helpers.js';

let temp: { path: string; remove: () => Promise<void> };
let remote: string;
let caches = 0;
/** Lock holders still running when a test ends: their process groups, ended by id (their locks go with the temp dir). */
const holders = new Set<number>();

beforeEach(async () => {
  temp = await makeTempDir();
  remote = await makeBareRemote(temp.path);
});
afterEach(async () => {
  for (const pid of holders) process.kill(-pid, 'SIGKILL');
  holders.clear();
  await temp.remove();
});

function store(options: Partial<ConstructorParameters<typeof GitLedgerStore>[0]> = {}): GitLedgerStore {
  return new GitLedgerStore({ remote, cacheDir: join(temp.path, `cache-${++caches}`), ...options });
}

const write = (files: Record<string, string>): LedgerChange<undefined> => ({
  writes: new Map(Object.entries(files)),
  message: 'test change',
  result: undefined,
});

/** Where older versions kept their copy of the ledger refs in the cache (per ledger name). */
const OLD_COPY = createHash('sha256').update('exocomp-ledger').digest('hex').slice(0, 16);
/** The lock file older versions and this one take turns with. */
const FETCH_LOCK = `exocomp-writer-${OLD_COPY}.lock`;

/** The one cache repository under `cacheDir`. */
async function cacheRepository(cacheDir: string): Promise<string> {
  const [repo = ''] = (await readdir(cacheDir)).filter((name) => !name.includes('.init-'));
  return join(cacheDir, repo);
}

/**
 * Another process that holds git's lock `files` (created as git creates them) for `seconds`, then removes them;
 * resolves once they exist, with the moment the process has released them.
 */
async function holdLocks(files: readonly string[], seconds: number): Promise<{ released: Promise<number> }> {
  const quoted = files.map((file) => `'${file}'`).join(' ');
  const child = spawn(
    'sh',
    ['-c', `set -e; for f in ${quoted}; do : > "$f"; done; sleep ${seconds}; rm -f ${quoted}`],
    { stdio: 'ignore', detached: true },
  );
  holders.add(child.pid!);
  const released = new Promise<number>((resolve) =>
    child.on('exit', () => {
      holders.delete(child.pid!);
      resolve(Date.now());
    }),
  );
  while (!files.every((file) => existsSync(file))) await new Promise((done) => setTimeout(done, 10));
  return { released };
}

describe("another process holding git's locks in a shared cache", () => {
  it("packed-refs.lock and a ref lock held past git's own lock timeouts: nothing a read needs, so it reads at once", async () => {
    const shared = join(temp.path, 'shared-cache');
    await store().update(() => write({ 'workflows/a.json': 'a1' }));
    await store({ cacheDir: shared }).read();
    await store().update(() => write({ 'workflows/a.json': 'a2', 'workflows/b.json': 'b1' }));
    // The lock of a ref as an older version kept it (its copy of the ledger refs), and packed-refs.lock, which
    // every deletion of a ref takes: git waits 1 s for it (core.packedRefsTimeout), 100 ms for a ref's.
    const repo = await cacheRepository(shared);
    const copyRef = join(repo, `refs/exocomp/ledger/${OLD_COPY}/exocomp-ledger-records/workflows/a.json`);
    await mkdir(dirname(copyRef), { recursive: true });
    const locks = [join(repo, 'packed-refs.lock'), `${copyRef}.lock`];
    await holdLocks(locks, 600);

    // Read and written while both locks are held, past the time budget: neither needs them.
    const reader = store({ cacheDir: shared, retryForMs: 1_000 });
    const snapshot = await reader.read();
    expect(snapshot.read('workflows/a.json')).toBe('a2');
    expect(snapshot.read('workflows/b.json')).toBe('b1');
    await reader.update(() => write({ 'workflows/a.json': 'a3' }));
    expect(locks.every((lock) => existsSync(lock))).toBe(true);
    expect((await store().read()).read('workflows/a.json')).toBe('a3');
  }, 120_000);

  it("the shallow.lock a cache's first fetch needs: waited out while it is held, reported when it outlives the budget", async () => {
    // Two caches that exist but hold no ledger ref yet: a first fetch takes the tips only and needs shallow.lock.
    const shared = join(temp.path, 'shared-cache');
    const fresh = join(temp.path, 'fresh-cache');
    await store({ cacheDir: shared }).read();
    await store({ cacheDir: fresh }).read();
    await store().update(() => write({ 'workflows/a.json': 'a1' }));

    const held = await holdLocks([join(await cacheRepository(shared), 'shallow.lock')], 3);
    const started = Date.now();
    const snapshot = await store({ cacheDir: shared, retryForMs: 60_000 }).read();
    expect(snapshot.read('workflows/a.json')).toBe('a1');
    expect(Date.now()).toBeGreaterThanOrEqual(await held.released);
    expect(Date.now() - started).toBeGreaterThan(1_000);

    await holdLocks([join(await cacheRepository(fresh), 'shallow.lock')], 30);
    const error = await store({ cacheDir: fresh, retryForMs: 1_500 })
      .read()
      .then(
        () => undefined,
        (caught: unknown) => caught,
      );
    expect(error).toBeInstanceOf(ExocompError);
    const { message } = error as ExocompError;
    expect(message).toMatch(
      /is still locked by another process after 1\.5s \(fatal: Unable to create '[^']*shallow\.lock'/,
    );
    expect(message).toMatch(/\(git exited with status 128\)\)$/);
    expect(message).not.toMatch(/Another git process seems to be running/);
  }, 120_000);
});

describe('another process deleting the refs of a shared cache', () => {
  /** A git adapter whose fetches are followed, before anything else runs, by another process deleting every ref of the cache. */
  const deletingAfterFetch =
    (deletions: { count: number }) =>
    (gitDir: string): GitCli => {
      const real = new ProcessGitCli({ gitDir });
      return {
        secrets: real.secrets,
        async run(args, options) {
          const result = await real.run(args, options);
          if (args[0] === 'fetch') {
            const deleted = await runProcess('sh', [
              '-c',
              `git --git-dir='${gitDir}' for-each-ref --format='delete %(refname)' | git --git-dir='${gitDir}' update-ref --stdin`,
            ]);
            expect(deleted.code).toBe(0);
            deletions.count++;
          }
          return result;
        },
      };
    };

  it.each([
    ['holding the fetch lock', false],
    ['finding the fetch lock taken', true],
  ])(
    'a read %s finds what it fetched',
    async (_, lockTaken) => {
      const shared = join(temp.path, 'shared-cache');
      await store({ cacheDir: shared }).update(() => write({ 'workflows/a.json': 'a1' }));
      await store({ cacheDir: shared }).read();
      // Another machine adds a record; the one this cache holds at its tip lets the read fetch beside others.
      await store().update(() => write({ 'workflows/b.json': 'b1' }));
      const repo = await cacheRepository(shared);
      // Refs as older versions sharing the cache make them: their copy of the ledger refs, and a private fetch's.
      const a1 = (
        await git(['--git-dir', remote, 'rev-parse', 'exocomp-ledger-records/workflows/a.json'])
      ).stdout.trim();
      for (const prefix of [`refs/exocomp/ledger/${OLD_COPY}/`, 'refs/exocomp/fetch/0abc1234-1-0def/'])
        await git(['--git-dir', repo, 'update-ref', `${prefix}exocomp-ledger-records/workflows/a.json`, a1]);
      if (lockTaken) await writeFile(join(repo, FETCH_LOCK), `${process.pid} ${hostname()} held-by-the-test`);
      const deletions = { count: 0 };
      const reader = store({ cacheDir: shared, git: deletingAfterFetch(deletions) });
      const snapshot = await reader.read();
      expect(deletions.count).toBe(1);
      expect(snapshot.read('workflows/a.json')).toBe('a1');
      expect(snapshot.read('workflows/b.json')).toBe('b1');
      expect((await git(['--git-dir', repo, 'for-each-ref'])).stdout).toBe('');
      await store().update(() => write({ 'workflows/b.json': 'b2' }));
      expect((await reader.read()).read('workflows/b.json')).toBe('b2');
    },
    120_000,
  );
});
