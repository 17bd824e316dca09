/**
 * Host keys end to end (issue 3, acceptance 4 and 5): trust on first use is
 * one-way, rotation only when asked for that host, strict checking in the
 * configure play, and pins that follow the inventory. Real sshd hosts,
 * ansible-core and git; the OpenTofu stand-in.
 */
import { copyFile, cp, mkdtemp, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerFileLog } from '../support/ledger-git.js';
import { runProcess } from '../../src/adapters/process.js';
import {
  createChainFixture,
  sshHostVars,
  workflowIdFrom,
  type ChainFixture,
  type CliResult,
} from '../support/chain-fixture.js';
import {
  createLoopbackHost,
  generateKeyPair,
  shellQuote,
  type KeyPair,
  type LoopbackHost,
} from '../support/loopback-host.js';
import { waitFor } from '../support/time.js';

const sitePlaybook = new URL('../fixtures/playbooks/site.yml', import.meta.url).pathname;
const FLEET_AUTHORIZED_KEYS = '/home/exocomp/.ssh/authorized_keys';
const ROOT_AUTHORIZED_KEYS = '/root/.ssh/authorized_keys';

interface WorkflowRecord {
  state: string;
  steps: Array<{ name: string; state: string; attempts: number }>;
  failure?: { step: string; kind: string; summary: string };
}

async function setup(): Promise<ChainFixture> {
  const fx = await createChainFixture('edge');
  await cp(sitePlaybook, join(fx.dir, 'site.yml'));
  return fx;
}

async function workflowRecord(fx: ChainFixture, id: string): Promise<WorkflowRecord> {
  const text = await fx.ledgerFile(`workflows/${id}.json`);
  if (text === undefined) throw new Error(`workflow ${id} is not in the ledger`);
  return JSON.parse(text) as WorkflowRecord;
}

function keyArgs(fx: ChainFixture, fleet: KeyPair = fx.fleet): string[] {
  return [...fx.common, '--fleet-key', fleet.privateKeyPath, '--bootstrap-key', fx.bootstrap.privateKeyPath];
}

function provisionRun(fx: ChainFixture, extra: string[] = [], fleet?: KeyPair): Promise<CliResult> {
  return fx.cli([
    'provision',
    'run',
    fx.workspace,
    'site.yml',
    ...keyArgs(fx, fleet),
    '--workspace-name',
    'edge',
    '--ssh-wait',
    '60s',
    ...extra,
  ]);
}

function output(result: CliResult): string {
  return `exit ${result.code}\n${result.stdout}\n${result.stderr}`;
}

/** The known_hosts line the store holds for a host's current key. */
async function pinLine(host: LoopbackHost): Promise<string> {
  return `${host.knownHostsName} ${await host.hostPublicKey()}`;
}

/** `ssh-ed25519 AAAA…` without the comment: what authorized_keys must contain. */
function keyOf(pair: KeyPair): string {
  return pair.publicKey.split(' ').slice(0, 2).join(' ');
}

/**
 * Rekeys a host the way `sshd` reloads (SIGHUP re-execs the listener): unlike
 * host.rekey(), SSH sessions already open stay alive, so a connection
 * multiplexing master left over from an earlier run would still reach the host
 * without checking its new key.
 */
