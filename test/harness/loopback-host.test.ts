import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runProcess, type RunResult } from '../../src/adapters/process.js';
import { isPortOpen, readSshBanner, waitForPortOpen } from '../support/addresses.js';
import { createLoopbackHost, generateKeyPair, type KeyPair, type LoopbackHost } from '../support/loopback-host.js';
import { scaled } from '../support/time.js';

let workDir: string;
let bootstrapKey: KeyPair;
const hosts: LoopbackHost[] = [];

beforeAll(async () => {
  workDir = await mkdtemp(path.join(tmpdir(), 'exocomp-host-test-'));
  bootstrapKey = await generateKeyPair(workDir, 'bootstrap');
});

afterEach(async () => {
  await Promise.all(hosts.splice(0).map((host) => host.destroy()));
});

afterAll(async () => {
  await rm(workDir, { recursive: true, force: true });
});

async function newHost(options: { port?: number; startDelayMs?: number } = {}): Promise<LoopbackHost> {
  const host = await createLoopbackHost({ rootAuthorizedKey: bootstrapKey.publicKey, ...options });
  hosts.push(host);
  return host;
}

async function startedHost(options: { port?: number } = {}): Promise<LoopbackHost> {
  const host = await newHost(options);
  await host.start();
  return host;
}

const unique = (prefix: string) => `${prefix}-${randomBytes(4).toString('hex')}`;

/** A known_hosts file pinning the host's current key, the way onboarding records it. */
async function pinHostKey(host: LoopbackHost): Promise<string> {
  const file = path.join(workDir, unique('known_hosts'));
  await writeFile(file, `${host.knownHostsName} ${await host.hostPublicKey()}\n`);
  return file;
}

function ssh(
  host: LoopbackHost,
  knownHosts: string,
  command: string,
  options: { user?: string; key?: string; onOutput?: (chunk: string) => void } = {},
): Promise<RunResult> {
  return runProcess(
    'ssh',
    [
      '-F',
      '/dev/null',
      '-i',
      options.key ?? bootstrapKey.privateKeyPath,
      '-o',
      'IdentitiesOnly=yes',
      '-o',
      'IdentityAgent=none',
      '-o',
      'BatchMode=yes',
      '-o',
      `UserKnownHostsFile=${knownHosts}`,
      '-o',
      'GlobalKnownHostsFile=/dev/null',
      '-o',
      'StrictHostKeyChecking=yes',
      '-o',
      'ConnectTimeout=10',
      '-p',
      String(host.port),
      `${options.user ?? 'root'}@${host.address}`,
      command,
    ],
    {
      timeoutMs: scaled(60_000),
      ...(options.onOutput ? { onOutput: (chunk: string) => options.onOutput!(chunk) } : {}),
    },
  );
}

async function keyscan(host: LoopbackHost): Promise<string> {
  const result = await runProcess('ssh-keyscan', ['-T', '10', '-t', 'ed25519', '-p', String(host.port), host.address]);
  return result.stdout.trim();
}

/** Command lines of every process on the machine running the tests. */
function allCommandLines(): string[] {
  const lines: string[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      lines.push(readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' '));
    } catch {
      /* the process ended while we looked */
    }
  }
  return lines;
}

