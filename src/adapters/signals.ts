/**
 * SIGINT and SIGTERM as a request to stop, not an immediate exit: the first
 * one aborts the returned signal with an InterruptedError, so the running step
 * can stop its tool, record itself as interrupted, release its lease and
 * publish. A second signal exits at once (128 + its number), for a user who
 * presses Ctrl-C twice and for the runner's SIGTERM after its 7.5 s window.
 */
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
