/**
 * Reaching hosts through bastions (docs/networks.md). One ssh master per
 * bastion (`ssh -M -N`, strict host-key checking against the pinned store, no
 * agent forwarding) carries every probe, key capture and play connection to the
 * hosts behind it as `ssh -W` channels: one TCP connection to the bastion, not
 * one per host. Nothing here takes an ssh option from data: every command line
 * is built from checked hop fields (domain/bastion.ts) and private paths.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { join } from 'node:path';
import { checkHop, describeRoute, hopUser, type Hop } from '../domain/bastion.js';
import { ExocompError } from '../domain/errors.js';
import { knownHostsName } from '../domain/inventory.js';
import { makePrivateDir } from './private-dir.js';
import { runProcess } from './process.js';
import { printable, type BannerProbe } from './ssh.js';

export interface JumpCredentials {
  /** Private keys offered to the bastions, in order (and nothing else). */
  identityFiles: readonly string[];
  /** The socket of a per-run ssh-agent holding the keys, instead of identityFiles. */
  agentSocket?: string | undefined;
  /** The play's user: it replaces an inventory bastion's own, as for every host of the play (domain/bastion.ts hopUser). */
  user?: string | undefined;
}

export interface JumpSessionOptions {
  /** The pinned store: every hop's key is checked against it. */
  knownHosts: string;
  credentials: JumpCredentials;
  /** How long one bastion may take to accept the master connection. */
  connectTimeoutMs?: number;
  signal?: AbortSignal | undefined;
}

// ssh splits -o values on whitespace and expands % and ~ in paths; a ProxyCommand goes through sh.
const SAFE_PATH = /^[A-Za-z0-9_/.@+,=-]+$/;

function safePath(path: string): string {
  if (!SAFE_PATH.test(path)) {
    throw new ExocompError('usage', `the path ${JSON.stringify(path)} cannot be passed to ssh safely`, {
      help: 'use a TMPDIR and key paths made of letters, digits and / . _ - (no spaces, quotes, % or ~)',
    });
  }
  return path;
}

const routeKey = (route: readonly Hop[]): string =>
  route.map((hop) => `${hop.user ?? ''}@${hop.address.toLowerCase()}:${hop.port}`).join(',');

/** ssh's `-W` and ProxyCommand targets: an IPv6 address in brackets. */
const forwardTarget = (address: string, port: number): string => `[${address}]:${port}`;

/** A bastion that could not be reached or did not let us through, named. */
export class BastionError extends ExocompError {
  constructor(
    readonly bastion: string,
    message: string,
    help: string,
    kind: 'bastion' | 'host-key' = 'bastion',
  ) {
    super(kind, message, { help });
    this.name = 'BastionError';
  }
}

interface Master {
  route: Hop[];
  socket: string;
  child: ChildProcess;
  stderr: string;
  exited: Promise<void>;
  done: boolean;
}

/** Each value as `-o value`. */
const sshOptions = (...values: string[]): string[] => values.flatMap((value) => ['-o', value]);

/** Every ssh here: the given store only, nothing learnt or forwarded, never a prompt, errors only. */
const COMMON_OPTIONS = [
  'GlobalKnownHostsFile=/dev/null',
  'HashKnownHosts=no',
  'CheckHostIP=no',
  'UpdateHostKeys=no',
  'BatchMode=yes',
  'ForwardAgent=no',
  'ForwardX11=no',
  'LogLevel=ERROR',
];

const NO_AUTHENTICATION = [
  'PubkeyAuthentication=no',
  'PasswordAuthentication=no',
  'KbdInteractiveAuthentication=no',
  'GSSAPIAuthentication=no',
  'HostbasedAuthentication=no',
  'IdentityAgent=none',
  'IdentitiesOnly=yes',
];

const KEY_TYPES: readonly (readonly [string, string])[] = [
  ['ed25519', 'ssh-ed25519'],
  ['ecdsa', 'ecdsa-sha2-nistp256,ecdsa-sha2-nistp384,ecdsa-sha2-nistp521'],
  ['rsa', 'rsa-sha2-512,rsa-sha2-256'],
];