async function rekeyKeepingSessions(host: LoopbackHost): Promise<void> {
  const config = await readFile(join(host.directory, 'sshd_config'), 'utf8');
  const hostKeyPath = /^HostKey (.+)$/m.exec(config)?.[1];
  if (!hostKeyPath) throw new Error(`no HostKey in the sshd_config of ${host.id}`);
  const scratch = await mkdtemp(join(tmpdir(), 'exocomp-rekey-'));
  try {
    const fresh = join(scratch, 'key');
    const keygen = await runProcess('ssh-keygen', [
      '-q',
      '-t',
      'ed25519',
      '-N',
      '',
      '-C',
      `rekeyed-${host.id}`,
      '-f',
      fresh,
    ]);
    if (keygen.code !== 0) throw new Error(`ssh-keygen failed: ${keygen.stderr}`);
    await copyFile(fresh, hostKeyPath);
    await copyFile(`${fresh}.pub`, `${hostKeyPath}.pub`);
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
  const pidFile = /^PidFile (.+)$/m.exec(config)?.[1];
  if (!pidFile) throw new Error(`no PidFile in the sshd_config of ${host.id}`);
  const hup = await host.exec(`kill -HUP "$(cat ${shellQuote(pidFile)})"`);
  if (hup.code !== 0) throw new Error(`reloading sshd failed: ${hup.stderr}`);
  const expected = await host.hostPublicKey();
  await waitFor(
    `sshd of ${host.id} to present its new key after SIGHUP`,
    async () =>
      (await runProcess('ssh-keyscan', ['-t', 'ed25519', '-p', String(host.port), host.address])).stdout.includes(
        expected,
      ),
    { timeoutMs: 20_000, intervalMs: 100 },
  );
}

describe('a host rekeyed before its onboarding', () => {
  let fx: ChainFixture;
  let host: LoopbackHost;
  let oldPin: string;
  let rootKeysBefore: string | undefined;
  let failed: CliResult;

  beforeAll(async () => {
    fx = await setup();
    host = await createLoopbackHost({ rootAuthorizedKey: fx.bootstrap.publicKey, port: 2201 });
    await host.start();
    await fx.setInventory({ all: { hosts: { web: sshHostVars(host) } } });
    // Pinned (trust on first use), never onboarded; then the host presents another key.
    const pinned = await fx.cli(['host', 'onboard', `${host.address}:${host.port}`, '--ledger', fx.ledger]);
    expect(pinned.stdout, output(pinned)).toContain(`${host.knownHostsName}: pinned`);
    oldPin = await pinLine(host);
    await host.rekey();
    rootKeysBefore = await host.readFile(ROOT_AUTHORIZED_KEYS);
    failed = await provisionRun(fx);
  });

  afterAll(async () => {
    await host?.destroy();
    await fx?.cleanup();
  });

  it('fails step 3 as a host-key failure, with steps 4 blocked', async () => {
    expect(failed.code, output(failed)).toBe(1);
    const record = await workflowRecord(fx, workflowIdFrom(failed));
    expect(record.state).toBe('provision-failed');
    expect(record.steps.map((s) => s.state)).toEqual(['succeeded', 'succeeded', 'failed', 'blocked']);
    expect(record.failure).toMatchObject({ step: 'onboard', kind: 'host-key' });
    expect(record.failure?.summary).toContain(host.knownHostsName);
  });

  it('pushes nothing to the host and keeps the old pin', async () => {
    expect(await host.readFile(ROOT_AUTHORIZED_KEYS)).toBe(rootKeysBefore);
    expect(await host.readFile(FLEET_AUTHORIZED_KEYS)).toBeUndefined();
    const pins = (await fx.ledgerFile('known_hosts'))!;
    expect(pins).toContain(oldPin);
    expect(pins).not.toContain(await host.hostPublicKey());
  });

  it('passes with rotation asked for that host on resume, and the store holds the new key', async () => {
    const id = workflowIdFrom(failed);
    const resumed = await fx.cli(['provision', 'resume', id, ...keyArgs(fx), '--rotate-host-key', host.address]);
    expect(resumed.code, output(resumed)).toBe(0);
    const record = await workflowRecord(fx, id);
    expect(record.steps.map((s) => s.state)).toEqual(['succeeded', 'succeeded', 'succeeded', 'succeeded']);
    const pins = (await fx.ledgerFile('known_hosts'))!;
    expect(pins).toContain(await pinLine(host));
    expect(pins).not.toContain(oldPin.split(' ').slice(1).join(' '));
    expect(await fx.ledgerMessages()).toContain(`known_hosts: rotate ${host.knownHostsName}`);
    expect(await host.readFile(FLEET_AUTHORIZED_KEYS)).toContain(keyOf(fx.fleet));
  });
});

describe('a host rekeyed seconds after a successful run to it', () => {
  let fx: ChainFixture;
  let host: LoopbackHost;
  let secondFleet: KeyPair;
  let oldPin: string;
  let fleetKeysBefore: string | undefined;
  let rootKeysBefore: string | undefined;
  let failed: CliResult;

  beforeAll(async () => {
    fx = await setup();
    secondFleet = await generateKeyPair(fx.dir, 'fleet-2');
    host = await createLoopbackHost({ rootAuthorizedKey: fx.bootstrap.publicKey, port: 2202 });
    await host.start();
    await fx.setInventory({ all: { hosts: { web: sshHostVars(host) } } });
    const first = await provisionRun(fx);
    expect(first.code, output(first)).toBe(0);
    fleetKeysBefore = await host.readFile(FLEET_AUTHORIZED_KEYS);
    rootKeysBefore = await host.readFile(ROOT_AUTHORIZED_KEYS);
    oldPin = await pinLine(host);
    // At once, and with the sessions of that run left alive (see rekeyKeepingSessions).
    await rekeyKeepingSessions(host);
    // Another fleet key, so an authorized_keys written by this run would show.
    failed = await provisionRun(fx, [], secondFleet);
  });

  afterAll(async () => {
    await host?.destroy();
    await fx?.cleanup();
  });

  it('fails step 3 as a host-key failure', async () => {
    expect(failed.code, output(failed)).toBe(1);
    const record = await workflowRecord(fx, workflowIdFrom(failed));
    expect(record.steps.map((s) => s.state)).toEqual(['succeeded', 'succeeded', 'failed', 'blocked']);
    expect(record.failure).toMatchObject({ step: 'onboard', kind: 'host-key' });
  });

  it('leaves every authorized_keys as the first run left it and keeps the old pin', async () => {
    expect(fleetKeysBefore).toContain(keyOf(fx.fleet));
    expect(await host.readFile(FLEET_AUTHORIZED_KEYS)).toBe(fleetKeysBefore);
    expect(await host.readFile(ROOT_AUTHORIZED_KEYS)).toBe(rootKeysBefore);
    expect(await host.readFile(FLEET_AUTHORIZED_KEYS)).not.toContain(keyOf(secondFleet));
    const pins = (await fx.ledgerFile('known_hosts'))!;
    expect(pins).toContain(oldPin);
    expect(pins).not.toContain(await host.hostPublicKey());
  });

  it('is rotated by `host onboard --rotate`: the store holds the new key', async () => {
    const rotated = await fx.cli([
      'host',
      'onboard',
      `${host.address}:${host.port}`,
      '--rotate',
      '--ledger',
      fx.ledger,
    ]);
    expect(rotated.stdout, output(rotated)).toContain(`${host.knownHostsName}: rotated`);
    expect(await fx.ledgerFile('known_hosts')).toBe(`${await pinLine(host)}\n`);
  });

  it('fails a configure run seconds after a successful one when rekeyed with its sessions alive, and is not re-pinned', async () => {
    const playArgs = [
      'playbook',
      'run',
      'site.yml',
      '--inventory',
      'tf:edge',
      '--fleet-key',
      fx.fleet.privateKeyPath,
      '--ledger',
      fx.ledger,
    ];
    const marker = '/tmp/exocomp-configured-web';
    await host.exec(`rm -f ${marker}`);
    const converged = await fx.cli(playArgs);
    expect(converged.code, output(converged)).toBe(0);
    expect(await host.readFile(marker)).toContain('user=exocomp');
    await host.exec(`rm -f ${marker}`);
    const pinsBefore = await fx.ledgerFile('known_hosts');

    await rekeyKeepingSessions(host);
    const play = await fx.cli(playArgs);
    expect(play.code, output(play)).not.toBe(0);
    expect(play.stderr + play.stdout).toMatch(/host key verification failed|REMOTE HOST IDENTIFICATION HAS CHANGED/i);
    expect(await host.readFile(marker)).toBeUndefined();
    expect(await fx.ledgerFile('known_hosts')).toBe(pinsBefore);
  });
});

describe('pins follow the inventory', () => {
  let fx: ChainFixture;
  let a: LoopbackHost;
  let b: LoopbackHost;
  let recycled: LoopbackHost | undefined;
  let bPin: string;

  beforeAll(async () => {
    fx = await setup();
    a = await createLoopbackHost({ rootAuthorizedKey: fx.bootstrap.publicKey, port: 2203 });
    b = await createLoopbackHost({ rootAuthorizedKey: fx.bootstrap.publicKey, port: 2204 });
    await Promise.all([a.start(), b.start()]);
  });

  afterAll(async () => {
    await a?.destroy();
    await b?.destroy();
    await recycled?.destroy();
    await fx?.cleanup();
  });

  it('pins both hosts of an apply that names them', async () => {
    await fx.setInventory({ all: { hosts: { a: sshHostVars(a), b: sshHostVars(b) } } });
    const run = await provisionRun(fx);
    expect(run.code, output(run)).toBe(0);
    bPin = await pinLine(b);
    const pins = (await fx.ledgerFile('known_hosts'))!;
    expect(pins).toContain(await pinLine(a));
    expect(pins).toContain(bPin);
  });

  it('retires the pin of a host an apply drops, keeping it in the branch history', async () => {
    await fx.setInventory({ all: { hosts: { a: sshHostVars(a) } } });
    const apply = await fx.cli(['workspace', 'apply', fx.workspace, '--workspace-name', 'edge', ...fx.common]);
    expect(apply.code, output(apply)).toBe(0);
    expect(apply.stdout).toMatch(/naming 1 host\(s\)/);
    const pins = (await fx.ledgerFile('known_hosts'))!;
    expect(pins).toContain(await pinLine(a));
    expect(pins).not.toContain(b.knownHostsName);
    expect((await fx.ledgerMessages()).at(-1)).toContain(`retire pins ${b.knownHostsName}`);
    const history = { stdout: await ledgerFileLog(fx.ledger, 'known_hosts', ['-p', '--format=%H']) };
    expect(history.stdout).toContain(`-${bPin}`);
  });

  it('pins a new machine at the recycled address fresh and onboards it', async () => {
    const { address, port } = b;
    await b.destroy();
    recycled = await createLoopbackHost({ rootAuthorizedKey: fx.bootstrap.publicKey, address, port });
    await recycled.start();
    expect(await recycled.hostPublicKey()).not.toBe(bPin.split(' ').slice(1).join(' '));
    await fx.setInventory({ all: { hosts: { a: sshHostVars(a), b: sshHostVars(recycled) } } });
    const run = await provisionRun(fx);
    expect(run.code, output(run)).toBe(0);
    const record = await workflowRecord(fx, workflowIdFrom(run));
    expect(record.steps.map((s) => s.state)).toEqual(['succeeded', 'succeeded', 'succeeded', 'succeeded']);
    const pins = (await fx.ledgerFile('known_hosts'))!;
    expect(pins).toContain(await pinLine(recycled));
    expect(pins).not.toContain(bPin);
    expect(await fx.ledgerMessages()).toContain(`known_hosts: pin ${recycled.knownHostsName}`);
    expect(await recycled.readFile(FLEET_AUTHORIZED_KEYS)).toContain(keyOf(fx.fleet));
    expect(await recycled.readFile('/tmp/exocomp-configured-b')).toContain('user=exocomp');
  });
});
