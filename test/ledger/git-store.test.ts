import { existsSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { httpAuthConfig, ProcessGitCli, type GitCli } from '../../src/adapters/git.js';
import { runProcess } from '../../src/adapters/process.js';
import { ExocompError } from '../../src/domain/errors.js';
import { buildTrees, commitBytes, objectId, packOf, type LooseObject } from '../../src/ledger/git-objects.js';
import { GitLedgerStore } from '../../src/ledger/git-store.js';
import { resolveLedgerLocation } from '../../src/ledger/location.js';
import type { LedgerChange, LedgerSnapshot } from '../../src/ledger/store.js';
import { git, ledgerRefs, makeBareRemote, makeTempDir, showRecord } from './helpers.js';

let temp: { path: string; remove: () => Promise<void> };
let remote: string;
let caches = 0;

beforeEach(async () => {
  temp = await makeTempDir();
  remote = await makeBareRemote(temp.path);
});
afterEach(async () => {
  await temp.remove();
});

/** Each store gets its own cache, as a separate machine would. */
function store(options: Partial<ConstructorParameters<typeof GitLedgerStore>[0]> = {}): GitLedgerStore {
  return new GitLedgerStore({ remote, cacheDir: join(temp.path, `cache-${++caches}`), ...options });
}

function change<T = undefined>(
  writes: Record<string, string | null>,
  message = 'test change',
  result?: T,
): LedgerChange<T | undefined> {
  return { writes: new Map(Object.entries(writes)), message, result };
}

async function expectExocompError(promise: Promise<unknown>, kind: string): Promise<ExocompError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ExocompError);
  expect((error as ExocompError).kind).toBe(kind);
  return error as ExocompError;
}