export class JumpSession {
  private readonly masters = new Map<string, Master>();
  private closing: Promise<void> | undefined;

  private constructor(
    private readonly dir: string,
    private readonly options: JumpSessionOptions,
  ) {}

  /** A session with a private directory and no master yet; open() connects. */
  static async start(options: JumpSessionOptions): Promise<JumpSession> {
    const dir = safePath(await makePrivateDir('jump'));
    const session = new JumpSession(dir, options);
    await session.setKnownHosts(options.knownHosts);
    return session;
  }

  /** Starts and opens the masters of every route (each prefix once, outer hops first). */
  static async open(routes: readonly (readonly Hop[])[], options: JumpSessionOptions): Promise<JumpSession> {
    const session = await JumpSession.start(options);
    try {
      for (const route of routes) await session.connect(route);
    } catch (error) {
      await session.close();
      throw error;
    }
    return session;
  }

  private get knownHostsFile(): string {
    return join(this.dir, 'known_hosts');
  }

  /** Replaces the store hops are checked against (after a bastion was pinned). */
  async setKnownHosts(text: string): Promise<void> {
    await writeFile(this.knownHostsFile, text, { mode: 0o600 });
  }

  /** Options every ssh here takes: the pinned store only, strict, nothing forwarded, never a prompt. */
  private strictOptions(): string[] {
    const timeoutSec = Math.max(1, Math.ceil((this.options.connectTimeoutMs ?? 10_000) / 1000));
    return [
      '-F',
      '/dev/null',
      ...sshOptions(
        `UserKnownHostsFile=${this.knownHostsFile}`,
        'StrictHostKeyChecking=yes',
        ...COMMON_OPTIONS,
        `ConnectTimeout=${timeoutSec}`,
      ),
    ];
  }

  private authOptions(): string[] {
    const { identityFiles, agentSocket } = this.options.credentials;
    if (agentSocket !== undefined) return ['-o', `IdentityAgent=${safePath(agentSocket)}`];
    return [
      '-o',
      'IdentityAgent=none',
      '-o',
      'IdentitiesOnly=yes',
      ...identityFiles.flatMap((file) => ['-i', safePath(file)]),
    ];
  }

  private hopArgs(hop: Hop): string[] {
    checkHop(hop, `bastion ${hop.name}`);
    const user = hopUser(hop, this.options.credentials.user);
    if (user !== undefined) checkHop({ ...hop, user }, `bastion ${hop.name}`);
    return ['-p', String(hop.port), ...(user === undefined ? [] : ['-l', user]), '--', hop.address];
  }

  private env(): NodeJS.ProcessEnv {
    return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/' };
  }

  private masterFor(route: readonly Hop[]): Master {
    const master = this.masters.get(routeKey(route));
    if (master === undefined) throw new ExocompError('internal', `no connection to ${describeRoute(route)} was opened`);
    if (master.done) {
      const bastion = route[route.length - 1] as Hop;
      throw new BastionError(
        bastion.name,
        `the connection to bastion ${describeRoute(route)} (${bastion.address}:${bastion.port}) was lost${lastLine(master.stderr)}`,
        'check the bastion is up and reachable, then resume',
      );
    }
    return master;
  }

  /**
   * The ProxyCommand that reaches `%h:%p` through `route`'s master. Run by ssh
   * through sh: every part is a checked field or a private path, and the target
   * is quoted as ssh's own ProxyJump quotes it.
   */
  proxyCommand(route: readonly Hop[]): string {
    return ['ssh', ...this.forwardArgs(route, "'[%h]:%p'")].join(' ');
  }

