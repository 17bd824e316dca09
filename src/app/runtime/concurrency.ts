/**
 * Local serialisation of runs that share a `--concurrency-key`: the run takes a
 * lease in the ledger (compare-and-swap) before it starts, keeps it alive while
 * it runs and releases it afterwards, failure included. A run that finds a live
 * lease waits, polling with backoff, up to a bound, then refuses naming the holder.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describeError } from '../../domain/errors.js';
import { formatDuration } from '../../domain/duration.js';
import {
  decideAcquire,
  describeHolder,
  holdsLock,
  LockHeldError,
  renewLock,
  type LockRecord,
} from '../../domain/lock.js';
import { leaseNeedsHeartbeats } from '../../domain/workflow.js';
import { readLock, RecordWrites } from '../../ledger/records.js';
import { holderFacts, keepLeaseAlive, localHolder, probeLocalHolder, type Holder, type HolderProbe } from './lease.js';
import type { AppContext } from './context.js';

const POLL_FIRST_MS = 250;
const POLL_MAX_MS = 5_000;

export interface LockRequest {
  key: string;
  /** How long to wait for a live holder before refusing. */
  waitMs: number;
  /** What this run does, recorded for whoever waits on it. */
  purpose: string;
  holder?: Holder;
  probe?: HolderProbe;
  info(message: string): void;
  warn(message: string): void;
}

/** One compare-and-swap attempt: the lock record if we took it, or the live record that holds it. */
async function tryAcquire(
  app: AppContext,
  request: LockRequest,
  holder: Holder,
  probe: HolderProbe,
): Promise<{ acquired: boolean; record: LockRecord }> {
  const seen = readLock(await app.store.read(), request.key);
  const holderGone = seen ? await probe(seen.lease) : undefined;
  return app.store.update<{ acquired: boolean; record: LockRecord }>((snapshot) => {
    const current = readLock(snapshot, request.key);
    const facts = holderFacts(seen?.lease, current?.lease, holderGone);
    const now = app.now();
    const decision = decideAcquire(request.key, current, holder.lease(now), request.purpose, now, facts);
    if (decision.kind === 'held')
      return { writes: new RecordWrites(), message: '', result: { acquired: false, record: decision.record } };
    const takeover = decision.replaced ? ` (taking over from ${decision.replaced.holder}, whose lease is dead)` : '';
    return {
      writes: new RecordWrites().lock(request.key, decision.record),
      message: `lock ${request.key}: acquired by ${holder.id}${takeover}`,
      result: { acquired: true, record: decision.record },
    };
  });
}

async function release(app: AppContext, key: string, holderId: string): Promise<void> {
  await app.store.update((snapshot) => {
    const ours = holdsLock(readLock(snapshot, key), holderId);
    return {
      writes: ours ? new RecordWrites().lock(key, null) : new RecordWrites(),
      message: `lock ${key}: released by ${holderId}`,
      result: undefined,
    };
  });
}

/** Renews the lock while the work runs; a takeover is warned about once (the work is already under way). */
function keepAlive(app: AppContext, request: LockRequest, holder: Holder): { stop(): Promise<void> } {
  const holderId = holder.id;
  const commits = leaseNeedsHeartbeats(holder.lease(app.now()));
  const beat = keepLeaseAlive({
    renew: async () => {
      // A CI holder only checks that the lock is still its own; it commits nothing.
      if (!commits) return holdsLock(readLock(await app.store.read(), request.key), holderId);
      return app.store.update((snapshot) => {
        const renewed = renewLock(readLock(snapshot, request.key), holderId, app.now());
        return {
          writes: renewed ? new RecordWrites().lock(request.key, renewed) : new RecordWrites(),
          message: `lock ${request.key}: heartbeat ${holderId}`,
          result: renewed !== undefined,
        };
      });
    },
    lost: () => new Error(`lock ${request.key} was taken over by another run while this one was still running`),
    onError: (error) => request.warn(`lock ${request.key}: heartbeat failed: ${describeError(error)}`),
  });
  beat.signal.addEventListener('abort', () => request.warn((beat.signal.reason as Error).message), { once: true });
  return beat;
}

/** Runs `work` while holding the lock `request.key`; the lock is released whatever `work` does. */
export async function withConcurrencyLock<T>(
  app: AppContext,
  request: LockRequest,
  work: () => Promise<T>,
): Promise<T> {
  const holder = request.holder ?? localHolder();
  const probe = request.probe ?? probeLocalHolder;
  const started = performance.now();
  let pause = POLL_FIRST_MS;
  let announced: string | undefined;
  for (;;) {
    const attempt = await tryAcquire(app, request, holder, probe);
    if (attempt.acquired) break;
    const waited = performance.now() - started;
    if (waited >= request.waitMs) throw new LockHeldError(attempt.record, formatDuration(waited));
    if (announced !== attempt.record.lease.holder) {
      announced = attempt.record.lease.holder;
      request.info(
        `waiting up to ${formatDuration(request.waitMs)} for concurrency key ${request.key}, held by ${describeHolder(attempt.record)}`,
      );
    }
    const jittered = pause * (0.8 + Math.random() * 0.4);
    await sleep(Math.min(jittered, Math.max(request.waitMs - waited, 0) + 1));
    pause = Math.min(pause * 1.6, POLL_MAX_MS);
  }
  request.info(`holding concurrency key ${request.key} as ${holder.id}`);
  const beat = keepAlive(app, request, holder);
  try {
    return await work();
  } finally {
    await beat.stop();
    try {
      await release(app, request.key, holder.id);
    } catch (error) {
      request.warn(
        `lock ${request.key} could not be released (${describeError(error)}); it expires when its heartbeat does`,
      );
    }
  }
}
