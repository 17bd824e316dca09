import { spawn } from 'node:child_process';
import { InterruptedError } from '../domain/errors.js';

export interface RunOptions {
  cwd?: string | undefined;
  /** The complete environment of the child (not merged with process.env). */
  env?: NodeJS.ProcessEnv;
  input?: string | Buffer | undefined;
  timeoutMs?: number | undefined;
  /** Called with each chunk of output as it arrives (for progress), already redacted. */
  onOutput?: ((chunk: string, stream: 'stdout' | 'stderr') => void) | undefined;
  /** Values that must never leave this function in clear (replaced by ***). */
  secrets?: readonly string[];
  /**
   * Stops the child when aborted: SIGTERM (for an interruption, the signal it
   * forwards, if any), then SIGKILL after `stopGraceMs`. The result is the
   * usual one (code/signal); callers see the abort on the signal.
   */
  signal?: AbortSignal | undefined;
  /** How long a child told to stop may take before it is killed (default STOP_GRACE_MS). */
  stopGraceMs?: number | undefined;
  /**
   * A pipe on the child's file descriptor 3, for a tool that reports structured
   * events there (see ansible-events-plugin.ts). Chunks arrive as written: the
   * caller parses and redacts them (a secret can span chunks).
   */
  onEvents?: (chunk: string) => void;
  /** Also return standard output as bytes, unredacted (`stdoutBytes`): only for output that holds no secret. */
  keepStdoutBytes?: boolean;
}

export interface RunResult {
  code: number;
  /** The signal that ended the child, when it did not exit by itself. */
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** Standard output as the child wrote it, before decoding and redaction (for byte-framed output). */
  stdoutBytes?: Buffer;
}

/** Whether a process with this pid exists on this machine (EPERM: it does, owned by someone else). */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

/** Replaces every occurrence of each secret (of at least 4 characters) with ***. */
export function redact(text: string, secrets: readonly string[] = []): string {
  let out = text;
  for (const secret of secrets) {
    if (secret.length >= 4) out = out.split(secret).join('***');
  }
  return out;
}

/** How long a child told to stop (SIGTERM) may take before it is killed (SIGKILL). */
export const STOP_GRACE_MS = 3_000;

/**
 * Runs a command without a shell and collects its output. Never rejects for a
 * non-zero exit: callers turn exit codes into their own typed errors. Rejects
 * only when the command cannot be started (ENOENT and friends), or with the
 * signal's reason when `signal` was aborted before it started.
 */
export function runProcess(command: string, args: readonly string[], options: RunOptions = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const { signal } = options;
    if (signal?.aborted) {
      reject(signal.reason as Error);
      return;
    }
    const child = spawn(command, [...args], {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: options.onEvents ? ['pipe', 'pipe', 'pipe', 'pipe'] : ['pipe', 'pipe', 'pipe'],
    });
    const events = child.stdio[3] as NodeJS.ReadableStream | null | undefined;
    events?.setEncoding('utf8');
    events?.on('data', (chunk: string) => options.onEvents?.(chunk));
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let timer: NodeJS.Timeout | undefined;
    if (options.timeoutMs !== undefined) {
      timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs);
    }
    let killTimer: NodeJS.Timeout | undefined;
    // tofu and ansible get a signal they handle first, so they can stop their own children and release state locks.
    const stop = () => {
      const reason: unknown = signal?.reason;
      if (reason instanceof InterruptedError) {
        if (reason.forward) child.kill(reason.forward);
      } else child.kill('SIGTERM');
      killTimer = setTimeout(() => child.kill('SIGKILL'), options.stopGraceMs ?? STOP_GRACE_MS);
    };
    const settle = () => {
      if (timer) clearTimeout(timer);
      if (killTimer) clearTimeout(killTimer);
      signal?.removeEventListener('abort', stop);
    };
    signal?.addEventListener('abort', stop, { once: true });
    const collect = (stream: 'stdout' | 'stderr', sink: Buffer[]) => (chunk: Buffer) => {
      sink.push(chunk);
      options.onOutput?.(redact(chunk.toString('utf8'), options.secrets), stream);
    };
    child.stdout.on('data', collect('stdout', stdout));
    child.stderr.on('data', collect('stderr', stderr));
    child.on('error', (error) => {
      settle();
      reject(error);
    });
    child.on('close', (code, endedBy) => {
      settle();
      const stdoutBytes = Buffer.concat(stdout);
      resolve({
        code: code ?? 128,
        signal: endedBy,
        ...(options.keepStdoutBytes === true ? { stdoutBytes } : {}),
        stdout: redact(stdoutBytes.toString('utf8'), options.secrets),
        stderr: redact(Buffer.concat(stderr).toString('utf8'), options.secrets),
      });
    });
    child.stdin.on('error', () => {
      /* the child may exit before reading its input */
    });
    child.stdin.end(options.input ?? '');
  });
}
