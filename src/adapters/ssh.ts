import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmod, copyFile, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { ExocompError } from '../domain/errors.js';
import { knownHostsName } from '../domain/inventory.js';
import { connectionId } from '../domain/connection-identity.js';
import { runProcess } from './process.js';
import { makePrivateDir } from './private-dir.js';
import { fanOutSignal } from './signals.js';

// ---------------------------------------------------------------------------
// Banner probe (step 2). Plain TCP: it reads what the server says first and
// never sends a byte, so it cannot authenticate or trip a host-key check.
// ---------------------------------------------------------------------------

/**
 * One attempt at a host's banner. `slow`: the attempt ran out of time after
 * the host was reached (or through a bastion, where a slow channel and a slow
 * host look alike), so the next attempt gets more time.
 */
export type BannerProbe = { ok: true; banner: string } | { ok: false; reason: string; slow?: boolean };

/** RFC 4253 §4.2 allows lines before the version line; a server that talks this much first is not sshd. */
const MAX_BYTES_BEFORE_BANNER = 8 * 1024;
const SILENT_AFTER_CONNECT = 'the port accepted a connection but sent no SSH banner';

/** Banners and stray lines come from the network and end up in logs: keep them printable and short. */
export function printable(text: string, max = 120): string {
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is replaced
  const clean = text.replace(/[\x00-\x1f\x7f-\xff]/g, '?');
  return clean.length > max ? `${clean.slice(0, max)}…` : clean;
}

/**
 * Connects to address:port and waits up to timeoutMs for the first line that
 * starts with `SSH-`. Never rejects: every failure is `{ ok: false, reason }`.
 */
export function probeSshBanner(
  address: string,
  port: number,
  timeoutMs: number,
  options: { signal?: AbortSignal | undefined } = {},
): Promise<BannerProbe> {
  return new Promise((resolve) => {
    const { signal } = options;
    if (signal?.aborted) {
      resolve({ ok: false, reason: 'probe cancelled' });
      return;
    }
    const socket = connect({ host: address, port });
    let connected = false;
    let pending = '';
    let bytesBeforeBanner = 0;
    let firstOtherLine: string | undefined;
    let settled = false;

    const finish = (result: BannerProbe): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      socket.destroy();
      resolve(result);
    };
    const notSsh = (what: string): { ok: false; reason: string } => ({
      ok: false,
      reason:
        firstOtherLine === undefined ? what : `${what}; it said "${printable(firstOtherLine)}", not an SSH banner`,
    });
    const onAbort = (): void => finish({ ok: false, reason: 'probe cancelled' });

    const shownTimeout = Math.max(1, Math.round(timeoutMs));
    const timer = setTimeout(() => {
      finish(
        connected
          ? { ...notSsh(`${SILENT_AFTER_CONNECT} within ${shownTimeout} ms`), slow: true }
          : { ok: false, reason: `no TCP connection within ${shownTimeout} ms` },
      );
    }, timeoutMs);
    signal?.addEventListener('abort', onAbort, { once: true });

    socket.once('connect', () => {
      connected = true;
    });
    socket.on('data', (chunk: Buffer) => {
      bytesBeforeBanner += chunk.length;
      pending += chunk.toString('latin1');
      let newline: number;
      while ((newline = pending.indexOf('\n')) !== -1) {
        const line = pending.slice(0, newline).replace(/\r$/, '');
        pending = pending.slice(newline + 1);
        if (line.startsWith('SSH-')) {
          finish({ ok: true, banner: printable(line, 255) });
          return;
        }
        firstOtherLine ??= line;
      }
      if (bytesBeforeBanner > MAX_BYTES_BEFORE_BANNER) {
        firstOtherLine ??= pending;
        finish(notSsh(`the port sent ${bytesBeforeBanner} bytes without an SSH banner`));
      }
    });
    socket.once('end', () => {
      firstOtherLine ??= pending === '' ? undefined : pending;
      finish(notSsh('the port closed the connection without an SSH banner'));
    });
    socket.once('error', (error: NodeJS.ErrnoException) => {
      finish({ ok: false, reason: describeSocketError(error) });
    });
  });
}

