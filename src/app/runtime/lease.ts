/**
 * Leases, one module for both users: a chain step and a concurrency key are
 * each held by one holder at a time. The holder takes the lease write-ahead,
 * renews it every HEARTBEAT_EVERY_MS, and releases it (or records the step) at
 * the end. Another runner may take the lease over once it has expired
 * (LEASE_TTL_MS without a heartbeat) or once a probe says its holder is gone.
 * A holder that finds its lease taken over stops: a step records nothing more,
 * a concurrency key warns (its work is already running).
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { ExocompError } from '../../domain/errors.js';
import type { Lease } from '../../domain/workflow.js';
import { isProcessAlive } from '../../adapters/process.js';

/** A lease without a heartbeat for this long is dead. */
export const LEASE_TTL_MS = 60_000;
/** How often a holder renews its lease: well inside the TTL, so one late heartbeat is not a loss. */
export const HEARTBEAT_EVERY_MS = 15_000;

/** Who takes a lease: a local process, or a CI job (see CiPlatform.holder). */
export interface Holder {
  id: string;
  lease(now: Date): Lease;
}

/**
 * Whether a lease's holder is known to be gone: true (gone, take it over),
 * false (alive), undefined (cannot tell from here: wait for the TTL).
 */
export type HolderProbe = (lease: Lease) => Promise<boolean | undefined>;

export function localHolder(): Holder {
  const host = hostname();
  const id = `local:${host}:${process.pid}:${randomBytes(4).toString('hex')}`;
  return {
    id,
    lease: (now) => ({
      holder: id,
      origin: { kind: 'local', hostname: host, pid: process.pid },
      acquiredAt: now.toISOString(),
      heartbeatAt: now.toISOString(),
      ttlMs: LEASE_TTL_MS,
    }),
  };
}

/** A local holder on this machine is gone when its process is; any other holder cannot be judged here. */
export const probeLocalHolder: HolderProbe = async (lease) => {
  if (lease.origin.kind !== 'local' || lease.origin.hostname !== hostname()) return undefined;
  return !isProcessAlive(lease.origin.pid);
};

/**
 * What a probe learned about the holder of the lease `probed`, for a decision made on the record as it is now
 * (`current`): it counts only while that is still the lease probed — the ledger may have moved on in between.
 */
export function holderFacts(
  probed: Lease | undefined,
  current: Lease | undefined,
  holderGone: boolean | undefined,
): { holderGone?: boolean } {
  return probed && current && current.holder === probed.holder && holderGone !== undefined ? { holderGone } : {};
}

/**
 * Renews a lease every `everyMs` until stopped, one renewal at a time (a slow
 * ledger must not pile up writes). `renew` resolves false, or rejects with a
 * `lease-held` ExocompError, when the lease is no longer ours: the returned
 * signal then aborts with the reason and renewals stop. Any other failure is
 * passed to `onError` and the lease stays ours until someone else takes it.
 */
export function keepLeaseAlive(options: {
  everyMs?: number;
  renew(): Promise<boolean>;
  lost(): Error;
  onError(error: unknown): void;
}): {
  signal: AbortSignal;
  stop(): Promise<void>;
} {
  const controller = new AbortController();
  let inFlight: Promise<void> = Promise.resolve();
  const beat = async () => {
    if (controller.signal.aborted) return;
    try {
      if (!(await options.renew())) lose(options.lost());
    } catch (error) {
      if (isLeaseHeld(error)) lose(error);
      else options.onError(error);
    }
  };
  const lose = (reason: unknown) => {
    clearInterval(timer);
    controller.abort(reason);
  };
  const timer = setInterval(() => {
    inFlight = inFlight.then(beat);
  }, options.everyMs ?? HEARTBEAT_EVERY_MS);
  timer.unref();
  return {
    signal: controller.signal,
    // Waits for a renewal in flight, so its verdict on the lease is in before the holder records anything.
    stop: async () => {
      clearInterval(timer);
      await inFlight;
    },
  };
}

function isLeaseHeld(error: unknown): boolean {
  return error instanceof ExocompError && error.kind === 'lease-held';
}
