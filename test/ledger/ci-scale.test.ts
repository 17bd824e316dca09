/**
 * The ledger at CI scale (issue 14): every writer has its own cache, as jobs on
 * separate runners do, and all push to one bare remote whose pre-receive hook
 * rejects (and logs) any update that is not a fast-forward.
 * The writers run in this process (one store and one cache each) so that the
 * test spends its time in git, not in starting 64 node processes; what races
 * is git itself — fetches, pushes and the remote's ref updates.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RecordingProgress } from '../../src/app/runtime/progress.js';
import { withConcurrencyLock } from '../../src/app/runtime/concurrency.js';
import type { AppContext } from '../../src/app/runtime/context.js';
import { LockHeldError } from '../../src/domain/lock.js';
import { startStep } from '../../src/domain/workflow.js';
import { GitLedgerStore } from '../../src/ledger/git-store.js';
import { listWorkflows, readWorkflow, RecordWrites } from '../../src/ledger/records.js';
import { localLease, sampleWorkflow } from '../support/workflows.js';
import { git, makeTempDir, readHookLog, remoteWithGuardHook } from './helpers.js';

let temp: { path: string; remove: () => Promise<void> };
beforeAll(async () => {
  temp = await makeTempDir();
});
afterAll(async () => {
  await temp.remove();
});

const storeFor = (remote: string, name: string) =>
  new GitLedgerStore({ remote, cacheDir: join(temp.path, `cache-${name}`), writer: name });

describe('writers with separate caches', () => {
  it('64 writers, each creating and transitioning its own workflow: all succeed, none lost, no forced push, fsck --strict clean', async () => {
    const { remote, hookLog } = await remoteWithGuardHook(temp.path, 'own.git');
    const ids = Array.from({ length: 64 }, (_, index) => `wf-${index + 1}`);
    const attempts = new Map<string, number>();
    const outcomes = await Promise.allSettled(
      ids.map(async (id) => {
        const store = storeFor(remote, id);
        await store.update(() => ({
          writes: new RecordWrites().workflow(sampleWorkflow(id)),
          message: `${id}: created`,
          result: undefined,
        }));
        await store.update((snapshot) => {
          attempts.set(id, (attempts.get(id) ?? 0) + 1);
          const next = startStep(readWorkflow(snapshot, id)!, 'apply', localLease(id), new Date());
          return { writes: new RecordWrites().workflow(next), message: `${id}: apply running`, result: undefined };
        });
      }),
    );
    expect(outcomes.filter((outcome) => outcome.status === 'rejected')).toEqual([]);
    // Writers of different records never lose a race: every transition landed on its first attempt. A write asks
    // its change twice — once on the ledger as last seen, to learn which records to take turns on, and once on the
    // fetched ledger it pushes — and a lost race would ask a third time.
    expect([...attempts.values()].every((count) => count === 2)).toBe(true);

    const { workflows, errors } = listWorkflows(await storeFor(remote, 'reader').read());
    expect(errors).toEqual([]);
    expect(workflows.map((w) => w.id).sort()).toEqual([...ids].sort());
    expect(workflows.every((w) => w.steps.find((step) => step.name === 'apply')?.state === 'running')).toBe(true);
    for (const id of ids.slice(0, 3)) {
      const log = await git(['--git-dir', remote, 'log', '--format=%s', `exocomp-ledger-records/workflows/${id}.json`]);
      expect(log.stdout.trim().split('\n')).toEqual([`${id}: apply running`, `${id}: created`]);
    }
    const hook = await readHookLog(hookLog);
    expect(hook.filter((line) => line.startsWith('REJECTED'))).toEqual([]);
    expect(hook.filter((line) => line.startsWith('ok '))).toHaveLength(128);
    await git(['--git-dir', remote, 'fsck', '--strict', '--no-progress']);
  }, 240_000);

  it('16 writers on one shared lease: each gets it or is refused with a typed error naming the holder', async () => {
    const { remote, hookLog } = await remoteWithGuardHook(temp.path, 'lease.git');
    const names = Array.from({ length: 16 }, (_, index) => `writer-${index + 1}`);
    const held: { name: string; from: number; to: number }[] = [];
    const outcomes = await Promise.allSettled(
      names.map(async (name) => {
        const app: AppContext = {
          store: storeFor(remote, name),
          ledgerBranch: 'exocomp-ledger',
          now: () => new Date(),
          cwd: temp.path,
          env: {},
          progress: new RecordingProgress(),
        };
        return withConcurrencyLock(
          app,
          { key: 'nightly', waitMs: 0, purpose: `converge by ${name}`, info: () => undefined, warn: () => undefined },
          async () => {
            const from = Date.now();
            await new Promise((done) => setTimeout(done, 300));
            held.push({ name, from, to: Date.now() });
          },
        );
      }),
    );
    const refused = outcomes.flatMap((outcome) => (outcome.status === 'rejected' ? [outcome.reason as unknown] : []));
    for (const error of refused) {
      expect(error).toBeInstanceOf(LockHeldError);
      expect((error as LockHeldError).kind).toBe('lease-held');
      expect((error as LockHeldError).message).toMatch(/is held by local:/);
      expect((error as LockHeldError).message).toContain((error as LockHeldError).record.lease.holder);
    }
    expect(held.length + refused.length).toBe(16);
    expect(held.length).toBeGreaterThanOrEqual(1);
    // Holders never overlapped.
    const spans = [...held].sort((a, b) => a.from - b.from);
    for (let index = 1; index < spans.length; index++)
      expect(spans[index]!.from).toBeGreaterThanOrEqual(spans[index - 1]!.to);
    expect((await readHookLog(hookLog)).filter((line) => line.startsWith('REJECTED'))).toEqual([]);
    await git(['--git-dir', remote, 'fsck', '--strict', '--no-progress']);
  }, 240_000);
});
