import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runProcess } from '../../src/adapters/process.js';

let tmp: string;

beforeEach(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'exocomp-process-test-'));
});

afterEach(async () => {
  await rm(tmp, { recursive: true, force: true });
});

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw error;
  }
}

/**
 * Starts `script` under sh (which execs into `sleep 30` after printing its pid),
 * aborts the run once the pid is known, and returns the result and the pid.
 */
async function abortWhenStarted(script: string) {
  const controller = new AbortController();
  let pid: number | undefined;
  const result = await runProcess('sh', ['-c', script], {
    signal: controller.signal,
    onOutput: (chunk, stream) => {
      if (stream !== 'stdout' || pid !== undefined) return;
      pid = Number(chunk.trim());
      controller.abort(new Error('stop'));
    },
  });
  if (pid === undefined) throw new Error(`the child printed no pid: ${result.stderr}`);
  return { result, pid };
}

describe('runProcess with an abort signal', () => {
  it('kills the child when aborted and resolves with the signal that ended it', async () => {
    const { result, pid } = await abortWhenStarted('echo $$; exec sleep 30');
    expect(result.signal).toBe('SIGTERM');
    expect(isAlive(pid)).toBe(false);
  });

  it('kills a child that ignores SIGTERM after the grace period', async () => {
    // An ignored signal stays ignored across exec, so sleep ignores SIGTERM too.
    const { result, pid } = await abortWhenStarted('trap "" TERM; echo $$; exec sleep 30');
    expect(result.signal).toBe('SIGKILL');
    expect(isAlive(pid)).toBe(false);
  });

  it('does not start the command when the signal was already aborted', async () => {
    const marker = join(tmp, 'started');
    const reason = new Error('lease lost');
    await expect(runProcess('touch', [marker], { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    expect(existsSync(marker)).toBe(false);
  });

  it('leaves a run whose signal never aborts alone', async () => {
    const result = await runProcess('sh', ['-c', 'echo done'], { signal: new AbortController().signal });
    expect(result).toMatchObject({ code: 0, signal: null, stdout: 'done\n' });
  });
});
