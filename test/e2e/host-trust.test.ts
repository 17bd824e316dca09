/**
 * Host keys known before first contact and host certificates, end to end
 * (issue 26, items 3 and 4): real sshd hosts (one presenting a certificate
 * signed with ssh-keygen -s), ansible-core and git; the OpenTofu stand-in.
 */
import { cp } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fingerprint } from '../../src/domain/host-trust.js';
import { randomLoopbackAddress } from '../support/addresses.js';
import {
  createChainFixture,
  sshHostVars,
  workflowIdFrom,
  type ChainFixture,
  type CliResult,
} from '../support/chain-fixture.js';
import { createLoopbackHost, generateKeyPair, type KeyPair, type LoopbackHost } from '../support/loopback-host.js';

const sitePlaybook = new URL('../fixtures/playbooks/site.yml', import.meta.url).pathname;
const FLEET_AUTHORIZED_KEYS = '/home/exocomp/.ssh/authorized_keys';

function output(result: CliResult): string {
  return `exit ${result.code}\n${result.stdout}\n${result.stderr}`;
}

const publicKey = (line: string) => {
  const [keyType = '', key = ''] = line.trim().split(' ');
  return { keyType, key };
};
const described = (line: string) => `${publicKey(line).keyType} ${fingerprint(publicKey(line))}`;