function describeSocketError(error: NodeJS.ErrnoException): string {
  switch (error.code) {
    case 'ECONNREFUSED':
      return 'connection refused (nothing listens on the port yet)';
    case 'ECONNRESET':
      return 'connection reset before an SSH banner';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return `no route to the host (${error.code})`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `the name does not resolve (${error.code})`;
    default:
      return error.code ? `${error.code}: ${error.message}` : error.message;
  }
}

// ---------------------------------------------------------------------------
// waitForSsh: every host probed in parallel under one shared deadline.
// ---------------------------------------------------------------------------

export interface SshTarget {
  name: string;
  address: string;
  port: number;
}

export interface WaitForSshOptions {
  /** The shared deadline, from the call (the step's `--ssh-wait`). */
  timeoutMs: number;
  /** Probes in flight at once (open sockets). */
  concurrency?: number;
  /** Pause between two probes of the same host. */
  intervalMs?: number;
  /**
   * First per-attempt timeout. Short, so a host whose SYNs were dropped while
   * it booted is retried with a fresh connection soon after its port opens;
   * doubled (up to 8×) for a host that accepts TCP but is slow to send its banner.
   */
  attemptTimeoutMs?: number;
  /** How often onWaiting reports the hosts still pending. */
  waitingReportEveryMs?: number;
  signal?: AbortSignal | undefined;
  /** How one attempt reads a host's banner; default: probeSshBanner (a direct TCP connection). */
  probe?: ((host: SshTarget, budgetMs: number, signal?: AbortSignal) => Promise<BannerProbe>) | undefined;
  onReady?(host: SshTarget, elapsedMs: number): void;
  /** The hosts still without a banner (with the last reason seen), and the time spent so far. */
  onWaiting?(pending: { name: string; lastReason?: string }[], elapsedMs: number): void;
}

export interface WaitForSshResult {
  ready: { name: string; elapsedMs: number }[];
  missing: { name: string; address: string; port: number; lastReason: string }[];
}

/** FIFO slots: every pending host gets a probe before any host gets its next one. */
class Slots {
  private free: number;
  private readonly waiters: (() => void)[] = [];

  constructor(count: number) {
    this.free = count;
  }