describe('GitLedgerStore', () => {
  it('reads a ledger that has no ref yet as empty', async () => {
    const snapshot = await store().read();
    expect(snapshot.revision).toBeNull();
    expect(snapshot.list('')).toEqual([]);
    expect(snapshot.read('workflows/a.json')).toBeUndefined();
    expect(await ledgerRefs(remote)).toBeNull();
  });

  it('writes each record on its own branch, readable with plain git and by another reader', async () => {
    const result = await store().update(() =>
      change({ 'workflows/a.json': '{"a":1}\n', known_hosts: 'héllo ✓\n' }, 'write a', 42),
    );
    expect(result).toBe(42);
    const snapshot = await store().read();
    expect(snapshot.revision).toMatch(/^[0-9a-f]{40}$/);
    expect((await store().read()).revision).toBe(snapshot.revision);
    expect(snapshot.read('workflows/a.json')).toBe('{"a":1}\n');
    expect(snapshot.read('known_hosts')).toBe('héllo ✓\n');
    expect(await showRecord(remote, 'workflows/a.json')).toBe('{"a":1}\n');
    expect(await showRecord(remote, 'known_hosts')).toBe('héllo ✓\n');
    const refs = (await ledgerRefs(remote))?.split('\n').map((line) => line.split(' ')[1]);
    expect(refs).toEqual([
      'refs/heads/exocomp-ledger-records/known_hosts',
      'refs/heads/exocomp-ledger-records/workflows/a.json',
    ]);
  });

  it('keeps a standing inventory, its materialized file and its sealed outputs on one branch', async () => {
    await store().update(() =>
      change({ 'inventories/edge.json': 'r', 'inventories/edge.inventory.json': 'i', 'sealed/edge.json': 's' }),
    );
    const files = await git([
      '--git-dir',
      remote,
      'ls-tree',
      '-r',
      '--name-only',
      'exocomp-ledger-records/inventories/edge.json',
    ]);
    expect(files.stdout.trim().split('\n')).toEqual([
      'inventories/edge.inventory.json',
      'inventories/edge.json',
      'sealed/edge.json',
    ]);
  });

  it('deletes files with null writes, keeping the record branch and its history', async () => {
    const ledger = store();
    await ledger.update(() => change({ 'a.json': 'a', 'dir/b.json': 'b' }));
    await ledger.update(() => change({ 'a.json': null }, 'delete a'));
    const snapshot = await store().read();
    expect(snapshot.read('a.json')).toBeUndefined();
    expect(snapshot.list('')).toEqual(['dir/b.json']);
    const tree = await git(['--git-dir', remote, 'ls-tree', '-r', '--name-only', 'exocomp-ledger-records/a.json']);
    expect(tree.stdout.trim()).toBe('');
    const log = await git(['--git-dir', remote, 'log', '--format=%s', 'exocomp-ledger-records/a.json']);
    expect(log.stdout.trim().split('\n')).toEqual(['delete a', 'test change']);
  });

  it('lists the files under a folder prefix, sorted', async () => {
    await store().update(() =>
      change({
        'workflows/b.json': 'b',
        'workflows/a.json': 'a',
        'workflows/nested/c.json': 'c',
        'workflowsX/d.json': 'd',
        'inventories/x.json': 'x',
      }),
    );
    const snapshot = await store().read();
    expect(snapshot.list('workflows/')).toEqual(['workflows/a.json', 'workflows/b.json', 'workflows/nested/c.json']);
    expect(snapshot.list('inventories/')).toEqual(['inventories/x.json']);
    expect(snapshot.list('sealed/')).toEqual([]);
  });

  it('creates record branches as orphans, unrelated to the repository history', async () => {
    const repo = join(temp.path, 'repo');
    await git(['init', '--quiet', repo]);
    await writeFile(join(repo, 'README'), 'project\n');
    await git(['add', 'README'], { cwd: repo });
    await git(['commit', '--quiet', '-m', 'project commit'], { cwd: repo });

    await store({ remote: join(repo, '.git') }).update(() => change({ 'a.json': 'a' }, 'first ledger commit'));
    const parents = await git(['rev-list', '--parents', 'exocomp-ledger-records/a.json'], { cwd: repo });
    expect(parents.stdout.trim().split('\n')).toHaveLength(1);
    expect(parents.stdout.trim().split(' ')).toHaveLength(1);
    const mergeBase = await git(['merge-base', 'main', 'exocomp-ledger-records/a.json'], {
      cwd: repo,
      allowFailure: true,
    });
    expect(mergeBase.code).not.toBe(0);
    // The work tree and checked-out branch are untouched.
    expect((await git(['status', '--porcelain'], { cwd: repo })).stdout).toBe('');
    expect((await git(['symbolic-ref', 'HEAD'], { cwd: repo })).stdout.trim()).toBe('refs/heads/main');
  });

  it('writes nothing when mutate throws', async () => {
    const ledger = store({ cacheDir: join(temp.path, 'own-cache') });
    const boom = new Error('boom');
    await expect(
      ledger.update(() => {
        throw boom;
      }),
    ).rejects.toBe(boom);
    expect(await ledgerRefs(remote)).toBeNull();

    await ledger.update(() => change({ 'a.json': 'a' }));
    const before = await ledgerRefs(remote);
    await expect(
      ledger.update(() => {
        throw boom;
      }),
    ).rejects.toBe(boom);
    expect(await ledgerRefs(remote)).toBe(before);
  });

  it('commits nothing for a change without writes, or whose writes change nothing', async () => {
    const ledger = store();
    expect(await ledger.update(() => change({}, 'nothing', 'ok'))).toBe('ok');
    expect(await ledgerRefs(remote)).toBeNull();
    await ledger.update(() => change({ 'a.json': 'a' }));
    const refs = await ledgerRefs(remote);
    expect(await ledger.update(() => change({ 'a.json': 'a', 'missing.json': null }, 'same', 'same'))).toBe('same');
    expect(await ledgerRefs(remote)).toBe(refs);
  });

  it('uses the change message as the commit message, under the ledger identity, naming the writer in a trailer', async () => {
    const ledger = store({ writer: 'run 42 of ci' });
    await ledger.update(() => change({ 'a.json': 'a' }, 'workflow w1: apply running'));
    await ledger.update(() => change({ 'a.json': 'b' }, 'workflow w1: apply succeeded\n\nwith detail'));
    const log = await git([
      '--git-dir',
      remote,
      'log',
      '--format=%an <%ae>|%cn <%ce>|%B%x00',
      'exocomp-ledger-records/a.json',
    ]);
    const entries = log.stdout
      .split('\0')
      .map((entry) => entry.trim())
      .filter(Boolean);
    expect(entries).toEqual([
      'exocomp-ledger <ledger@exocomp.invalid>|exocomp-ledger <ledger@exocomp.invalid>|workflow w1: apply succeeded\n\nwith detail\n\nExocomp-Writer: run 42 of ci',
      'exocomp-ledger <ledger@exocomp.invalid>|exocomp-ledger <ledger@exocomp.invalid>|workflow w1: apply running\n\nExocomp-Writer: run 42 of ci',
    ]);
  });

  it("stamps each commit's author and committer date with the injected clock, not the machine's", async () => {
    const ledger = store({ now: () => new Date('2031-04-05T06:07:08.900Z') });
    await ledger.update(() => change({ 'a.json': 'a', 'b.json': 'b' }, 'two records'));
    const dates = await git(['--git-dir', remote, 'log', '--format=%aI %cI', '--branches=exocomp-ledger-records/*']);
    expect(dates.stdout.trim().split('\n')).toEqual([
      '2031-04-05T06:07:08+00:00 2031-04-05T06:07:08+00:00',
      '2031-04-05T06:07:08+00:00 2031-04-05T06:07:08+00:00',
    ]);
  });

  it('re-applies the change to the new snapshot when another writer changed the same record first', async () => {
    const other = store();
    await other.update(() => change({ 'list.json': '["first"]' }));
    let interposed = false;
    const ledger = store({
      git: (gitDir) =>
        pushInterceptor(gitDir, async () => {
          if (interposed) return;
          interposed = true;
          await other.update((snapshot) => change({ 'list.json': appendTo(snapshot.read('list.json'), 'other') }));
        }),
    });
    let calls = 0;
    await ledger.update((snapshot) => {
      calls++;
      return change({ 'list.json': appendTo(snapshot.read('list.json'), 'mine') });
    });
    expect(calls).toBe(2);
    expect(JSON.parse((await store().read()).read('list.json') ?? '')).toEqual(['first', 'other', 'mine']);
    expect(
      (await git(['--git-dir', remote, 'rev-list', '--count', 'exocomp-ledger-records/list.json'])).stdout.trim(),
    ).toBe('3');
  });

  it('does not conflict with a writer of another record', async () => {
    const other = store();
    let n = 0;
    const ledger = store({
      git: (gitDir) =>
        pushInterceptor(gitDir, () => other.update(() => change({ 'workflows/theirs.json': String(++n) }))),
    });
    let calls = 0;
    await ledger.update(() => {
      calls++;
      return change({ 'workflows/mine.json': 'lands at once' });
    });
    expect(calls).toBe(1);
    expect(n).toBe(1);
    const snapshot = await store().read();
    expect(snapshot.read('workflows/mine.json')).toBe('lands at once');
    expect(snapshot.read('workflows/theirs.json')).toBe('1');
  });

  it('gives up at its deadline, not after a count, naming the record, the other writers and what to do', async () => {
    const other = store({ writer: 'job 7 of run 99' });
    let n = 0;
    const ledger = store({
      retryForMs: 1500,
      git: (gitDir) =>
        pushInterceptor(gitDir, () => other.update(() => change({ 'workflows/shared.json': String(++n) }))),
    });
    let calls = 0;
    const error = await expectExocompError(
      ledger.update(() => {
        calls++;
        return change({ 'workflows/shared.json': 'never lands' });
      }),
      'ledger-conflict',
    );
    expect(calls).toBeGreaterThanOrEqual(2);
    expect(error.message).toContain('exocomp-ledger-records/workflows/shared.json');
    expect(error.message).toContain('job 7 of run 99');
    expect(error.help).toMatch(/concurrency group/);
    expect(error.help).toMatch(/ledger-retry-for/);
    expect((await store().read()).read('workflows/shared.json')).not.toBe('never lands');
  });

  it('reports an unreachable remote as ledger-unreachable, on read and on update', async () => {
    const missing = join(temp.path, 'does-not-exist.git');
    const readError = await expectExocompError(store({ remote: missing }).read(), 'ledger-unreachable');
    expect(readError.message).toContain(missing);
    expect(readError.help).toBeTruthy();
    await expectExocompError(
      store({ remote: missing }).update(() => change({ 'a.json': 'a' })),
      'ledger-unreachable',
    );
  });

  it('keeps credentials out of descriptions and errors', async () => {
    // Port 9 on loopback: nothing listens, so the connection is refused at once.
    const ledger = store({
      remote: 'http://x-access-token:s3cretTOKEN@127.0.0.1:9/owner/repo.git',
      secrets: ['s3cretTOKEN'],
    });
    expect(ledger.description).not.toContain('s3cretTOKEN');
    const error = await expectExocompError(ledger.read(), 'ledger-unreachable');
    expect(`${error.message}\n${error.help}`).not.toContain('s3cretTOKEN');
    expect(error.message).toContain('127.0.0.1:9');
  });

  it('explains a push rejected by a branch rule', async () => {
    const hook = join(remote, 'hooks', 'pre-receive');
    await writeFile(
      hook,
      '#!/bin/sh\ncat >/dev/null\necho "error: GH013: Repository rule violations found for refs/heads/exocomp-ledger-records/a.json." >&2\nexit 1\n',
      {
        mode: 0o755,
      },
    );
    const error = await expectExocompError(
      store().update(() => change({ 'a.json': 'a' })),
      'ledger-unreachable',
    );
    expect(error.message).toContain('rejected by a rule or hook');
    expect(error.message).toContain('GH013');
    expect(error.help).toContain('ledger-repository');
    expect(error.help).toContain('exocomp-ledger-records/*');
  });

  it('refuses an invalid branch name as bad usage', () => {
    expect(() => store({ branch: '../x' })).toThrow(ExocompError);
    expect(() => store({ branch: 'a..b' })).toThrow(/invalid ledger name/);
  });

  it('refuses a path that cannot become a branch, before writing anything', async () => {
    await expectExocompError(
      store().update(() => change({ 'locks/x.lock': 'x' })),
      'ledger-record',
    );
    expect(await ledgerRefs(remote)).toBeNull();
  });
});

