import { existsSync, readdirSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { httpAuthConfig, ProcessGitCli, type GitCli } from '../../src/adapters/git.js';
import { ExocompError } from '../../src/domain/errors.js';
import { GitLedgerStore } from '../../src/ledger/git-store.js';
import { resolveLedgerLocation } from '../../src/ledger/location.js';
import type { LedgerChange } from '../../src/ledger/store.js';
import { branchTip, git, makeBareRemote, makeTempDir } from './helpers.js';

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

function change<T = undefined>(writes: Record<string, string | null>, message = 'test change', result?: T): LedgerChange<T | undefined> {
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
  it('reads a ledger whose branch does not exist yet as empty', async () => {
    const snapshot = await store().read();
    expect(snapshot.revision).toBeNull();
    expect(snapshot.list('')).toEqual([]);
    expect(snapshot.read('workflows/a.json')).toBeUndefined();
    expect(await branchTip(remote)).toBeNull();
  });

  it('writes files that another reader (with its own cache) sees at the pushed revision', async () => {
    const result = await store().update(() => change({ 'workflows/a.json': '{"a":1}\n', 'known_hosts': 'héllo ✓\n' }, 'write a', 42));
    expect(result).toBe(42);
    const snapshot = await store().read();
    expect(snapshot.revision).toBe(await branchTip(remote));
    expect(snapshot.read('workflows/a.json')).toBe('{"a":1}\n');
    expect(snapshot.read('known_hosts')).toBe('héllo ✓\n');
    const shown = await git(['--git-dir', remote, 'show', 'exocomp-ledger:workflows/a.json']);
    expect(shown.stdout).toBe('{"a":1}\n');
  });

  it('deletes files with null writes', async () => {
    const ledger = store();
    await ledger.update(() => change({ 'a.json': 'a', 'dir/b.json': 'b' }));
    await ledger.update(() => change({ 'a.json': null }, 'delete a'));
    const snapshot = await store().read();
    expect(snapshot.read('a.json')).toBeUndefined();
    expect(snapshot.list('')).toEqual(['dir/b.json']);
    const tree = await git(['--git-dir', remote, 'ls-tree', '-r', '--name-only', 'exocomp-ledger']);
    expect(tree.stdout.trim().split('\n')).toEqual(['dir/b.json']);
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

  it('creates the branch as an orphan, unrelated to the repository history', async () => {
    const repo = join(temp.path, 'repo');
    await git(['init', '--quiet', repo]);
    await writeFile(join(repo, 'README'), 'project\n');
    await git(['add', 'README'], { cwd: repo });
    await git(['commit', '--quiet', '-m', 'project commit'], { cwd: repo });

    await store({ remote: join(repo, '.git') }).update(() => change({ 'a.json': 'a' }, 'first ledger commit'));
    const parents = await git(['rev-list', '--parents', 'exocomp-ledger'], { cwd: repo });
    expect(parents.stdout.trim().split('\n')).toHaveLength(1);
    expect(parents.stdout.trim().split(' ')).toHaveLength(1);
    const mergeBase = await git(['merge-base', 'main', 'exocomp-ledger'], { cwd: repo, allowFailure: true });
    expect(mergeBase.code).not.toBe(0);
    // The work tree and checked-out branch are untouched.
    expect((await git(['status', '--porcelain'], { cwd: repo })).stdout).toBe('');
    expect((await git(['symbolic-ref', 'HEAD'], { cwd: repo })).stdout.trim()).toBe('refs/heads/main');
  });

  it('writes nothing when mutate throws, and leaves no temporary refs', async () => {
    const ledger = store({ cacheDir: join(temp.path, 'own-cache') });
    const boom = new Error('boom');
    await expect(ledger.update(() => { throw boom; })).rejects.toBe(boom);
    expect(await branchTip(remote)).toBeNull();

    await ledger.update(() => change({ 'a.json': 'a' }));
    const before = await branchTip(remote);
    await expect(ledger.update(() => { throw boom; })).rejects.toBe(boom);
    expect(await branchTip(remote)).toBe(before);

    const [cacheRepo] = readdirSync(join(temp.path, 'own-cache'));
    const refs = await git(['--git-dir', join(temp.path, 'own-cache', cacheRepo ?? ''), 'for-each-ref', '--format=%(refname)', 'refs/exocomp/tmp/']);
    expect(refs.stdout).toBe('');
  });

  it('commits nothing for a change without writes, or whose writes change nothing', async () => {
    const ledger = store();
    expect(await ledger.update(() => change({}, 'nothing', 'ok'))).toBe('ok');
    expect(await branchTip(remote)).toBeNull();
    await ledger.update(() => change({ 'a.json': 'a' }));
    const tip = await branchTip(remote);
    expect(await ledger.update(() => change({ 'a.json': 'a', 'missing.json': null }, 'same', 'same'))).toBe('same');
    expect(await branchTip(remote)).toBe(tip);
  });

  it('uses the change message as the commit message, under the ledger identity', async () => {
    const ledger = store();
    await ledger.update(() => change({ 'a.json': 'a' }, 'workflow w1: apply running'));
    await ledger.update(() => change({ 'a.json': 'b' }, 'workflow w1: apply succeeded\n\nwith detail'));
    const log = await git(['--git-dir', remote, 'log', '--format=%an <%ae>|%cn <%ce>|%B%x00', 'exocomp-ledger']);
    const entries = log.stdout.split('\0').map((entry) => entry.trim()).filter(Boolean);
    expect(entries).toEqual([
      'exocomp-ledger <ledger@exocomp.invalid>|exocomp-ledger <ledger@exocomp.invalid>|workflow w1: apply succeeded\n\nwith detail',
      'exocomp-ledger <ledger@exocomp.invalid>|exocomp-ledger <ledger@exocomp.invalid>|workflow w1: apply running',
    ]);
  });

  it('re-applies the change to the new snapshot when another writer pushed first', async () => {
    const other = store();
    await other.update(() => change({ 'list.json': '["first"]' }));
    let interposed = false;
    const ledger = store({
      git: (gitDir) => pushInterceptor(gitDir, async () => {
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
    expect((await git(['--git-dir', remote, 'rev-list', '--count', 'exocomp-ledger'])).stdout.trim()).toBe('3');
  });

  it('gives up with ledger-conflict after the bounded number of attempts', async () => {
    const other = store();
    let n = 0;
    const ledger = store({
      maxAttempts: 3,
      git: (gitDir) => pushInterceptor(gitDir, () => other.update(() => change({ 'x.json': String(++n) }))),
    });
    let calls = 0;
    const error = await expectExocompError(
      ledger.update(() => {
        calls++;
        return change({ 'mine.json': 'never lands' });
      }),
      'ledger-conflict',
    );
    expect(calls).toBe(3);
    expect(error.message).toContain('3 attempts');
    expect(error.help).toBeTruthy();
    expect((await store().read()).read('mine.json')).toBeUndefined();
  });

  it('reports an unreachable remote as ledger-unreachable, on read and on update', async () => {
    const missing = join(temp.path, 'does-not-exist.git');
    const readError = await expectExocompError(store({ remote: missing }).read(), 'ledger-unreachable');
    expect(readError.message).toContain(missing);
    expect(readError.help).toBeTruthy();
    await expectExocompError(store({ remote: missing }).update(() => change({ 'a.json': 'a' })), 'ledger-unreachable');
  });

  it('keeps credentials out of descriptions and errors', async () => {
    // Port 9 on loopback: nothing listens, so the connection is refused at once.
    const ledger = store({ remote: 'http://x-access-token:s3cretTOKEN@127.0.0.1:9/owner/repo.git', secrets: ['s3cretTOKEN'] });
    expect(ledger.description).not.toContain('s3cretTOKEN');
    const error = await expectExocompError(ledger.read(), 'ledger-unreachable');
    expect(`${error.message}\n${error.help}`).not.toContain('s3cretTOKEN');
    expect(error.message).toContain('127.0.0.1:9');
  });

  it('explains a push rejected by a branch rule', async () => {
    const hook = join(remote, 'hooks', 'pre-receive');
    await writeFile(hook, '#!/bin/sh\ncat >/dev/null\necho "error: GH013: Repository rule violations found for refs/heads/exocomp-ledger." >&2\nexit 1\n', { mode: 0o755 });
    const error = await expectExocompError(store().update(() => change({ 'a.json': 'a' })), 'ledger-unreachable');
    expect(error.message).toContain('rejected by a rule or hook');
    expect(error.message).toContain('GH013');
    expect(error.help).toContain('ledger-repository');
    expect(error.help).toContain('exocomp-ledger');
  });

  it('refuses an invalid branch name as bad usage', () => {
    expect(() => store({ branch: '../x' })).toThrow(ExocompError);
    expect(() => store({ branch: 'a..b' })).toThrow(/invalid ledger branch/);
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
    expect(raw.stdout.trim()).toBe(`AUTHORIZATION: basic ${Buffer.from('x-access-token:ghs_exampleTokenValue').toString('base64')}`);
  });
});

describe('resolveLedgerLocation', () => {
  it('uses an explicit --ledger: URLs as given, paths made absolute', async () => {
    expect(await resolveLedgerLocation({ ledger: 'https://github.com/o/r.git', cwd: temp.path })).toEqual({
      remote: 'https://github.com/o/r.git',
      description: 'https://github.com/o/r.git',
    });
    expect((await resolveLedgerLocation({ ledger: 'git@github.com:o/r.git', cwd: temp.path })).remote).toBe('git@github.com:o/r.git');
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
    expect(await branchTip(join(repo, '.git'))).not.toBeNull();
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

function appendTo(json: string | undefined, entry: string): string {
  return JSON.stringify([...(JSON.parse(json ?? '[]') as string[]), entry]);
}