  async acquire(): Promise<void> {
    if (this.free > 0) {
      this.free -= 1;
      return;
    }
    await new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  release(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.free += 1;
  }
}

function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (ms <= 0 || signal?.aborted) {
      resolve();
      return;
    }
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

const MIN_PROBE_BUDGET_MS = 10;

/**
 * Probes every host until it answers with an SSH banner or the shared deadline
 * passes. Never throws for a host that does not answer: it is returned in
 * `missing` with the last reason seen. Rejects only when `signal` aborts (with
 * the signal's reason), after every socket it opened is closed.
 */
export async function waitForSsh(hosts: readonly SshTarget[], options: WaitForSshOptions): Promise<WaitForSshResult> {
  const fanOut = fanOutSignal(options.signal, hosts.length);
  try {
    return await waitForEveryBanner(hosts, { ...options, signal: fanOut.signal });
  } finally {
    fanOut.release();
  }
}

async function waitForEveryBanner(hosts: readonly SshTarget[], options: WaitForSshOptions): Promise<WaitForSshResult> {
  const {
    timeoutMs,
    concurrency = 32,
    intervalMs = 100,
    attemptTimeoutMs = 1_000,
    waitingReportEveryMs = 5_000,
    signal,
    probe = (host: SshTarget, budgetMs: number, probeSignal?: AbortSignal) =>
      probeSshBanner(host.address, host.port, budgetMs, { signal: probeSignal }),
    onReady,
    onWaiting,
  } = options;
  const started = performance.now();
  const deadline = started + Math.max(0, timeoutMs);
  const slots = new Slots(Math.max(1, Math.floor(concurrency)));
  const pending = new Set(hosts.map((host) => host.name));
  const ready: WaitForSshResult['ready'] = [];
  const lastReasons = new Map<string, string>();

  const watch = async (host: SshTarget): Promise<void> => {
    let attemptTimeout = Math.max(1, attemptTimeoutMs);
    while (!signal?.aborted) {
      await slots.acquire();
      const remaining = deadline - performance.now();
      // Timers may fire a millisecond early: a probe with almost no budget left could only fail.
      if (remaining < MIN_PROBE_BUDGET_MS || signal?.aborted) {
        slots.release();
        return;
      }
      const budget = Math.min(attemptTimeout, remaining);
      let result: BannerProbe;
      try {
        result = await probe(host, budget, signal);
      } finally {
        slots.release();
      }
      if (result.ok) {
        const elapsedMs = Math.round(performance.now() - started);
        pending.delete(host.name);
        ready.push({ name: host.name, elapsedMs });
        onReady?.(host, elapsedMs);
        return;
      }
      // An attempt the deadline cut short says less than the full attempt before it ("HTTP/1.0 …" beats "no banner within 3 ms").
      if (budget === attemptTimeout || !lastReasons.has(host.name)) lastReasons.set(host.name, result.reason);
      if (result.slow) {
        attemptTimeout = Math.min(attemptTimeout * 2, attemptTimeoutMs * 8);
      }
      await pause(Math.min(intervalMs, deadline - performance.now()), signal);
    }
  };

  const reporter =
    onWaiting === undefined
      ? undefined
      : setInterval(() => {
          if (pending.size > 0) {
            const names = [...pending].map((name) => ({
              name,
              ...(lastReasons.has(name) ? { lastReason: lastReasons.get(name)! } : {}),
            }));
            onWaiting(names, Math.round(performance.now() - started));
          }
        }, waitingReportEveryMs);
  try {
    await Promise.all(hosts.map(watch));
  } finally {
    if (reporter) clearInterval(reporter);
  }
  if (signal?.aborted) throw signal.reason;

  const missing = hosts
    .filter((host) => pending.has(host.name))
    .map((host) => ({
      name: host.name,
      address: host.address,
      port: host.port,
      lastReason: lastReasons.get(host.name) ?? 'not probed before the deadline',
    }));
  return { ready, missing };
}

// ---------------------------------------------------------------------------
// ssh-keyscan (step 3).
// ---------------------------------------------------------------------------

export interface KeyscanOptions {
  /** ssh-keyscan -T: seconds a connection may stay silent (on the first pass; doubled on each retry, up to 4×). */
  timeoutSec?: number;
  /** ssh-keyscan processes at once; never more than this machine's cores (each key exchange is CPU here). */
  concurrency?: number;
  /** ssh-keyscan -t on the first pass. A host that gives none of them is retried with every type. */
  keyTypes?: string;
  /** Targets handed to one ssh-keyscan process at first (it connects to them all at once); halved on each retry. */
  hostsPerProcess?: number;
  /** The time the whole scan may take, retries included; a retry starts only while a full pass still fits. */
  budgetMs?: number;
  /** Stops every scan when aborted; keyscan then rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
  /** ssh-keyscan -c: ask for host certificates; a host that answered without one is not asked again. */
  certificates?: boolean;
}

/** A host to scan; `keyTypes` (its -t) overrides the scan's on the first pass. */
export interface KeyscanTarget {
  address: string;
  port: number;
  keyTypes?: string;
}

/** The pause before the first retry of a scan; doubled before each further one. */
const RETRY_PAUSE_MS = 1_000;

/** Every key type a host may present; the types a retry asks for. */
export const ALL_KEY_TYPES = 'ed25519,ecdsa,rsa';

interface ScanPass {
  keyTypes: string;
  timeoutSec: number;
  hostsPerProcess: number;
  concurrency: number;
  certificates: boolean;
}

/**
 * Scans host keys and returns, for every target, the ssh-keyscan stdout lines
 * that name it, keyed by its known_hosts name (`address` on port 22,
 * `[address]:port` otherwise — the form ssh-keyscan itself prints). A target
 * that did not answer maps to '' so the caller fails closed.
 *
 * Targets that share a port go to one ssh-keyscan process (it scans its hosts
 * in parallel). A busy runner or a host that drops unauthenticated connections
 * (sshd's MaxStartups) leaves some hosts silent within -T: those are retried,
 * with fewer connections in flight and a longer -T, while the budget allows a
 * full pass; a host is unanswered only after its retries.
 */
export async function keyscan(
  targets: readonly KeyscanTarget[],
  options: KeyscanOptions = {},
): Promise<Map<string, string>> {
  options.signal?.throwIfAborted();
  const fanOut = fanOutSignal(options.signal, targets.length);
  try {
    return await keyscanWithRetries(targets, { ...options, signal: fanOut.signal });
  } finally {
    fanOut.release();
  }
}

async function keyscanWithRetries(
  targets: readonly KeyscanTarget[],
  options: KeyscanOptions,
): Promise<Map<string, string>> {
  const { signal, budgetMs = 120_000 } = options;
  const started = performance.now();
  const lines = new Map<string, string[]>();
  const unique: { name: string; address: string; port: number; keyTypes?: string }[] = [];
  for (const target of targets) {
    const name = knownHostsName(target.address, target.port);
    if (lines.has(name)) continue;
    lines.set(name, []);
    unique.push({ ...target, name });
  }
  const firstTimeoutSec = options.timeoutSec ?? 5;
  let pass: ScanPass = {
    keyTypes: options.keyTypes ?? ALL_KEY_TYPES,
    timeoutSec: firstTimeoutSec,
    // ssh-keyscan -c prints a certificate without the host's name: one host per process tells them apart.
    hostsPerProcess: options.certificates ? 1 : Math.max(1, options.hostsPerProcess ?? 64),
    concurrency: Math.max(1, Math.min(options.concurrency ?? availableParallelism(), availableParallelism())),
    certificates: options.certificates === true,
  };
  let pending = unique;
  // A host that answered but has none of the types asked is asked for every type; one that did not answer, again
  // for the same (each type is a connection of its own, in ssh-keyscan's order: a throttled sshd refuses the later ones).
  const typesOf = new Map(unique.map((target) => [target.name, target.keyTypes ?? pass.keyTypes]));
  for (let retry = 0; ; retry += 1) {
    // A host that refused at once (sshd's MaxStartups full) is not asked again at once.
    if (retry > 0) await pause(RETRY_PAUSE_MS * 2 ** (retry - 1), signal);
    const answered = new Set<string>();
    for (const keyTypes of new Set(pending.map((target) => typesOf.get(target.name)!))) {
      const group = pending.filter((target) => typesOf.get(target.name) === keyTypes);
      await scanPass(group, { ...pass, keyTypes }, lines, answered, signal);
    }
    // A stopped scan is partial: it must not pass for hosts that did not answer.
    signal?.throwIfAborted();
    // A host that answered a certificate scan without one has none: asking again changes nothing.
    pending = pending.filter(
      (target) => lines.get(target.name)!.length === 0 && !(pass.certificates && answered.has(target.name)),
    );
    if (pending.length === 0) break;
    for (const target of pending) if (answered.has(target.name)) typesOf.set(target.name, ALL_KEY_TYPES);
    pass = {
      keyTypes: ALL_KEY_TYPES,
      timeoutSec: Math.min(pass.timeoutSec * 2, firstTimeoutSec * 4),
      hostsPerProcess: Math.max(1, Math.floor(pass.hostsPerProcess / 2)),
      concurrency: pass.concurrency,
      certificates: pass.certificates,
    };
    // A retry starts only while its pause and one round of it fit in the budget.
    if (performance.now() - started + RETRY_PAUSE_MS * 2 ** retry + killAfterMs(pass) > budgetMs) break;
  }
  return new Map([...lines].map(([name, found]) => [name, found.length === 0 ? '' : `${found.join('\n')}\n`]));
}

/** ssh-keyscan's -T resets on every byte; this is the backstop for a host that drips. */
function killAfterMs(pass: ScanPass): number {
  return (pass.timeoutSec * (pass.keyTypes.split(',').length + 1) + 10) * 1_000;
}

/** One ssh-keyscan over every target, at most `concurrency` processes at once; adds what each target presented. */
async function scanPass(
  targets: readonly { name: string; address: string; port: number }[],
  pass: ScanPass,
  lines: Map<string, string[]>,
  answered: Set<string>,
  signal: AbortSignal | undefined,
): Promise<void> {
  const byPort = new Map<number, string[]>();
  for (const { address, port } of targets) byPort.set(port, [...(byPort.get(port) ?? []), address]);
  const batches: { port: number; addresses: string[] }[] = [];
  for (const [port, addresses] of byPort) {
    for (let i = 0; i < addresses.length; i += pass.hostsPerProcess) {
      batches.push({ port, addresses: addresses.slice(i, i + pass.hostsPerProcess) });
    }
  }
  const scan = async (batch: { port: number; addresses: string[] }): Promise<void> => {
    let result;
    try {
      result = await runProcess(
        'ssh-keyscan',
        [
          ...(pass.certificates ? ['-c'] : []),
          ...['-T', String(pass.timeoutSec), '-t', pass.keyTypes, '-p', String(batch.port), '--', ...batch.addresses],
        ],
        { timeoutMs: killAfterMs(pass), signal },
      );
    } catch (error) {
      signal?.throwIfAborted();
      throw new ExocompError('tool-missing', `ssh-keyscan could not be started: ${(error as Error).message}`, {
        help: 'Install the OpenSSH client (e.g. apt-get install openssh-client) on the machine running exocomp.',
        cause: error,
      });
    }
    // "# address:port SSH-2.0-…": the host sent its banner (on stderr).
    for (const line of result.stderr.split('\n')) {
      const banner = /^# (\S+):(\d+) SSH-/.exec(line);
      if (banner) answered.add(knownHostsName(banner[1]!, Number(banner[2])));
    }
    for (const line of result.stdout.split('\n')) {
      if (line === '' || line.startsWith('#')) continue;
      if (pass.certificates) {
        const name = knownHostsName(batch.addresses[0]!, batch.port);
        lines.get(name)?.push(`${name} ${line}`);
        continue;
      }
      // knownHostsName lower-cases; ssh-keyscan echoes the name as it was given.
      const name = line.slice(0, line.indexOf(' ')).toLowerCase();
      lines.get(name)?.push(line);
    }
  };
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < batches.length && !signal?.aborted) {
      const batch = batches[next++];
      if (batch) await scan(batch);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(pass.concurrency, batches.length)) }, worker));
}