describe('processes sharing one cache', () => {
  it('a reader that finds the fetch lock held fetches the objects it needs at once, and makes no ref of its own', async () => {
    const shared = join(temp.path, 'shared-cache');
    await store({ cacheDir: shared }).update(() => change({ 'workflows/a.json': 'a1' }));
    // Read once, so the cache holds its copy of the ledger refs; then another machine writes.
    await store({ cacheDir: shared }).read();
    await store().update(() => change({ 'workflows/b.json': 'theirs' }));
    const [repo = ''] = (await readdir(shared)).filter((name) => !name.includes('.init-'));
    const cacheRefs = async () =>
      (await git(['--git-dir', join(shared, repo), 'for-each-ref', '--format=%(objectname) %(refname)'])).stdout;
    const before = await cacheRefs();
    // Another process holds the fetch lock (a long fetch): before, every reader queued behind it.
    const lockName = `exocomp-writer-${createHash('sha256').update('exocomp-ledger').digest('hex').slice(0, 16)}.lock`;
    await writeFile(join(shared, repo, lockName), `${process.pid} ${hostname()} held-by-the-test`);

    const started = Date.now();
    const snapshot = await store({ cacheDir: shared }).read();
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(snapshot.read('workflows/b.json')).toBe('theirs');
    expect(existsSync(join(shared, repo, lockName))).toBe(true);
    // Fetched by object id: not a ref of the cache was made, moved or deleted.
    expect(await cacheRefs()).toBe(before);
  });
});

