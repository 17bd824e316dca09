import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, stat, writeFile, chmod, access } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyscan, probeSshBanner, SshAgent, waitForSsh, writePrivateKeyFile } from '../../src/adapters/ssh.js';
import { runProcess } from '../../src/adapters/process.js';
import { randomLoopbackAddress } from '../support/addresses.js';
import { createLoopbackHost, generateKeyPair, type KeyPair, type LoopbackHost } from '../support/loopback-host.js';
import { scaled } from '../support/time.js';

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** A TCP server on a random loopback address that is not sshd; `greet` runs for each connection. */
async function fakeServer(
  greet: (socket: Socket) => void,
): Promise<{ address: string; port: number; server: Server; sockets: Set<Socket> }> {
  const address = randomLoopbackAddress();
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    greet(socket);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: address, port: 0 }, resolve);
  });
  const port = (server.address() as { port: number }).port;
  return { address, port, server, sockets };
}

async function closeServer(fake: { server: Server; sockets: Set<Socket> }): Promise<void> {
  for (const socket of fake.sockets) socket.destroy();
  await new Promise<void>((resolve) => fake.server.close(() => resolve()));
}

/** Same test as ssh.ts uses: gone, or a zombie waiting to be reaped. */
async function processRuns(pid: number): Promise<boolean> {
  try {
    const line = await readFile(`/proc/${pid}/stat`, 'utf8');
    return line.slice(line.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

async function eventually(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + scaled(timeoutMs);
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return check();
}

let workDir: string;
let bootstrap: KeyPair;
const hosts: LoopbackHost[] = [];
let host22: LoopbackHost;
let host2222: LoopbackHost;

beforeAll(async () => {
  workDir = await mkdtemp(join(tmpdir(), 'exocomp-ssh-test-'));
  bootstrap = await generateKeyPair(workDir, 'bootstrap');
  host22 = await createLoopbackHost({ rootAuthorizedKey: bootstrap.publicKey });
  hosts.push(host22);
  host2222 = await createLoopbackHost({ rootAuthorizedKey: bootstrap.publicKey, port: 2222 });
  hosts.push(host2222);
  await Promise.all([host22.start(), host2222.start()]);
});

afterAll(async () => {
  await Promise.all(hosts.map((host) => host.destroy()));
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

describe('probeSshBanner', () => {
  it('returns the OpenSSH banner of an open port', async () => {
    const result = await probeSshBanner(host2222.address, host2222.port, 5_000);
    expect(result.ok).toBe(true);
    expect(result.ok && result.banner).toMatch(/^SSH-2\.0-OpenSSH/);
  });

  it('reports a closed port as refused rather than waiting for its timeout', async () => {
    const result = await probeSshBanner(randomLoopbackAddress(), 22, 60_000);
    expect(result).toEqual({ ok: false, reason: expect.stringContaining('connection refused') });
  });

  it('accepts lines before the version line, as RFC 4253 allows', async () => {
    const fake = await fakeServer((socket) =>
      socket.write('welcome to the box\r\nplease behave\r\nSSH-2.0-Fake_1.0\r\n'),
    );
    try {
      expect(await probeSshBanner(fake.address, fake.port, 5_000)).toEqual({ ok: true, banner: 'SSH-2.0-Fake_1.0' });
    } finally {
      await closeServer(fake);
    }
  });

  it('does not take an HTTP server or a silent server for sshd', async () => {
    const http = await fakeServer((socket) => socket.end('HTTP/1.0 400 Bad Request\r\n\r\n'));
    const silent = await fakeServer(() => undefined);
    try {
      const httpResult = await probeSshBanner(http.address, http.port, 5_000);
      expect(httpResult).toEqual({
        ok: false,
        reason: expect.stringContaining('"HTTP/1.0 400 Bad Request", not an SSH banner'),
      });
      const silentResult = await probeSshBanner(silent.address, silent.port, 300);
      expect(silentResult).toEqual({
        ok: false,
        reason: expect.stringContaining('accepted a connection but sent no SSH banner'),
        // The next attempt gets more time: the host is there, only slow.
        slow: true,
      });
    } finally {
      await closeServer(http);
      await closeServer(silent);
    }
  });
});

describe('waitForSsh', () => {
  it('waits for a host whose sshd starts late and reports it ready', async () => {
    const late = await createLoopbackHost({ rootAuthorizedKey: bootstrap.publicKey, port: 2200, startDelayMs: 1_500 });
    hosts.push(late);
    await late.start();
    const waiting: string[][] = [];
    const readyCalls: string[] = [];
    const result = await waitForSsh([{ name: 'late', address: late.address, port: late.port }], {
      timeoutMs: 60_000,
      waitingReportEveryMs: 100,
      onWaiting: (pending) => waiting.push(pending.map((p) => p.name)),
      onReady: (host) => readyCalls.push(host.name),
    });
    expect(result.missing).toEqual([]);
    expect(result.ready.map((r) => r.name)).toEqual(['late']);
    expect(readyCalls).toEqual(['late']);
    // It really waited: it reported the host as pending before it answered.
    expect(waiting[0]).toEqual(['late']);
    await late.destroy();
  });

  it('returns an address where nothing listens in missing once the deadline passes', async () => {
    const nowhere = randomLoopbackAddress();
    const result = await waitForSsh(
      [
        { name: 'up', address: host22.address, port: 22 },
        { name: 'never', address: nowhere, port: 22 },
      ],
      { timeoutMs: 1_500 },
    );
    expect(result.ready.map((r) => r.name)).toEqual(['up']);
    expect(result.missing).toEqual([
      { name: 'never', address: nowhere, port: 22, lastReason: expect.stringContaining('connection refused') },
    ]);
  });

  it('does not count a non-SSH TCP server as ready', async () => {
    const http = await fakeServer((socket) => socket.end('HTTP/1.0 200 OK\r\n\r\nhello'));
    const silent = await fakeServer(() => undefined);
    try {
      const result = await waitForSsh(
        [
          { name: 'web', address: http.address, port: http.port },
          { name: 'mute', address: silent.address, port: silent.port },
        ],
        { timeoutMs: 1_500, attemptTimeoutMs: 200 },
      );
      expect(result.ready).toEqual([]);
      expect(result.missing.map((m) => m.name)).toEqual(['web', 'mute']);
      expect(result.missing[0]?.lastReason).toContain('HTTP/1.0 200 OK');
      expect(result.missing[1]?.lastReason).toContain('sent no SSH banner');
    } finally {
      await closeServer(http);
      await closeServer(silent);
    }
  });

  it('keeps at most `concurrency` probes open at once', async () => {
    let connections = 0;
    const silent = await fakeServer(() => (connections += 1));
    try {
      // Every attempt outlasts the deadline, so each slot is used by exactly one probe.
      const many = Array.from({ length: 12 }, (_, i) => ({
        name: `h${i}`,
        address: silent.address,
        port: silent.port,
      }));
      const result = await waitForSsh(many, { timeoutMs: 800, attemptTimeoutMs: 10_000, concurrency: 3 });
      expect(connections).toBe(3);
      expect(result.missing).toHaveLength(12);
      expect(result.missing.filter((m) => m.lastReason === 'not probed before the deadline')).toHaveLength(9);
    } finally {
      await closeServer(silent);
    }
  });

  it('rejects with the abort reason when cancelled', async () => {
    const controller = new AbortController();
    const waiting = waitForSsh([{ name: 'never', address: randomLoopbackAddress(), port: 22 }], {
      timeoutMs: 60_000,
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(new Error('cancelled by test')), 200);
    await expect(waiting).rejects.toThrow('cancelled by test');
  });
});

describe('keyscan', () => {
  it('returns each host key under its known_hosts name, bracketed off port 22', async () => {
    const silentAddress = randomLoopbackAddress();
    const scans = await keyscan(
      [
        { address: host22.address, port: 22 },
        { address: host2222.address, port: 2222 },
        { address: silentAddress, port: 2222 },
      ],
      { timeoutSec: 3 },
    );
    expect([...scans.keys()].sort()).toEqual(
      [host22.address, `[${host2222.address}]:2222`, `[${silentAddress}]:2222`].sort(),
    );
    for (const host of [host22, host2222]) {
      const lines = (scans.get(host.knownHostsName) ?? '').trim().split('\n');
      expect(lines).toEqual([`${host.knownHostsName} ${await host.hostPublicKey()}`]);
    }
    expect(scans.get(`[${silentAddress}]:2222`)).toBe('');
  });

  it('gives the same answer with one process per target', async () => {
    const scans = await keyscan(
      [
        { address: host22.address, port: 22 },
        { address: host2222.address, port: 2222 },
      ],
      { hostsPerProcess: 1, keyTypes: 'ed25519' },
    );
    expect(scans.get(`[${host2222.address}]:2222`)).toBe(
      `[${host2222.address}]:2222 ${await host2222.hostPublicKey()}\n`,
    );
    expect(scans.get(host22.address)).toBe(`${host22.address} ${await host22.hostPublicKey()}\n`);
  });
});

describe('writePrivateKeyFile', () => {
  it('writes a usable 0600 key in a 0700 directory, restoring the final newline a secret lost', async () => {
    const keyText = (await readFile(bootstrap.privateKeyPath, 'utf8')).trimEnd().replace(/\n/g, '\r\n');
    const path = await writePrivateKeyFile(workDir, keyText);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect((await stat(dirname(path))).mode & 0o777).toBe(0o700);
    const derived = await runProcess('ssh-keygen', ['-y', '-f', path]);
    expect(derived.code).toBe(0);
    expect(derived.stdout.trim().split(' ').slice(0, 2)).toEqual(bootstrap.publicKey.split(' ').slice(0, 2));
  });

  it('refuses an empty key (an unset secret) with a usage error', async () => {
    await expect(writePrivateKeyFile(workDir, ' \n')).rejects.toMatchObject({
      kind: 'usage',
      message: 'the private key is empty',
    });
  });
});

describe('SshAgent', () => {
  it('holds a key, authenticates with it, and is gone after stop', async () => {
    const agent = await SshAgent.start();
    let stopped = false;
    try {
      const socketDir = dirname(agent.env().SSH_AUTH_SOCK);
      expect((await stat(socketDir)).mode & 0o777).toBe(0o700);
      expect(await processRuns(agent.pid)).toBe(true);

      // A key readable by others is loaded from a private copy; the original is left as it was.
      const loose = await generateKeyPair(workDir, 'loose');
      await chmod(loose.privateKeyPath, 0o644);
      await agent.add(loose.privateKeyPath);
      await agent.add(bootstrap.privateKeyPath);
      expect((await stat(loose.privateKeyPath)).mode & 0o777).toBe(0o644);

      const env = { PATH: process.env.PATH, ...agent.env() };
      const listed = await runProcess('ssh-add', ['-l'], { env });
      expect(listed.code).toBe(0);
      const fingerprint = async (file: string) => (await runProcess('ssh-keygen', ['-lf', file])).stdout.split(' ')[1];
      expect(listed.stdout).toContain(await fingerprint(`${loose.privateKeyPath}.pub`));
      expect(listed.stdout).toContain(await fingerprint(`${bootstrap.privateKeyPath}.pub`));

      // The agent's key logs in, checked against a known_hosts file made from keyscan.
      const knownHosts = join(workDir, 'known_hosts');
      await writeFile(knownHosts, [...(await keyscan([{ address: host2222.address, port: 2222 }])).values()].join(''));
      const login = await runProcess(
        'ssh',
        [
          '-F',
          '/dev/null',
          '-o',
          'BatchMode=yes',
          '-o',
          'StrictHostKeyChecking=yes',
          '-o',
          `UserKnownHostsFile=${knownHosts}`,
          '-o',
          'GlobalKnownHostsFile=/dev/null',
          '-p',
          '2222',
          `root@${host2222.address}`,
          'echo logged-in',
        ],
        { env, timeoutMs: 30_000 },
      );
      expect(login.stderr).toBe('');
      expect(login.stdout.trim()).toBe('logged-in');

      await agent.stop();
      stopped = true;
      expect(await processRuns(agent.pid)).toBe(false);
      await expect(access(socketDir)).rejects.toThrow();
      await agent.stop();
    } finally {
      if (!stopped) await agent.stop();
    }
  });

  it('refuses a file that is not a private key, naming it', async () => {
    const agent = await SshAgent.start();
    try {
      const notAKey = join(workDir, 'not-a-key');
      await writeFile(notAKey, 'hello\n', { mode: 0o600 });
      await expect(agent.add(notAKey)).rejects.toThrow(`ssh-add could not load the key ${notAKey}`);
      await expect(agent.add(join(workDir, 'missing'))).rejects.toThrow(
        `cannot read the key ${join(workDir, 'missing')}`,
      );
    } finally {
      await agent.stop();
    }
  });

  /** Runs a script that starts an agent in a child node process; resolves once it printed the agent's pid and socket. */
  async function agentInChild(tail: string) {
    const scriptPath = join(workDir, `agent-parent-${Math.random().toString(36).slice(2)}.mts`);
    await writeFile(
      scriptPath,
      `import { SshAgent } from ${JSON.stringify(join(repoRoot, 'src/adapters/ssh.ts'))};
const agent = await SshAgent.start();
console.log(agent.pid, agent.env().SSH_AUTH_SOCK);
${tail}`,
    );
    const parent = spawn(process.execPath, ['--import', 'tsx', scriptPath], {
      cwd: repoRoot,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const exited = new Promise<number | null>((resolve) => parent.once('exit', (code) => resolve(code)));
    const [agentPid, socketPath] = await new Promise<[number, string]>((resolve, reject) => {
      let out = '';
      parent.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        const [pid = '', socket = ''] = out.trim().split(' ');
        if (out.includes('\n')) resolve([Number(pid), socket]);
      });
      void exited.then((code) => reject(new Error(`the parent exited (${code}) before starting the agent`)));
    });
    return { parent, exited, agentPid, socketPath };
  }

  it('does not outlive a parent that was killed', async () => {
    const { parent, exited, agentPid, socketPath } = await agentInChild('setInterval(() => {}, 1000);');
    expect(await processRuns(agentPid)).toBe(true);
    parent.kill('SIGKILL');
    await exited;
    // ssh-agent notices its command is gone on a 10 s check.
    expect(await eventually(async () => !(await processRuns(agentPid)), 25_000)).toBe(true);
    // The agent removed its socket; the empty private directory is what a crash leaves behind.
    await expect(access(socketPath)).rejects.toThrow();
    await rm(dirname(socketPath), { recursive: true, force: true });
  });

  it('does not keep a parent alive that forgot stop(), and ends with it', async () => {
    const { exited, agentPid, socketPath } = await agentInChild('');
    expect(await exited).toBe(0);
    expect(await eventually(async () => !(await processRuns(agentPid)), 25_000)).toBe(true);
    await rm(dirname(socketPath), { recursive: true, force: true });
  });
});