// ---------------------------------------------------------------------------
// Private keys and the per-run ssh-agent (step 4).
// ---------------------------------------------------------------------------

/**
 * Writes a private key that arrived as text (a CI secret) to a 0600 file in a
 * fresh 0700 directory under `dir`, and returns the file's path. Line endings
 * are normalised and a final newline added: secrets stores often strip it, and
 * OpenSSH then refuses the key with "error in libcrypto". The caller removes
 * the directory (the path's parent) when done.
 */
export async function writePrivateKeyFile(dir: string, keyText: string): Promise<string> {
  const text = keyText.replace(/\r\n?/g, '\n').trim();
  if (text === '') {
    throw new ExocompError('usage', 'the private key is empty', {
      help: 'check that the secret holding the key is set and passed to this step',
    });
  }
  const privateDir = await makePrivateDir('key', dir);
  const path = join(privateDir, 'id');
  await writeFile(path, `${text}\n`, { mode: 0o600, flag: 'wx' });
  return path;
}

function agentError(message: string, detail: string): ExocompError {
  return new ExocompError('tool-failed', detail.trim() === '' ? message : `${message}: ${detail.trim()}`, {
    help: 'Check that the OpenSSH client (ssh-agent, ssh-add) is installed and the key is an unencrypted OpenSSH or PEM private key.',
  });
}