describe('git processes per ledger operation', () => {
  it('a read or write after the first one costs one ls-remote while the remote has not moved, and a write adds one unpack-objects and one push', async () => {
    const ran: string[] = [];
    const ledger = store({ git: (gitDir) => counting(gitDir, ran) });
    await ledger.read();
    ran.length = 0;
    await ledger.update(() => change({ 'workflows/a.json': 'a1' }));
    expect(ran).toEqual(['ls-remote', 'unpack-objects', 'push']);
    ran.length = 0;
    expect((await ledger.read()).read('workflows/a.json')).toBe('a1');
    await ledger.update(() =>
      change({ 'workflows/a.json': 'a2', 'inventories/x.json': 'x', 'inventories/x.inventory.json': 'xi' }),
    );
    expect((await ledger.read()).read('inventories/x.inventory.json')).toBe('xi');
    await ledger.update(() => change({}));
    expect(ran).toEqual(['ls-remote', 'ls-remote', 'unpack-objects', 'push', 'ls-remote', 'ls-remote']);
  });

  it('a store that has just made its cache (a fresh runner) fetches the tips at once, without looking into the cache first', async () => {
    await store().update(() => change({ 'workflows/a.json': 'a1' }));
    const ran: string[] = [];
    expect((await store({ git: (gitDir) => counting(gitDir, ran) }).read()).read('workflows/a.json')).toBe('a1');
    expect(ran).toEqual(['ls-remote', 'fetch', 'cat-file', 'diff-tree', 'cat-file']);
  });

  it('reads again in full once another writer moved any ledger ref, and then sees its write', async () => {
    const ran: string[] = [];
    const ledger = store({ git: (gitDir) => counting(gitDir, ran) });
    await ledger.update(() => change({ 'workflows/a.json': 'a1' }));
    await store().update(() => change({ 'workflows/b.json': 'theirs' }));
    ran.length = 0;
    const snapshot = await ledger.read();
    expect(snapshot.read('workflows/b.json')).toBe('theirs');
    expect(ran).toEqual(['ls-remote', 'cat-file', 'fetch', 'cat-file', 'diff-tree', 'cat-file']);
    // A deleted ref counts as moved too.
    await git(['--git-dir', remote, 'update-ref', '-d', 'refs/heads/exocomp-ledger-records/workflows/b.json']);
    expect((await ledger.read()).read('workflows/b.json')).toBeUndefined();
  });

  it('after its own push holds exactly what a fresh read of the remote holds', async () => {
    const ledger = store();
    const same = async () => {
      const mine = await ledger.read();
      const fresh = await store().read();
      expect(mine.revision).toBe(fresh.revision);
      expect(mine.list('')).toEqual(fresh.list(''));
      for (const path of fresh.list('')) expect(mine.read(path)).toBe(fresh.read(path));
    };
    await ledger.update(() =>
      change({ 'workflows/a.json': 'a1', 'locks/k.json': 'k', 'inventories/x.json': 'x', 'sealed/x.json': 's' }),
    );
    await same();
    await ledger.update(() =>
      change({
        'workflows/a.json': null,
        'locks/k.json': null,
        'workflows/c.json': 'same text',
        'workflows/d.json': 'same text',
      }),
    );
    await same();
    await ledger.update(() => change({ 'inventories/x.inventory.json': 'xi', 'sealed/x.json': null }));
    await same();
  });
});

