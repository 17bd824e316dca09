/**
 * Many writer processes against one bare remote: no lost updates, no forced
 * pushes, and a writer killed between commit and push leaves the remote
 * consistent. The remote's pre-receive hook rejects (and logs) any update that
 * is not a fast-forward, so a forced push by the store could not go unnoticed.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProcess } from '../../src/adapters/process.js';
import { GitLedgerStore, TEST_PAUSE_BEFORE_PUSH_VARIABLE } from '../../src/ledger/git-store.js';
import {
  git,
  ledgerRefs,
  makeTempDir,
  ownFile,
  readHookLog,
  remoteWithGuardHook as guardedRemote,
  runWriterFleet,
  SHARED_FILE,
  writerScript,
} from './helpers.js';
import { scaled } from '../support/time.js';

const ROOT = resolve(import.meta.dirname, '../..');
const WRITERS = 16;
const UPDATES = 8;
const RACING_UPDATES = 6;

let temp: { path: string; remove: () => Promise<void> };

beforeAll(async () => {
  temp = await makeTempDir();
});
afterAll(async () => {
  await temp.remove();
});

const remoteWithGuardHook = (name: string) => guardedRemote(temp.path, name);

async function expectAllUpdatesPresent(remote: string, writers: readonly string[], updates: number): Promise<void> {
  const snapshot = await new GitLedgerStore({ remote, cacheDir: join(temp.path, 'reader-cache') }).read();
  const shared = JSON.parse(snapshot.read(SHARED_FILE) ?? '[]') as string[];
  const expected = writers.flatMap((writer) => Array.from({ length: updates }, (_, n) => `${writer}-${n + 1}`));
  expect(shared).toHaveLength(expected.length);
  expect([...shared].sort()).toEqual([...expected].sort());
  for (const writer of writers) {
    expect(JSON.parse(snapshot.read(ownFile(writer)) ?? '{}')).toEqual({ writer, updates });
    // Each writer's entries appear in the order it made them.
    expect(shared.filter((entry) => entry.startsWith(`${writer}-`))).toEqual(
      expected.filter((entry) => entry.startsWith(`${writer}-`)),
    );
  }
  // One commit per update on the shared record's branch: its history is the audit trail.
  expect(
    (
      await git(['--git-dir', remote, 'rev-list', '--count', 'exocomp-ledger-records/workflows/shared.json'])
    ).stdout.trim(),
  ).toBe(String(expected.length));
  await git(['--git-dir', remote, 'fsck', '--strict', '--no-progress']);
}

async function runWriter(remote: string, cacheDir: string, writer: string, updates: number) {
  return runProcess(process.execPath, [await writerScript(), remote, cacheDir, writer, String(updates)], {
    cwd: ROOT,
  });
}

describe('concurrent ledger writers', () => {
  it(
    `loses none of ${WRITERS} × ${UPDATES} updates from processes sharing one cache, and never forces a push`,
    async () => {
      const { remote, hookLog } = await remoteWithGuardHook('contended.git');
      const cacheDir = join(temp.path, 'contended-cache');
      const writers = Array.from({ length: WRITERS }, (_, index) => `w${index + 1}`);
      const outcomes = await runWriterFleet(
        remote,
        writers.map((writer) => ({ writer, cacheDir, updates: UPDATES })),
        join(temp.path, 'contended.go'),
      );
      for (const outcome of outcomes) expect(outcome.stderr).toBe('');
      expect(outcomes.map((outcome) => outcome.code)).toEqual(writers.map(() => 0));

      await expectAllUpdatesPresent(remote, writers, UPDATES);
      const log = await readHookLog(hookLog);
      expect(log.filter((line) => line.startsWith('REJECTED'))).toEqual([]);
      expect(log.filter((line) => line.startsWith('ok ')).length).toBeGreaterThanOrEqual(WRITERS * UPDATES);

      // The shared cache holds only its copy of the ledger's refs.
      for (const repo of readdirSync(cacheDir).filter((name) => !name.includes('.init-'))) {
        const refs = await git(['--git-dir', join(cacheDir, repo), 'for-each-ref', '--format=%(refname)']);
        expect(refs.stdout.split('\n').filter((ref) => ref !== '' && !ref.startsWith('refs/exocomp/ledger/'))).toEqual(
          [],
        );
      }

      // The guard hook works: a forced push of unrelated history is rejected and logged.
      const scratch = join(temp.path, 'scratch');
      await git(['init', '--quiet', scratch]);
      await git(['commit', '--quiet', '--allow-empty', '-m', 'unrelated'], { cwd: scratch });
      const forced = await git(
        ['push', '--force', remote, 'HEAD:refs/heads/exocomp-ledger-records/workflows/shared.json'],
        { cwd: scratch, allowFailure: true },
      );
      expect(forced.code).not.toBe(0);
      expect(forced.stderr).toContain('pre-receive hook declined');
      expect(
        (await readHookLog(hookLog)).filter((line) =>
          line.startsWith('REJECTED non-ff refs/heads/exocomp-ledger-records/workflows/shared.json'),
        ),
      ).toHaveLength(1);
    },
    scaled(240_000),
  );

  it(
    'loses no update when writers on separate caches race each other with pushes',
    async () => {
      // Separate caches share no lock, like runners on different machines: every
      // write races, and only the push's compare-and-swap keeps updates apart.
      const { remote, hookLog } = await remoteWithGuardHook('racing.git');
      const writers = ['r1', 'r2', 'r3', 'r4'];
      const outcomes = await runWriterFleet(
        remote,
        writers.map((writer) => ({
          writer,
          cacheDir: join(temp.path, `racing-cache-${writer}`),
          updates: RACING_UPDATES,
        })),
        join(temp.path, 'racing.go'),
      );
      for (const outcome of outcomes) expect(outcome.stderr).toBe('');
      expect(outcomes.map((outcome) => outcome.code)).toEqual(writers.map(() => 0));
      // The writers did collide (some mutations ran again), so the retry path was exercised.
      const attempts = outcomes.reduce((sum, outcome) => sum + (outcome.attempts ?? 0), 0);
      expect(attempts).toBeGreaterThan(writers.length * RACING_UPDATES);

      await expectAllUpdatesPresent(remote, writers, RACING_UPDATES);
      expect((await readHookLog(hookLog)).filter((line) => line.startsWith('REJECTED'))).toEqual([]);
    },
    scaled(240_000),
  );

  it(
    'keeps the remote consistent when a writer is killed between commit and push',
    async () => {
      const { remote, hookLog } = await remoteWithGuardHook('killed.git');
      const cacheDir = join(temp.path, 'killed-cache');
      expect((await runWriter(remote, cacheDir, 'before', 2)).code).toBe(0);
      const refsBeforeKill = await ledgerRefs(remote);

      // runProcess gives no handle to kill the child, so this one is spawned directly.
      const pauseFile = join(temp.path, 'paused-before-push');
      const victim = spawn(process.execPath, [await writerScript(), remote, cacheDir, 'victim', '1'], {
        cwd: ROOT,
        env: { ...process.env, [TEST_PAUSE_BEFORE_PUSH_VARIABLE]: pauseFile },
        stdio: 'ignore',
      });
      const exited = new Promise<NodeJS.Signals | null>((done) => victim.on('exit', (_code, signal) => done(signal)));
      try {
        while (!existsSync(pauseFile) || (await readFile(pauseFile, 'utf8')).trim() === '') {
          if (victim.exitCode !== null) throw new Error('the writer exited before reaching the pause');
          await sleep(20);
        }
      } finally {
        victim.kill('SIGKILL');
      }
      expect(await exited).toBe('SIGKILL');
      const unpushed = (await readFile(pauseFile, 'utf8')).trim().split('\n');
      // Its own record and the shared one: two commits, pushed together or not at all.
      expect(unpushed).toHaveLength(2);
      for (const commit of unpushed) expect(commit).toMatch(/^[0-9a-f]{40}$/);

      await git(['--git-dir', remote, 'fsck', '--strict', '--no-progress']);
      expect(await ledgerRefs(remote)).toBe(refsBeforeKill);
      for (const commit of unpushed)
        expect((await git(['--git-dir', remote, 'cat-file', '-e', commit], { allowFailure: true })).code).not.toBe(0);
      const reader = new GitLedgerStore({ remote, cacheDir: join(temp.path, 'killed-reader-cache') });
      expect(JSON.parse((await reader.read()).read(SHARED_FILE) ?? '')).toEqual(['before-1', 'before-2']);

      // The next writer, sharing the killed writer's cache (and its lock), succeeds.
      const next = await runWriter(remote, cacheDir, 'after', 1);
      expect(next.stderr).toBe('');
      expect(next.code).toBe(0);
      const after = await reader.read();
      expect(JSON.parse(after.read(SHARED_FILE) ?? '')).toEqual(['before-1', 'before-2', 'after-1']);
      expect(after.read(ownFile('victim'))).toBeUndefined();
      await git(['--git-dir', remote, 'fsck', '--strict', '--no-progress']);
      expect((await readHookLog(hookLog)).filter((line) => line.startsWith('REJECTED'))).toEqual([]);
    },
    scaled(120_000),
  );
});