/** True while pid runs; a zombie (exited, not yet reaped by an init that does not reap) counts as gone. */
async function isRunning(pid: number): Promise<boolean> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  }
}

/**
 * A per-run ssh-agent on a socket in a private 0700 directory.
 *
 * The agent is started as `ssh-agent -a SOCK sh -c '…; exec cat'`: in that
 * form ssh-agent execs the command in the process we spawned and forks the
 * agent as its child, and the agent exits by itself once that command is gone
 * (it checks every 10 s). The command blocks reading a pipe from this process,
 * so when this process dies — even by SIGKILL — the pipe closes, the command
 * ends, and the agent follows within about 10 s, removing its socket. What a
 * crash cannot clean up is the (empty) private directory.
 */
export class SshAgent {
  private stopping: Promise<void> | undefined;
  private readonly onExit = (): void => this.killAgent();

  private constructor(
    private readonly dir: string,
    readonly socketPath: string,
    readonly pid: number,
    private readonly keeper: ChildProcess,
  ) {
    // A normal exit (or an uncaught exception) stops the agent at once rather than in ~10 s.
    process.once('exit', this.onExit);
  }

  static async start(): Promise<SshAgent> {
    const dir = await makePrivateDir('agent');
    const socketPath = join(dir, 'agent.sock');
    const keeper = spawn(
      'ssh-agent',
      ['-a', socketPath, '/bin/sh', '-c', 'echo "SSH_AGENT_PID=$SSH_AGENT_PID"; exec cat >/dev/null'],
      {
        stdio: ['pipe', 'pipe', 'pipe'],
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      },
    );
    try {
      const pid = await new Promise<number>((resolve, reject) => {
        let stdout = '';
        let stderr = '';
        keeper.stdout?.on('data', (chunk: Buffer) => {
          stdout += chunk.toString('utf8');
          const match = /^SSH_AGENT_PID=(\d+)$/m.exec(stdout);
          if (match?.[1]) resolve(Number(match[1]));
        });
        keeper.stderr?.on('data', (chunk: Buffer) => {
          stderr += chunk.toString('utf8');
        });
        keeper.once('error', (error) => reject(agentError('ssh-agent could not be started', error.message)));
        keeper.once('exit', (code) =>
          reject(agentError(`ssh-agent exited (code ${code}) before it was ready`, stderr)),
        );
      });
      // Like the agent, the keeper must not hold this process open: if it exits without stop(), the exit hook and the closed pipe end the agent.
      keeper.unref();
      for (const stream of [keeper.stdin, keeper.stdout, keeper.stderr]) (stream as Socket | null)?.unref();
      return new SshAgent(dir, socketPath, pid, keeper);
    } catch (error) {
      keeper.kill('SIGKILL');
      await rm(dir, { recursive: true, force: true });
      throw error;
    }
  }

