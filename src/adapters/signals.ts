/**
 * SIGINT and SIGTERM as a request to stop, not an immediate exit: the first
 * one aborts the returned signal with an InterruptedError, so the running step
 * can stop its tool, record itself as interrupted, release its lease and
 * publish. A second signal exits at once (128 + its number), for a user who
 * presses Ctrl-C twice and for the runner's SIGTERM after its 7.5 s window.
 */
import { setMaxListeners } from 'node:events';
import { InterruptedError } from '../domain/errors.js';

const EXIT_CODE = { SIGINT: 130, SIGTERM: 143 } as const;

export function interruptOnSignals(
  forward: (received: 'SIGINT' | 'SIGTERM') => 'SIGINT' | undefined,
  onInterrupt?: (error: InterruptedError) => void,
): AbortSignal {
  const controller = new AbortController();
  for (const name of ['SIGINT', 'SIGTERM'] as const) {
    process.on(name, () => {
      if (controller.signal.aborted) process.exit(EXIT_CODE[name]);
      const error = new InterruptedError(name, forward(name));
      onInterrupt?.(error);
      controller.abort(error);
    });
  }
  return controller.signal;
}

/**
 * A signal for work fanned out over `count` hosts, each waiting on it at once
 * (a probe's pause, a socket, a process): it follows `parent` through one
 * listener, and its own listener limit is the fan-out, so Node does not take
 * 400 waiting hosts for a leak (MaxListenersExceededWarning on stderr). Call
 * `release` when the work is done, so `parent` keeps no listener for it.
 */
export function fanOutSignal(
  parent: AbortSignal | undefined,
  count: number,
): { signal: AbortSignal | undefined; release(): void } {
  if (parent === undefined) return { signal: undefined, release: () => undefined };
  const controller = new AbortController();
  // Each host adds at most a few listeners at a time; the default limit (10) assumes one shared listener per caller.
  setMaxListeners(Math.max(10, count * 2 + 10), controller.signal);
  const follow = (): void => controller.abort(parent.reason);
  if (parent.aborted) follow();
  else parent.addEventListener('abort', follow, { once: true });
  return { signal: controller.signal, release: () => parent.removeEventListener('abort', follow) };
}
