import { describe, expect, it } from 'vitest';
import { LookAhead, type Say } from '../../src/app/provision/look-ahead.js';

function listener(): Say & { said: string[] } {
  const said: string[] = [];
  return { said, info: (m) => said.push(`info ${m}`), warn: (m) => said.push(`warn ${m}`) };
}

/** A promise and the functions that settle it, for work that ends when the test says so. */
function gate<T>() {
  let open!: (value: T) => void;
  let fail!: (error: unknown) => void;
  const promise = new Promise<T>((resolve, reject) => {
    open = resolve;
    fail = reject;
  });
  return { promise, open, fail };
}

describe('LookAhead', () => {
  it('holds what the work says until the step takes it, then passes the rest on as it comes', async () => {
    const finish = gate<string>();
    let sayLater: Say | undefined;
    const ahead = new LookAhead(
      async (say) => {
        say.info('init');
        say.warn('local state');
        sayLater = say;
        return finish.promise;
      },
      async () => undefined,
    );
    const step = listener();
    expect(step.said).toEqual([]);
    const taken = ahead.take(step);
    expect(step.said).toEqual(['info init', 'warn local state']);
    sayLater!.info('plan');
    finish.open('planned');
    expect(await taken).toBe('planned');
    expect(step.said).toEqual(['info init', 'warn local state', 'info plan']);
  });

  it('gives the step the work’s failure, and a failure nobody took yet is not unhandled', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const ahead = new LookAhead<string>(
        async () => {
          throw new Error('init failed');
        },
        async () => undefined,
      );
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(unhandled).toEqual([]);
      await expect(ahead.take(listener())).rejects.toThrow('init failed');
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('discarded: the work is told to stop, waited for, and what it left is cleaned up; its messages go nowhere', async () => {
    const cleaned: string[] = [];
    let stopped = false;
    const ahead = new LookAhead(
      (say, signal) =>
        new Promise<string>((resolve) => {
          say.info('init');
          signal.addEventListener('abort', () => {
            stopped = true;
            resolve('partial plan');
          });
        }),
      async (value) => {
        cleaned.push(value);
      },
    );
    await ahead.discard();
    expect(stopped).toBe(true);
    expect(cleaned).toEqual(['partial plan']);
    await ahead.discard();
    expect(cleaned).toEqual(['partial plan']);
    expect(() => ahead.take(listener())).toThrow(/discarded/);
  });

  it('a failed work leaves nothing to clean up when discarded', async () => {
    const cleaned: unknown[] = [];
    const ahead = new LookAhead<string>(
      async () => {
        throw new Error('plan failed');
      },
      async (value) => {
        cleaned.push(value);
      },
    );
    await ahead.discard();
    expect(cleaned).toEqual([]);
  });

  it('once taken, discard leaves the result to the step, and it cannot be taken twice', async () => {
    const cleaned: string[] = [];
    let signalled: AbortSignal | undefined;
    const ahead = new LookAhead(
      async (_say, signal) => {
        signalled = signal;
        return 'plan';
      },
      async (value) => {
        cleaned.push(value);
      },
    );
    expect(await ahead.take(listener())).toBe('plan');
    await ahead.discard();
    expect(cleaned).toEqual([]);
    expect(signalled?.aborted).toBe(false);
    expect(() => ahead.take(listener())).toThrow(/taken once/);
  });

  it('the run’s interruption stops the work', async () => {
    const interrupt = new AbortController();
    const ahead = new LookAhead(
      (_say, signal) =>
        new Promise<string>((_resolve, reject) => {
          signal.addEventListener('abort', () =>
            reject(signal.reason instanceof Error ? signal.reason : new Error('aborted')),
          );
        }),
      async () => undefined,
      interrupt.signal,
    );
    interrupt.abort(new Error('SIGINT'));
    await expect(ahead.take(listener())).rejects.toThrow('SIGINT');
  });
});