  env(): { SSH_AUTH_SOCK: string } {
    return { SSH_AUTH_SOCK: this.socketPath };
  }

  /** Loads a private key file. A key readable by others is loaded from a private 0600 copy (ssh-add refuses it otherwise). */
  async add(privateKeyPath: string): Promise<void> {
    if (this.stopping) throw new ExocompError('internal', 'the ssh-agent was already stopped');
    let mode: number;
    try {
      mode = (await stat(privateKeyPath)).mode;
    } catch (error) {
      throw agentError(`cannot read the key ${privateKeyPath}`, (error as Error).message);
    }
    let keyPath = privateKeyPath;
    if ((mode & 0o077) !== 0) {
      keyPath = join(this.dir, `key-${randomUUID()}`);
      await copyFile(privateKeyPath, keyPath);
      await chmod(keyPath, 0o600);
    }
    try {
      const result = await runProcess('ssh-add', ['-q', keyPath], {
        // No passphrase prompt: stdin is empty and askpass is off, so an encrypted key fails instead of hanging.
        env: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          SSH_AUTH_SOCK: this.socketPath,
          SSH_ASKPASS_REQUIRE: 'never',
        },
        timeoutMs: 30_000,
      });
      if (result.code !== 0) throw agentError(`ssh-add could not load the key ${privateKeyPath}`, result.stderr);
    } finally {
      if (keyPath !== privateKeyPath) await rm(keyPath, { force: true });
    }
  }

  /** Stops the agent, waits until its process is gone and removes its directory. Safe to call twice. */
  stop(): Promise<void> {
    this.stopping ??= this.shutDown();
    return this.stopping;
  }

  private async shutDown(): Promise<void> {
    process.removeListener('exit', this.onExit);
    this.killAgent();
    if (this.keeper.exitCode === null && this.keeper.signalCode === null) {
      this.keeper.ref();
      const exited = new Promise<void>((resolve) => this.keeper.once('exit', () => resolve()));
      this.keeper.stdin?.end();
      this.keeper.kill('SIGTERM');
      await exited;
    }
    // Once the keeper is gone the agent is re-parented and reaped; wait for that so "stopped" means gone.
    const deadline = Date.now() + 5_000;
    while ((await isRunning(this.pid)) && Date.now() < deadline) await pause(20, undefined);
    await rm(this.dir, { recursive: true, force: true });
  }

  private killAgent(): void {
    try {
      process.kill(this.pid, 'SIGTERM');
    } catch {
      // already gone
    }
  }
}