describe('known host keys and a host CA', () => {
  let fx: ChainFixture;
  let ca: KeyPair;
  let otherCa: KeyPair;
  let stranger: KeyPair;
  let plain: LoopbackHost;
  let plain2: LoopbackHost;
  let certified: LoopbackHost;
  /** Listens where an inventory host without a known key points; counts every connection it accepts. */
  let listener: Server;
  let listenerAddress: string;
  let connections = 0;

  const run = (extra: string[] = []) =>
    fx.cli([
      'provision',
      'run',
      fx.workspace,
      'site.yml',
      ...fx.keys,
      '--workspace-name',
      'edge',
      '--ssh-wait',
      '60s',
      ...extra,
    ]);
  const workflow = async (result: CliResult) =>
    JSON.parse((await fx.ledgerFile(`workflows/${workflowIdFrom(result)}.json`))!) as {
      steps: { state: string }[];
      failure?: { step: string; kind: string; summary: string; detail?: string };
    };

  beforeAll(async () => {
    fx = await createChainFixture('edge');
    await cp(sitePlaybook, join(fx.dir, 'site.yml'));
    [ca, otherCa, stranger] = await Promise.all([
      generateKeyPair(fx.dir, 'host-ca'),
      generateKeyPair(fx.dir, 'other-host-ca'),
      generateKeyPair(fx.dir, 'stranger'),
    ]);
    [plain, plain2, certified] = await Promise.all([
      createLoopbackHost({ rootAuthorizedKey: fx.bootstrap.publicKey, port: 2241 }),
      createLoopbackHost({ rootAuthorizedKey: fx.bootstrap.publicKey, port: 2242 }),
      createLoopbackHost({ rootAuthorizedKey: fx.bootstrap.publicKey, port: 2243, hostCaKeyPath: ca.privateKeyPath }),
    ]);
    await Promise.all([plain.start(), plain2.start(), certified.start()]);
    listenerAddress = randomLoopbackAddress();
    listener = createServer((socket) => {
      connections += 1;
      socket.destroy();
    });
    await new Promise<void>((resolve) => listener.listen(2244, listenerAddress, resolve));
  });

  afterAll(async () => {
    listener?.close();
    await Promise.all([plain?.destroy(), plain2?.destroy(), certified?.destroy()]);
    await fx?.cleanup();
  });

  it('host-keys known: a host without a known key is refused at capture, and nothing connects to it', async () => {
    await fx.setInventory({
      all: {
        hosts: {
          web: { ...sshHostVars(plain), exocomp_host_keys: await plain.hostPublicKey() },
          ghost: { ansible_host: listenerAddress, ansible_port: 2244, ansible_user: 'root' },
        },
      },
    });
    const refused = await run(['--host-keys', 'known']);
    expect(refused.code, output(refused)).toBe(1);
    const record = await workflow(refused);
    expect(record.failure).toMatchObject({ step: 'apply', kind: 'host-key' });
    expect(record.failure?.summary).toContain('1 host(s): ghost have no known key and no host CA');
    expect(record.steps.map((s) => s.state)).toEqual(['failed', 'blocked', 'blocked', 'blocked']);
    expect(connections).toBe(0);
    expect(await fx.ledgerFile('known_hosts')).toBeUndefined();

    // A resume that does not say keeps the mode the workflow started with (kept in its record), not auto.
    const id = workflowIdFrom(refused);
    const resumed = await fx.cli(['provision', 'resume', id, ...fx.keys, '--ssh-wait', '5s']);
    expect(resumed.code, output(resumed)).toBe(1);
    expect((await workflow(refused)).failure?.summary).toContain('ghost have no known key and no host CA');
    expect(connections).toBe(0);
  });

  it("another key than the workspace's, a plain key under a CA, another CA's certificate: all refused before onboarding, nothing pinned", async () => {
    await fx.setInventory({
      all: {
        hosts: {
          web: { ...sshHostVars(plain), exocomp_host_keys: [stranger.publicKey] },
          web2: { ...sshHostVars(plain2), exocomp_host_ca: ca.publicKey },
          cert: { ...sshHostVars(certified), exocomp_host_ca: otherCa.publicKey },
        },
      },
    });
    const refused = await run();
    expect(refused.code, output(refused)).toBe(1);
    const record = await workflow(refused);
    expect(record.failure).toMatchObject({ step: 'onboard', kind: 'host-key' });
    const text = `${record.failure?.summary}\n${record.failure?.detail}`;
    expect(text).toContain(
      `web (${plain.knownHostsName}) is refused: it presents ${described(await plain.hostPublicKey())}; the workspace gives ${described(stranger.publicKey)}`,
    );
    expect(text).toContain(
      `web2 (${plain2.knownHostsName}) is refused: it presents no host certificate (a plain key only); the host CA is ${described(ca.publicKey)}`,
    );
    expect(text).toContain(
      `cert (${certified.knownHostsName}) is refused: it presents a certificate signed by ${described(ca.publicKey)}; the host CA is ${described(otherCa.publicKey)}`,
    );
    expect(await fx.ledgerFile('known_hosts')).toBeUndefined();
    expect(await plain.readFile(FLEET_AUTHORIZED_KEYS)).toBeUndefined();
  });

  it("the workspace's keys and its host CA pinned: both hosts converge, the certified one with no per-host pin", async () => {
    await fx.setInventory({
      all: {
        hosts: {
          web: { ...sshHostVars(plain), exocomp_host_keys: `${await plain.hostPublicKey()}\n` },
          cert: { ...sshHostVars(certified), exocomp_host_ca: ca.publicKey },
        },
      },
    });
    const result = await run(['--host-keys', 'known']);
    expect(result.code, output(result)).toBe(0);
    const caKey = publicKey(ca.publicKey);
    const pins = (await fx.ledgerFile('known_hosts'))!.trim().split('\n');
    expect(pins.sort()).toEqual(
      [
        `${plain.knownHostsName} ${await plain.hostPublicKey()}`,
        `@cert-authority ${certified.knownHostsName} ${caKey.keyType} ${caKey.key}`,
      ].sort(),
    );
    for (const host of [plain, certified]) {
      expect(await host.readFile(FLEET_AUTHORIZED_KEYS)).toContain(fx.fleet.publicKey.split(' ')[1]);
      expect(await host.exec('ls /tmp')).toMatchObject({ stdout: expect.stringContaining('exocomp-configured-') });
    }
  });
});