  /** ssh's arguments for a `-W` channel to `target` over the master of `route`, checked like every hop. */
  private forwardArgs(route: readonly Hop[], target: string): string[] {
    const master = this.masterFor(route);
    const hop = route[route.length - 1] as Hop;
    return [
      ...this.strictOptions(),
      '-o',
      `ControlPath=${master.socket}`,
      '-o',
      'ControlMaster=no',
      '-W',
      target,
      ...this.hopArgs(hop),
    ];
  }

  /** Opens the master of `route` (its outer hops' first); a route already open is kept. */
  async connect(route: readonly Hop[]): Promise<void> {
    for (let depth = 1; depth <= route.length; depth += 1) {
      const prefix = route.slice(0, depth);
      if (!this.masters.has(routeKey(prefix))) await this.startMaster(prefix);
    }
  }

  private async startMaster(route: Hop[]): Promise<void> {
    this.options.signal?.throwIfAborted();
    const hop = route[route.length - 1] as Hop;
    const socket = join(this.dir, `m${this.masters.size}`);
    const proxy = route.length > 1 ? ['-o', `ProxyCommand=${this.proxyCommand(route.slice(0, -1))}`] : [];
    const args = [
      ...this.strictOptions(),
      ...this.authOptions(),
      '-o',
      'ServerAliveInterval=15',
      '-o',
      'ServerAliveCountMax=3',
      '-M',
      '-N',
      '-S',
      socket,
      ...proxy,
      ...this.hopArgs(hop),
    ];
    const child = spawn('/bin/sh', ['-c', LIFELINE, 'exocomp-jump', 'ssh', ...args], {
      env: this.env(),
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    child.stdin?.on('error', () => undefined);
    const master: Master = { route, socket, child, stderr: '', exited: Promise.resolve(), done: false };
    master.exited = new Promise((resolve) => {
      child.once('exit', () => {
        master.done = true;
        child.stdin?.end();
        resolve();
      });
      child.once('error', (error) => {
        master.stderr += error.message;
        master.done = true;
        resolve();
      });
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      master.stderr = (master.stderr + chunk.toString('utf8')).slice(-4096);
    });
    this.masters.set(routeKey(route), master);
    await this.untilReady(master, hop);
  }

  private async untilReady(master: Master, hop: Hop): Promise<void> {
    const deadline = performance.now() + (this.options.connectTimeoutMs ?? 10_000) + 2_000;
    const where = `bastion ${describeRoute(master.route)} (${hop.address}:${hop.port})`;
    while (!master.done) {
      this.options.signal?.throwIfAborted();
      const check = await runProcess(
        'ssh',
        ['-F', '/dev/null', '-o', `ControlPath=${master.socket}`, '-O', 'check', 'exocomp-jump'],
        { env: this.env(), timeoutMs: 5_000 },
      );
      if (check.code === 0) return;
      if (performance.now() > deadline) {
        master.child.stdin?.end();
        throw new BastionError(
          hop.name,
          `${where} did not let us connect in time`,
          'check the bastion is up, then resume',
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    const stderr = master.stderr;
    if (/Host key verification failed|REMOTE HOST IDENTIFICATION HAS CHANGED|No \S+ host key is known/.test(stderr)) {
      throw new BastionError(
        hop.name,
        `${where} presented a host key other than the pinned one: nothing went through it`,
        `either the bastion was rekeyed — confirm out of band, then rotate it (the rotate-host-keys input, or exocomp host onboard ${hop.name} --rotate) — or someone is in the middle`,
        'host-key',
      );
    }
    throw new BastionError(
      hop.name,
      `${where} could not be reached or refused us${lastLine(stderr)}`,
      'check the bastion is up, its port is open to the runner, and it accepts the key the run offers (docs/networks.md), then resume',
    );
  }

  /**
   * Reads the SSH banner of address:port through `route` (an `ssh -W` channel of
   * its master). Never rejects for the target; a lost master is a BastionError.
   */
  async probe(
    route: readonly Hop[],
    address: string,
    port: number,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<BannerProbe> {
    const master = this.masterFor(route);
    const child = spawn('ssh', this.forwardArgs(route, forwardTarget(address, port)), {
      env: this.env(),
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    const result = await readBanner(child, timeoutMs, signal);
    if (master.done) this.masterFor(route);
    if (result.ok || !result.reason.startsWith(CHANNEL_CLOSED)) return result;
    // The bastion reports why it could not connect on the master's own stderr.
    const why = /open failed: ([^\r\n]*)\s*$/.exec(master.stderr)?.[1];
    return {
      ok: false,
      reason: `bastion ${(route[route.length - 1] as Hop).name} could not connect to it${why ? ` (${why})` : ''}`,
    };
  }

  /**
   * The keys address:port presents, captured through `route` with no
   * authentication at all: one ssh per key type with every method off and
   * `accept-new` into a private scratch file. In ssh-keyscan's output format,
   * named by the known_hosts name; '' when it presented none.
   */
  async captureHostKeys(
    route: readonly Hop[],
    address: string,
    port: number,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<string> {
    const name = knownHostsName(address, port);
    const proxy = this.proxyCommand(route);
    const lines = await Promise.all(
      KEY_TYPES.map(async ([type, algorithms]) => {
        const scratch = join(this.dir, `capture-${type}-${Math.random().toString(36).slice(2)}`);
        try {
          await runProcess(
            'ssh',
            [
              '-F',
              '/dev/null',
              ...sshOptions(
                `ProxyCommand=${proxy}`,
                `UserKnownHostsFile=${scratch}`,
                'StrictHostKeyChecking=accept-new',
                `HostKeyAlgorithms=${algorithms}`,
                ...COMMON_OPTIONS,
                // No authentication: the capture never offers a key, a password or the agent.
                ...NO_AUTHENTICATION,
                `ConnectTimeout=${Math.max(1, Math.ceil(timeoutMs / 1000))}`,
              ),
              '-p',
              String(port),
              '--',
              address,
              'true',
            ],
            { env: this.env(), timeoutMs, signal },
          );
          const text = await readFile(scratch, 'utf8').catch(() => '');
          return text
            .split('\n')
            .map((line) => line.trim().split(/\s+/))
            .filter((fields) => fields.length >= 3)
            .map(([, keyType, key]) => `${name} ${keyType} ${key}`);
        } finally {
          await rm(scratch, { force: true });
        }
      }),
    );
    signal?.throwIfAborted();
    this.masterFor(route);
    const found = lines.flat();
    return found.length === 0 ? '' : `${found.join('\n')}\n`;
  }

  /**
   * A listener on a random loopback port whose every connection is an `ssh -W`
   * channel of the route's master to address:port, for a tool that cannot jump
   * (`ssh-keyscan -c`: a certificate cannot be captured through the jump, as ssh
   * drops an unknown CA's certificate to its plain key). It gives only what the
   * master gives — a TCP path, no authentication — and lives until close().
   */
  async relay(route: readonly Hop[], address: string, port: number): Promise<{ port: number; close(): Promise<void> }> {
    this.masterFor(route);
    const channels = new Set<ChildProcess>();
    const server = createServer((socket: Socket) => {
      const child = spawn('ssh', this.forwardArgs(route, forwardTarget(address, port)), {
        env: this.env(),
        stdio: ['pipe', 'pipe', 'ignore'],
      });
      channels.add(child);
      socket.pipe(child.stdin);
      child.stdout.pipe(socket);
      const end = () => {
        socket.destroy();
        child.kill();
      };
      socket.once('close', end).once('error', end);
      child.once('exit', () => {
        channels.delete(child);
        socket.end();
      });
      child.stdin.once('error', end);
    });
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
    return {
      port: (server.address() as AddressInfo).port,
      close: async () => {
        for (const child of channels) child.kill();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      },
    };
  }

  /**
   * An ssh_config for plays: each address behind a bastion gets its route's
   * ProxyCommand (ssh matches `Host` on the address it was given).
   */
  async writeSshConfig(hosts: readonly { address: string; via?: readonly Hop[] | undefined }[]): Promise<string> {
    const byRoute = new Map<string, { route: readonly Hop[]; addresses: Set<string> }>();
    for (const host of hosts) {
      if (host.via === undefined || host.via.length === 0) continue;
      const key = routeKey(host.via);
      const entry = byRoute.get(key) ?? { route: host.via, addresses: new Set<string>() };
      entry.addresses.add(checkHop({ name: host.address, address: host.address, port: 22 }, 'a host').address);
      byRoute.set(key, entry);
    }
    const blocks = [...byRoute.values()].map(
      ({ route, addresses }) => `Host ${[...addresses].join(' ')}\n  ProxyCommand ${this.proxyCommand(route)}\n`,
    );
    const path = join(this.dir, 'ssh_config');
    await writeFile(path, blocks.join(''), { mode: 0o600 });
    return path;
  }

  /** Ends every master (inner hops first) and removes the private files. Safe to call twice. */
  close(): Promise<void> {
    this.closing ??= this.shutDown();
    return this.closing;
  }

  private async shutDown(): Promise<void> {
    for (const master of [...this.masters.values()].reverse()) {
      if (!master.done) {
        await runProcess('ssh', ['-F', '/dev/null', '-o', `ControlPath=${master.socket}`, '-O', 'exit', 'x'], {
          env: this.env(),
          timeoutMs: 5_000,
        }).catch(() => undefined);
        master.child.stdin?.end();
      }
      await master.exited;
    }
    await rm(this.dir, { recursive: true, force: true });
  }
}

/**
 * Runs a master (`"$@"`) tied to this process's life: a watcher reads the pipe
 * from us and ends the master when it closes — on close(), or when this process
 * dies in any way (kill -9 included). ssh itself closes the inherited fd 3.
 */
const LIFELINE =
  'exec 3<&0; "$@" </dev/null & pid=$!; { cat <&3 >/dev/null; kill "$pid" 2>/dev/null; } & exec 3<&-; wait "$pid"';

const CHANNEL_CLOSED = 'the channel closed';
const MAX_BYTES_BEFORE_BANNER = 8 * 1024;

function lastLine(stderr: string): string {
  const line = stderr
    .trim()
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('Warning: Permanently added'))
    .pop();
  return line === undefined ? '' : `: ${printable(line, 200)}`;
}

/** The first `SSH-` line a `-W` channel delivers, within timeoutMs; the child is ended either way. */
function readBanner(child: ChildProcess, timeoutMs: number, signal?: AbortSignal): Promise<BannerProbe> {
  return new Promise((resolve) => {
    let pending = '';
    let settled = false;
    const finish = (result: BannerProbe): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      child.kill('SIGKILL');
      resolve(result);
    };
    const onAbort = (): void => finish({ ok: false, reason: 'probe cancelled' });
    const timer = setTimeout(
      // Slow: spawning ssh and opening the channel count against the budget, and on a busy runner that alone can
      // take longer than a first attempt's second; the next attempt gets more (waitForSsh doubles it).
      () =>
        finish({
          ok: false,
          reason: `no SSH banner through the bastion within ${Math.round(timeoutMs)} ms`,
          slow: true,
        }),
      timeoutMs,
    );
    signal?.addEventListener('abort', onAbort, { once: true });
    child.stdin?.on('error', () => undefined);
    child.stdout?.on('data', (chunk: Buffer) => {
      pending += chunk.toString('latin1');
      const line = pending.split('\n').find((l) => l.startsWith('SSH-'));
      if (line !== undefined) finish({ ok: true, banner: printable(line.replace(/\r$/, ''), 255) });
      else if (pending.length > MAX_BYTES_BEFORE_BANNER) finish({ ok: false, reason: 'it sent no SSH banner' });
    });
    child.once('exit', () => finish({ ok: false, reason: `${CHANNEL_CLOSED} without an SSH banner` }));
    child.once('error', (error) => finish({ ok: false, reason: error.message }));
  });
}
