import { spawn } from 'node:child_process';

export interface RunOptions {
  cwd?: string;
  /** The complete environment of the child (not merged with process.env). */
  env?: NodeJS.ProcessEnv;
  input?: string | Buffer;
  timeoutMs?: number;
  /** Called with each chunk of output as it arrives (for progress), already redacted. */
  onOutput?: (chunk: string, stream: 'stdout' | 'stderr') => void;
  /** Values that must never leave this function in clear (replaced by ***). */
  secrets?: readonly string[];
}

export interface RunResult {
  code: number;
  /** The signal that ended the child, when it did not exit by itself. */
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Replaces every occurrence of each secret (of at least 4 characters) with ***. */
export function redact(text: string, secrets: readonly string[] = []): string {
  let out = text;
  for (const secret of secrets) {
    if (secret.length >= 4) out = out.split(secret).join('***');
  }
  return out;
}

/**
 * Runs a command without a shell and collects its output. Never rejects for a
 * non-zero exit: callers turn exit codes into their own typed errors. Rejects
 * only when the command cannot be started (ENOENT and friends).
 */
export function runProcess(command: string, args: readonly string[], options: RunOptions = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, [...args], {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let timer: NodeJS.Timeout | undefined;
    if (options.timeoutMs !== undefined) {
      timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs);
    }
    const collect = (stream: 'stdout' | 'stderr', sink: Buffer[]) => (chunk: Buffer) => {
      sink.push(chunk);
      options.onOutput?.(redact(chunk.toString('utf8'), options.secrets), stream);
    };
    child.stdout.on('data', collect('stdout', stdout));
    child.stderr.on('data', collect('stderr', stderr));
    child.on('error', (error) => {
      if (timer) clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code, signal) => {
      if (timer) clearTimeout(timer);
      resolve({
        code: code ?? 128,
        signal,
        stdout: redact(Buffer.concat(stdout).toString('utf8'), options.secrets),
        stderr: redact(Buffer.concat(stderr).toString('utf8'), options.secrets),
      });
    });
    child.stdin.on('error', () => {
      /* the child may exit before reading its input */
    });
    child.stdin.end(options.input ?? '');
  });
}