describe('loopback host', () => {
  it('accepts root with the bootstrap key over real ssh, verifying the pinned host key', async () => {
    const host = await startedHost();
    expect(host.address).toMatch(/^127\.(1\d\d)\.\d+\.\d+$/);
    expect(host.port).toBe(22);

    const knownHosts = await pinHostKey(host);
    const login = await ssh(host, knownHosts, 'id -u; hostname');
    expect(login.stderr).toBe('');
    expect(login.code).toBe(0);
    expect(login.stdout.split('\n')[0]).toBe('0');
    expect(login.stdout).toContain(host.id);

    // A pin that does not match is refused: the pinned check is real.
    const stranger = await generateKeyPair(workDir, 'stranger-host');
    const wrongPin = path.join(workDir, unique('known_hosts'));
    await writeFile(wrongPin, `${host.knownHostsName} ${stranger.publicKey}\n`);
    const mismatch = await ssh(host, wrongPin, 'true');
    expect(mismatch.code).toBe(255);
    expect(mismatch.stderr).toContain('REMOTE HOST IDENTIFICATION HAS CHANGED');

    // Only the bootstrap key opens root.
    const intruder = await generateKeyPair(workDir, 'intruder');
    const refused = await ssh(host, knownHosts, 'true', { key: intruder.privateKeyPath });
    expect(refused.code).toBe(255);
    expect(refused.stderr).toContain('Permission denied');
  });

  it('keeps writes to /tmp and /etc on the host away from the machine running the tests', async () => {
    const host = await startedHost();
    const knownHosts = await pinHostKey(host);
    const name = unique('exocomp-isolation');
    const write = await ssh(
      host,
      knownHosts,
      `echo in-tmp > /tmp/${name} && echo in-etc > /etc/${name} && mkdir -p /opt/${name}`,
    );
    expect(write.code).toBe(0);

    expect(await host.readFile(`/tmp/${name}`)).toBe('in-tmp\n');
    expect(await host.readFile(`/etc/${name}`)).toBe('in-etc\n');
    expect(existsSync(`/tmp/${name}`)).toBe(false);
    expect(existsSync(`/etc/${name}`)).toBe(false);
    expect(existsSync(`/opt/${name}`)).toBe(false);

    // Like a reboot: /etc keeps its state, /tmp starts empty.
    await host.stop();
    await host.start();
    expect(await host.readFile(`/etc/${name}`)).toBe('in-etc\n');
    expect(await host.readFile(`/tmp/${name}`)).toBeUndefined();
    expect(existsSync(`/etc/${name}`)).toBe(false);
  });

  it('with startDelayMs, returns from start() before sshd listens and listens later', async () => {
    const host = await newHost({ startDelayMs: 3_000 });
    await host.start();
    expect(host.isRunning()).toBe(true);
    expect(await isPortOpen(host.address, host.port)).toBe(false);
    expect(await waitForPortOpen(host.address, host.port, 30_000)).toBe(true);
    expect(await readSshBanner(host.address, host.port)).toMatch(/^SSH-2\.0-OpenSSH/);
  });

  it('rekey changes the host key that hostPublicKey() and ssh-keyscan report', async () => {
    const host = await startedHost();
    const before = await host.hostPublicKey();
    expect(before).toMatch(/^ssh-ed25519 AAAA\S+$/);
    expect(await keyscan(host)).toBe(`${host.address} ${before}`);
    const oldPin = await pinHostKey(host);

    await host.rekey();

    const after = await host.hostPublicKey();
    expect(after).toMatch(/^ssh-ed25519 AAAA\S+$/);
    expect(after).not.toBe(before);
    expect(await keyscan(host)).toBe(`${host.address} ${after}`);
    const stale = await ssh(host, oldPin, 'true');
    expect(stale.code).toBe(255);
    expect(stale.stderr).toContain('REMOTE HOST IDENTIFICATION HAS CHANGED');
    expect((await ssh(host, await pinHostKey(host), 'true')).code).toBe(0);
  });

  it('stop() ends a live ssh session and every other process of the host', async () => {
    const host = await startedHost();
    const knownHosts = await pinHostKey(host);
    const marker = `${300 + Math.floor(Math.random() * 1000)}.${Math.floor(Math.random() * 1000)}`;
    const detached = await host.exec(`nohup sleep ${marker} >/dev/null 2>&1 &`);
    expect(detached.code).toBe(0);

    let announced!: () => void;
    const sessionStarted = new Promise<void>((resolve) => (announced = resolve));
    let output = '';
    const session = ssh(host, knownHosts, 'echo session-started; exec sleep 300', {
      onOutput: (chunk) => {
        output += chunk;
        if (output.includes('session-started')) announced();
      },
    });
    await sessionStarted;
    expect(allCommandLines().some((line) => line.startsWith(`sleep ${marker}`))).toBe(true);

    await host.stop();

    const ended = await session;
    expect(ended.code).toBe(255);
    expect(allCommandLines().some((line) => line.startsWith(`sleep ${marker}`))).toBe(false);
    expect(allCommandLines().some((line) => line.includes(host.directory))).toBe(false);
    expect(await isPortOpen(host.address, host.port)).toBe(false);
    await expect(host.exec('true')).rejects.toThrow(/not running/);
  });

  it('a user created on the host survives rekey, can log in, and never exists on the real machine', async () => {
    const host = await startedHost();
    const user = unique('fleet').slice(0, 14);
    const fleetKey = await generateKeyPair(workDir, 'fleet');
    const created = await host.exec(
      [
        `useradd --create-home --shell /bin/sh --password '*' ${user}`,
        `install -d -m 700 -o ${user} -g ${user} /home/${user}/.ssh`,
        `printf '%s\\n' '${fleetKey.publicKey}' > /home/${user}/.ssh/authorized_keys`,
        `chown ${user}:${user} /home/${user}/.ssh/authorized_keys`,
        `chmod 600 /home/${user}/.ssh/authorized_keys`,
      ].join(' && '),
    );
    expect(created.stderr).toBe('');
    expect(created.code).toBe(0);

    await host.rekey();

    expect((await host.exec(`id -u ${user}`)).code).toBe(0);
    expect(await host.readFile('/etc/passwd')).toContain(`${user}:`);
    const login = await ssh(host, await pinHostKey(host), 'id -un', { user, key: fleetKey.privateKeyPath });
    expect(login.code).toBe(0);
    expect(login.stdout.trim()).toBe(user);

    expect((await runProcess('getent', ['passwd', user])).code).toBe(2);
    expect(readFileSync('/etc/passwd', 'utf8')).not.toContain(`${user}:`);
    expect(existsSync(`/home/${user}`)).toBe(false);
  });

  it('runs a host on port 22 and one on another port at the same time, each with its own state', async () => {
    const [onDefault, onOther] = await Promise.all([startedHost(), startedHost({ port: 2222 })]);
    expect(onOther.knownHostsName).toBe(`[${onOther.address}]:2222`);

    const [a, b] = await Promise.all([
      ssh(onDefault, await pinHostKey(onDefault), 'hostname'),
      ssh(onOther, await pinHostKey(onOther), 'hostname'),
    ]);
    expect([a.code, b.code]).toEqual([0, 0]);
    expect(a.stdout).toContain(onDefault.id);
    expect(b.stdout).toContain(onOther.id);
    expect(await keyscan(onOther)).toBe(`[${onOther.address}]:2222 ${await onOther.hostPublicKey()}`);
    expect(await onDefault.hostPublicKey()).not.toBe(await onOther.hostPublicKey());

    const name = unique('only-here');
    expect((await onDefault.exec(`touch /etc/${name}`)).code).toBe(0);
    expect(await onDefault.readFile(`/etc/${name}`)).toBe('');
    expect(await onOther.readFile(`/etc/${name}`)).toBeUndefined();
  });

  it('destroy() removes every file of the host', async () => {
    const host = await startedHost();
    expect(existsSync(path.join(host.directory, 'sshd_config'))).toBe(true);
    await host.destroy();
    expect(existsSync(host.directory)).toBe(false);
    expect(host.isRunning()).toBe(false);
  });
});