describe('a change that reads only what it writes', () => {
  const bump = (snapshot: LedgerSnapshot, path: string) => {
    const current = snapshot.read(path);
    if (current === undefined) throw new Error(`${path} is missing`);
    return change({ [path]: String(Number(current) + 1) }, 'bump', Number(current) + 1);
  };

  it('is tried on the ledger last seen, without asking the remote: one unpack-objects and one push', async () => {
    const ran: string[] = [];
    const ledger = store({ git: (gitDir) => counting(gitDir, ran) });
    await ledger.update(() => change({ 'workflows/a.json': '1' }));
    ran.length = 0;
    expect(await ledger.update((snapshot) => bump(snapshot, 'workflows/a.json'), { readsOnlyItsWrites: true })).toBe(2);
    expect(ran).toEqual(['unpack-objects', 'push']);
    expect(await showRecord(remote, 'workflows/a.json')).toBe('2');
  });

  it('whose record another writer changed since: the push is refused, and the change is made again on a fresh read', async () => {
    const ran: string[] = [];
    const ledger = store({ git: (gitDir) => counting(gitDir, ran) });
    await ledger.update(() => change({ 'workflows/a.json': '1' }));
    // Another machine: its own cache and writer name (one name making the identical commit would be the same write).
    await store({ writer: 'other' }).update((snapshot) => bump(snapshot, 'workflows/a.json'));
    ran.length = 0;
    expect(await ledger.update((snapshot) => bump(snapshot, 'workflows/a.json'), { readsOnlyItsWrites: true })).toBe(3);
    expect(ran.slice(0, 3)).toEqual(['unpack-objects', 'push', 'ls-remote']);
    expect(await showRecord(remote, 'workflows/a.json')).toBe('3');
  });

  it('that throws, or writes nothing, on the ledger last seen is decided by a fresh read', async () => {
    const ledger = store();
    await ledger.update(() => change({ 'workflows/a.json': '1' }));
    // Created by another writer after this store's last read: missing from what it saw.
    await store().update(() => change({ 'workflows/b.json': '5' }));
    expect(await ledger.update((snapshot) => bump(snapshot, 'workflows/b.json'), { readsOnlyItsWrites: true })).toBe(6);
    expect(await showRecord(remote, 'workflows/b.json')).toBe('6');
    // What this store saw already says what the change writes, but another writer changed it since.
    await store().update(() => change({ 'workflows/a.json': '7' }));
    const result = await ledger.update(
      (snapshot) => change({ 'workflows/a.json': '1' }, 'set', snapshot.read('workflows/a.json')),
      { readsOnlyItsWrites: true },
    );
    expect(result).toBe('7');
    expect(await showRecord(remote, 'workflows/a.json')).toBe('1');
  });

  it('that says it read other records is never pushed on the ledger last seen: it is made on a fresh read', async () => {
    const ran: string[] = [];
    const ledger = store({ git: (gitDir) => counting(gitDir, ran) });
    await ledger.update(() => change({ 'workflows/a.json': '1', 'locks/k.json': 'old' }));
    // Another writer changes a record the change reads but does not write: no push of a.json would notice.
    await store().update(() => change({ 'locks/k.json': 'new' }));
    ran.length = 0;
    const copy = (snapshot: LedgerSnapshot) => ({
      ...change({ 'workflows/a.json': snapshot.read('locks/k.json') ?? '' }, 'copy', snapshot.read('locks/k.json')),
      readOthers: true,
    });
    expect(await ledger.update(copy, { readsOnlyItsWrites: true })).toBe('new');
    expect(ran[0]).toBe('ls-remote');
    expect(ran.filter((command) => command === 'push')).toHaveLength(1);
    expect(await showRecord(remote, 'workflows/a.json')).toBe('new');
  });

  it('two writers of one name making the same change from the same tip both count', async () => {
    const [a, b] = [store({ writer: 'one name' }), store({ writer: 'one name' })];
    await a.update(() => change({ 'locks/k.json': '0' }));
    await b.read();
    // Within the same second the two commits are byte for byte the same: the second push moves nothing.
    await a.update((snapshot) => bump(snapshot, 'locks/k.json'), { readsOnlyItsWrites: true });
    await b.update((snapshot) => bump(snapshot, 'locks/k.json'), { readsOnlyItsWrites: true });
    expect(await showRecord(remote, 'locks/k.json')).toBe('2');
    await a.update((snapshot) => bump(snapshot, 'locks/k.json'));
    await b.update((snapshot) => bump(snapshot, 'locks/k.json'));
    expect(await showRecord(remote, 'locks/k.json')).toBe('4');
  });

  it('racing 8 writers with separate caches on one record loses no update', async () => {
    // One writer name for all (matrix jobs of one run share theirs): identical commits must not pass for two writes.
    const writers = Array.from({ length: 8 }, () => store({ writer: 'one name' }));
    await writers[0]!.update(() => change({ 'locks/k.json': '0' }));
    await Promise.all(writers.map((w) => w.read()));
    await Promise.all(
      writers.flatMap((w) =>
        [1, 2, 3].map(() => w.update((snapshot) => bump(snapshot, 'locks/k.json'), { readsOnlyItsWrites: true })),
      ),
    );
    expect(await showRecord(remote, 'locks/k.json')).toBe('24');
  });
});

