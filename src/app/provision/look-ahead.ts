/**
 * Work a step can do before it is recorded as running, because it changes
 * nothing (no host, no infrastructure, no ledger record): it runs beside the
 * ledger write that starts the step instead of after it (ADR 0017). Its
 * messages are held until the step takes the result, so they are shown inside
 * the step; a result nobody takes is cleaned up by `discard`.
 */

export interface Say {
  info(message: string): void;
  warn(message: string): void;
}

export class LookAhead<T> {
  private readonly held: { warn: boolean; message: string }[] = [];
  private listener: Say | undefined;
  private readonly stop = new AbortController();
  private readonly result: Promise<T>;
  private state: 'running' | 'taken' | 'discarded' = 'running';

  /**
   * Starts `work` now. `signal` stops it when the run is interrupted or the
   * result is discarded; `cleanUp` releases what an untaken result holds.
   */
  constructor(
    work: (say: Say, signal: AbortSignal) => Promise<T>,
    private readonly cleanUp: (value: T) => Promise<void>,
    interrupt?: AbortSignal,
  ) {
    const say: Say = { info: (message) => this.say(false, message), warn: (message) => this.say(true, message) };
    const signal = interrupt ? AbortSignal.any([interrupt, this.stop.signal]) : this.stop.signal;
    this.result = work(say, signal);
    // Awaited by take or discard; until then a failure must not count as unhandled.
    this.result.catch(() => undefined);
  }

  /**
   * The result for the step it was made for (its error, if it failed); messages held so far come first, later ones as they come.
   * `signal` (the step's own) stops the work from then on.
   */
  take(listener: Say, signal?: AbortSignal): Promise<T> {
    if (this.state !== 'running')
      throw new Error(`a look-ahead can be taken once, and not after it was discarded (it is ${this.state})`);
    this.state = 'taken';
    this.listener = listener;
    if (signal?.aborted) this.stop.abort(signal.reason);
    else signal?.addEventListener('abort', () => this.stop.abort(signal.reason), { once: true });
    for (const { warn, message } of this.held.splice(0)) (warn ? listener.warn : listener.info)(message);
    return this.result;
  }

  /** Not taken (the step's start was not recorded, or the step will not run here): stops the work and cleans up what it left. Once taken, nothing. */
  async discard(): Promise<void> {
    if (this.state !== 'running') return;
    this.state = 'discarded';
    this.stop.abort();
    const value = await this.result.then(
      (v) => ({ v }),
      () => undefined,
    );
    if (value) await this.cleanUp(value.v);
  }

  private say(warn: boolean, message: string): void {
    if (this.listener) (warn ? this.listener.warn : this.listener.info)(message);
    else if (this.state === 'running') this.held.push({ warn, message });
  }
}
