/**
 * Time in tests. Waits end on an event (a banner, a file, a record, a process's
 * exit); what bounds them, and every test and hook timeout, is a base figure
 * times EXOCOMP_TEST_TIME_FACTOR, so a loaded machine can give tests more time
 * (`EXOCOMP_TEST_TIME_FACTOR=3 ./scripts/test`) while CI keeps the default of 1.
 */
import { setTimeout as sleep } from 'node:timers/promises';

export function timeFactor(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.EXOCOMP_TEST_TIME_FACTOR;
  if (raw === undefined || raw.trim() === '') return 1;
  const factor = Number(raw);
  if (!Number.isFinite(factor) || factor < 1 || factor > 20) {
    throw new Error(`EXOCOMP_TEST_TIME_FACTOR must be a number from 1 to 20, not ${JSON.stringify(raw)}`);
  }
  return factor;
}

/** A time bound of `ms` on an unloaded machine, scaled for this one. */
export function scaled(ms: number): number {
  return Math.round(ms * timeFactor());
}

export interface WaitOptions {
  /** The bound before scaling (default 60 s). */
  timeoutMs?: number;
  /** Pause between probes. */
  intervalMs?: number;
  /** Ends the wait with an error as soon as this returns a reason (e.g. the process it watches exited). */
  gaveUp?: () => string | undefined;
}

/** Probes until `probe` returns a value other than undefined/false; fails naming `what`. */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined | false> | T | undefined | false,
  options: WaitOptions = {},
): Promise<T> {
  const bound = scaled(options.timeoutMs ?? 60_000);
  const deadline = Date.now() + bound;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    const reason = options.gaveUp?.();
    if (reason !== undefined) throw new Error(`gave up waiting for ${what}: ${reason}`);
    if (Date.now() >= deadline) throw new Error(`timed out after ${bound} ms waiting for ${what}`);
    await sleep(options.intervalMs ?? 50);
  }
}