describe('a ref deleted on the remote between the listing and the fetch', () => {
  it('is listed again: the read holds the ledger without it', async () => {
    await store().update(() => change({ 'workflows/a.json': 'a1', 'workflows/gone.json': 'soon gone' }));
    let deleted = false;
    const racing = (gitDir: string): GitCli => {
      const real = new ProcessGitCli({ gitDir });
      return {
        secrets: real.secrets,
        async run(args, options) {
          const result = await real.run(args, options);
          // Right after this store listed the tips, the record is deleted and its objects pruned on the remote.
          if (args.includes('ls-remote') && !deleted) {
            deleted = true;
            await git([
              '--git-dir',
              remote,
              'update-ref',
              '-d',
              'refs/heads/exocomp-ledger-records/workflows/gone.json',
            ]);
            await git(['--git-dir', remote, '-c', 'gc.reflogExpire=now', 'gc', '--quiet', '--prune=now']);
          }
          return result;
        },
      };
    };
    const snapshot = await store({ git: racing }).read();
    expect(deleted).toBe(true);
    expect(snapshot.read('workflows/a.json')).toBe('a1');
    expect(snapshot.read('workflows/gone.json')).toBeUndefined();
  });
});

describe('packOf', () => {
  it('packs blobs, trees and commits of any size that git unpacks under the ids objectId gives', async () => {
    const repo = await makeBareRemote(temp.path, 'unpack.git');
    const big = Buffer.from('x'.repeat(300_000) + '\u00e9\n', 'utf8');
    const blobs = [Buffer.from(''), Buffer.from('fifteen bytes!\n'), Buffer.from('sixteen bytes!!\n'), big];
    const files = new Map(blobs.map((bytes, index) => [`f/${index}`, { mode: '100644', id: objectId('blob', bytes) }]));
    const trees = buildTrees(files);
    const commit = commitBytes({
      tree: trees.root,
      parents: [],
      name: 't',
      email: 't@example.invalid',
      when: new Date(0),
      message: 'packed',
    });
    const objects: LooseObject[] = [
      ...blobs.map((bytes) => ({ type: 'blob' as const, bytes })),
      ...trees.trees.map((tree) => ({ type: 'tree' as const, bytes: tree.bytes })),
      { type: 'commit', bytes: commit },
    ];
    const unpacked = await runProcess('git', ['--git-dir', repo, 'unpack-objects', '-q', '--strict'], {
      input: packOf(objects),
    });
    expect(unpacked.stderr).toBe('');
    expect(unpacked.code).toBe(0);
    const listed = await git(['--git-dir', repo, 'ls-tree', '-r', '-l', objectId('commit', commit)]);
    expect(
      listed.stdout
        .trim()
        .split('\n')
        .map((line) => line.split(/\s+/).slice(2, 4)),
    ).toEqual(blobs.map((bytes) => [objectId('blob', bytes), String(bytes.length)]));
    await git(['--git-dir', repo, 'fsck', '--strict', '--no-progress', '--no-dangling']);
  });
});