// ---------------------------------------------------------------------------
// Login check (the end of step 3): a real login, never a multiplexed one.
// ---------------------------------------------------------------------------

export interface LoginCheckOptions {
  user: string;
  /** A 0600 private key file: the only identity offered (no agent, no defaults). */
  identityFile: string;
  /** The pinned store: the only file the host's key is checked against. */
  knownHostsFile: string;
  /** The route through bastions (src/adapters/ssh-jump.ts), when hosts sit behind one. */
  sshConfigFile?: string | undefined;
  /** ssh clients at once (each costs a key exchange of CPU on this machine). */
  concurrency: number;
  /**
   * Each login stays open as a ControlPersist master in this directory, its socket named by connectionId (host,
   * port, user), for a later play to ride instead of a key exchange of its own; ended by whoever owns the directory.
   */
  keepMasters?: { controlDir: string; persistSec: number } | undefined;
  timeoutSec?: number;
  signal?: AbortSignal | undefined;
}

export type LoginCheck = { name: string; ok: true } | { name: string; ok: false; reason: string };

/**
 * Logs in to each target as `user` with only `identityFile`, checking the
 * host's key against `knownHostsFile`, and runs `true`. The login is the host's
 * own key exchange and authentication, never a ride on another connection's
 * master: ControlPath=none, or with `keepMasters` ControlMaster=yes (it makes
 * the master, it never joins one). Never throws for a host: a refusal is a result.
 */
export async function checkLogins(targets: readonly SshTarget[], options: LoginCheckOptions): Promise<LoginCheck[]> {
  const { user, identityFile, knownHostsFile, sshConfigFile, keepMasters, timeoutSec = 30, signal } = options;
  const control = (target: SshTarget): string[] =>
    keepMasters === undefined
      ? ['-o', 'ControlMaster=no', '-o', 'ControlPath=none']
      : [
          ...['-o', 'ControlMaster=yes', '-o', `ControlPersist=${keepMasters.persistSec}s`],
          ...['-o', `ControlPath=${keepMasters.controlDir}/${connectionId({ ...target, user })}`],
        ];
  const slots = new Slots(Math.max(1, Math.floor(options.concurrency)));
  const check = async (target: SshTarget): Promise<LoginCheck> => {
    await slots.acquire();
    try {
      signal?.throwIfAborted();
      const result = await runProcess(
        'ssh',
        [
          ...(sshConfigFile === undefined ? [] : ['-F', sshConfigFile]),
          ...['-o', 'BatchMode=yes', ...control(target)],
          ...['-o', 'IdentitiesOnly=yes', '-o', 'IdentityAgent=none', '-o', `IdentityFile=${identityFile}`],
          ...['-o', 'PreferredAuthentications=publickey', '-o', 'StrictHostKeyChecking=yes'],
          ...['-o', `UserKnownHostsFile=${knownHostsFile}`, '-o', 'GlobalKnownHostsFile=/dev/null'],
          ...['-o', 'UpdateHostKeys=no', '-o', `ConnectTimeout=${timeoutSec}`],
          ...['-p', String(target.port), '-l', user, '--', target.address, 'true'],
        ],
        { timeoutMs: (timeoutSec + 10) * 1_000, signal },
      );
      if (result.code === 0) return { name: target.name, ok: true };
      const said = result.stderr
        .split('\n')
        .map((line) => line.trim())
        .filter((line) => line !== '' && !line.startsWith('@'));
      return { name: target.name, ok: false, reason: printable(said.at(-1) ?? `ssh exited ${result.code}`, 200) };
    } finally {
      slots.release();
    }
  };
  const results = await Promise.all(targets.map(check));
  signal?.throwIfAborted();
  return results;
}