describe('the old single-branch layout', () => {
  /** An old ledger: two commits on exocomp-ledger, as the previous version wrote them. */
  async function oldLedger(extra: Record<string, string> = {}): Promise<string> {
    const work = join(temp.path, 'old');
    await git(['init', '--quiet', work]);
    await git(['checkout', '--quiet', '--orphan', 'exocomp-ledger'], { cwd: work });
    const put = async (files: Record<string, string>) => {
      for (const [path, text] of Object.entries(files)) {
        await mkdir(join(work, path, '..'), { recursive: true });
        await writeFile(join(work, path), text);
      }
      await git(['add', '-A'], { cwd: work });
    };
    await put({ 'workflows/a.json': 'a1\n', known_hosts: 'k1\n' });
    await git(['commit', '--quiet', '-m', 'old: a created'], { cwd: work });
    await put({
      'workflows/a.json': 'a2\n',
      'inventories/x.json': 'x\n',
      'inventories/x.inventory.json': 'xi\n',
      'sealed/x.json': 's\n',
      ...extra,
    });
    await git(['commit', '--quiet', '-m', 'old: a applied'], { cwd: work });
    await git(['push', '--quiet', remote, 'exocomp-ledger'], { cwd: work });
    return (await git(['rev-parse', 'HEAD'], { cwd: work })).stdout.trim();
  }

  it('is read as it is, and the first write moves every record to its own branch with its history', async () => {
    const oldTip = await oldLedger();
    const before = await store().read();
    expect(before.list('')).toEqual([
      'inventories/x.inventory.json',
      'inventories/x.json',
      'known_hosts',
      'sealed/x.json',
      'workflows/a.json',
    ]);
    expect(before.read('workflows/a.json')).toBe('a2\n');

    const migrating = store();
    await migrating.update(() => change({ 'workflows/b.json': 'b\n' }, 'b created'));
    const after = await store().read();
    const kept = await migrating.read();
    expect(kept.revision).toBe(after.revision);
    for (const path of after.list('')) expect(kept.read(path)).toBe(after.read(path));
    expect(after.list('')).toEqual([...before.list(''), 'workflows/b.json'].sort());
    for (const path of before.list('')) expect(after.read(path)).toBe(before.read(path));

    const refs = (await ledgerRefs(remote))?.split('\n').map((line) => line.split(' ')[1]);
    expect(refs).toEqual([
      'refs/heads/exocomp-ledger',
      'refs/heads/exocomp-ledger-records/inventories/x.json',
      'refs/heads/exocomp-ledger-records/known_hosts',
      'refs/heads/exocomp-ledger-records/workflows/a.json',
      'refs/heads/exocomp-ledger-records/workflows/b.json',
    ]);
    // History kept: a record's log continues into the old branch's.
    const log = await git(['--git-dir', remote, 'log', '--format=%s', 'exocomp-ledger-records/workflows/a.json']);
    expect(log.stdout.trim().split('\n')).toEqual([
      'move to exocomp-ledger-records/* from the single branch exocomp-ledger',
      'old: a applied',
      'old: a created',
    ]);
    const changes = await git([
      '--git-dir',
      remote,
      'log',
      '--format=%s',
      'exocomp-ledger-records/workflows/a.json',
      '--',
      'workflows/a.json',
    ]);
    expect(changes.stdout.trim().split('\n')).toEqual(['old: a applied', 'old: a created']);
    // The old branch moved forward (no force) to a commit that says where the records went.
    expect((await git(['--git-dir', remote, 'rev-parse', 'exocomp-ledger^'])).stdout.trim()).toBe(oldTip);
    expect((await git(['--git-dir', remote, 'ls-tree', '--name-only', 'exocomp-ledger'])).stdout.trim()).toBe(
      'MOVED.md',
    );
    await git(['--git-dir', remote, 'fsck', '--strict', '--no-progress']);

    // Later writes touch only their record.
    const moved = await ledgerRefs(remote);
    await store().update(() => change({ 'workflows/b.json': 'b2\n' }));
    const changed = (await ledgerRefs(remote))?.split('\n').filter((line) => !moved?.includes(line));
    expect(changed?.map((line) => line.split(' ')[1])).toEqual(['refs/heads/exocomp-ledger-records/workflows/b.json']);
  });

  it('`migrate` moves it without changing a record', async () => {
    await oldLedger();
    expect(await store().migrate()).toBe(5);
    expect((await git(['--git-dir', remote, 'ls-tree', '--name-only', 'exocomp-ledger'])).stdout.trim()).toBe(
      'MOVED.md',
    );
    expect(await showRecord(remote, 'workflows/a.json')).toBe('a2\n');
    expect(await store().migrate()).toBe(5);
  });

  it('refuses a branch holding an entry no ledger holds as not a ledger, naming it, and writes nothing', async () => {
    await oldLedger({ 'notes/x.lock': 'hand-written\n' });
    const before = await ledgerRefs(remote);
    const error = await expectExocompError(
      store().update(() => change({ 'workflows/b.json': 'b\n' })),
      'usage',
    );
    expect(error.message).toContain('notes/x.lock');
    expect(error.message).toContain('is not an exocomp ledger');
    await expectExocompError(store().migrate(), 'usage');
    await expectExocompError(store().read(), 'usage');
    expect(await ledgerRefs(remote)).toBe(before);
  });
});

describe('ProcessGitCli', () => {
  it('passes configuration through the environment and redacts secrets from output', async () => {
    const auth = httpAuthConfig('ghs_exampleTokenValue', 'https://example.invalid/');
    const cli = new ProcessGitCli({ gitDir: remote, config: auth.config, secrets: auth.secrets });
    const shown = await cli.run(['config', '--get', 'http.https://example.invalid/.extraheader']);
    expect(shown.code).toBe(0);
    expect(shown.stdout.trim()).toBe('AUTHORIZATION: basic ***');
    const raw = await cli.run(['config', '--get', 'http.https://example.invalid/.extraheader'], { rawStdout: true });
    expect(raw.stdout.trim()).toBe(
      `AUTHORIZATION: basic ${Buffer.from('x-access-token:ghs_exampleTokenValue').toString('base64')}`,
    );
  });
});

describe('resolveLedgerLocation', () => {
  it('uses an explicit --ledger: URLs as given, paths made absolute', async () => {
    expect(await resolveLedgerLocation({ ledger: 'https://github.com/o/r.git', cwd: temp.path })).toEqual({
      remote: 'https://github.com/o/r.git',
      description: 'https://github.com/o/r.git',
    });
    expect((await resolveLedgerLocation({ ledger: 'git@github.com:o/r.git', cwd: temp.path })).remote).toBe(
      'git@github.com:o/r.git',
    );
    expect((await resolveLedgerLocation({ ledger: 'remote.git', cwd: temp.path })).remote).toBe(remote);
  });

  it('defaults to the enclosing repository, shared by its worktrees', async () => {
    const repo = join(temp.path, 'repo');
    await git(['init', '--quiet', repo]);
    await git(['commit', '--quiet', '--allow-empty', '-m', 'init'], { cwd: repo });
    await mkdir(join(repo, 'sub', 'dir'), { recursive: true });
    const location = await resolveLedgerLocation({ cwd: join(repo, 'sub', 'dir') });
    expect(location.remote).toBe(join(repo, '.git'));
    expect(location.description).toContain(join(repo, '.git'));

    await git(['worktree', 'add', '--quiet', join(temp.path, 'wt')], { cwd: repo });
    expect((await resolveLedgerLocation({ cwd: join(temp.path, 'wt') })).remote).toBe(join(repo, '.git'));

    await store({ remote: location.remote }).update(() => change({ 'a.json': 'a' }));
    expect(await ledgerRefs(join(repo, '.git'))).not.toBeNull();
  });

  it('creates a bare .exocomp/ledger.git outside any repository, and reuses it', async () => {
    const cwd = join(temp.path, 'plain');
    await mkdir(cwd);
    const outside = await git(['rev-parse', '--git-dir'], { cwd, allowFailure: true });
    expect(outside.code).not.toBe(0); // precondition: the temp dir is in no repository
    const location = await resolveLedgerLocation({ cwd });
    const expected = join(cwd, '.exocomp', 'ledger.git');
    expect(location.remote).toBe(expected);
    expect((await git(['--git-dir', expected, 'rev-parse', '--is-bare-repository'])).stdout.trim()).toBe('true');

    await store({ remote: location.remote }).update(() => change({ 'a.json': 'kept' }));
    expect(await resolveLedgerLocation({ cwd })).toEqual(location);
    expect((await store({ remote: expected }).read()).read('a.json')).toBe('kept');
    expect(existsSync(join(expected, 'HEAD'))).toBe(true);
    expect(await readFile(join(expected, 'HEAD'), 'utf8')).toContain('ref:');
  });
});

/** A real git adapter that runs `beforePush` before each push (to stage a competing write). */
function pushInterceptor(gitDir: string, beforePush: () => Promise<unknown>): GitCli {
  const real = new ProcessGitCli({ gitDir });
  return {
    secrets: real.secrets,
    async run(args, options) {
      if (args[0] === 'push') await beforePush();
      return real.run(args, options);
    },
  };
}

/** A real git adapter that notes each command it runs (its subcommand, after the -c options). */
function counting(gitDir: string, ran: string[]): GitCli {
  const real = new ProcessGitCli({ gitDir });
  return {
    secrets: real.secrets,
    run(args, options) {
      ran.push(args[0] ?? '');
      return real.run(args, options);
    },
  };
}

function appendTo(json: string | undefined, entry: string): string {
  return JSON.stringify([...(JSON.parse(json ?? '[]') as string[]), entry]);
}
