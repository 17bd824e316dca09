/**
 * Hosts behind a bastion (issue 26; docs/networks.md), on a network the test
 * builds from namespaces (test/support/netns.ts): the CLI runs in `runner`,
 * which reaches only the bastion; the private hosts answer only the bastion.
 * Real sshd, ssh, ansible-core and git; the OpenTofu stand-in.
 */
import { spawn } from 'node:child_process';
import { cp } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cliPath,
  convergeArgs,
  createChainFixture,
  driftArgs,
  driftReportOf,
  provisionArgs,
  type ChainFixture,
  type CliResult,
} from '../support/chain-fixture.js';
import { createLoopbackHost, generateKeyPair, type LoopbackHost } from '../support/loopback-host.js';
import { createPrivateNetwork, longhand, type PrivateNetwork } from '../support/netns.js';
import { scaled } from '../support/time.js';
import type { DriftReport } from '../../src/domain/drift.js';

const sitePlaybook = new URL('../fixtures/playbooks/site.yml', import.meta.url).pathname;

describe('provision run through a bastion, on a network the runner cannot reach directly', () => {
  let net: PrivateNetwork;
  let fx: ChainFixture;
  let bastion: LoopbackHost;
  const privates: LoopbackHost[] = [];
  let run: CliResult;

  /** The CLI as a process of the runner namespace. */
  const cli = (args: string[]): Promise<CliResult> =>
    new Promise((resolve) => {
      const child = spawn('ip', ['netns', 'exec', net.runner, process.execPath, cliPath, ...args], {
        cwd: fx.dir,
        env: fx.env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      child.on('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
    });
  const converge = () => cli(convergeArgs(fx));
  const drift = async (): Promise<{ code: number; report: DriftReport }> => {
    const result = await cli(driftArgs(fx));
    return { code: result.code, report: driftReportOf(result) };
  };
  const provisionRun = (sshWait: string, ...extra: string[]) =>
    cli(provisionArgs(fx, `--ssh-wait=${sshWait}`, ...extra));
  const tcpFromRunner = (address: string, port: number) =>
    net.exec(net.runner, ['bash', '-c', `exec 3<>/dev/tcp/${address}/${port}`]);

  beforeAll(async () => {
    net = await createPrivateNetwork(4);
    try {
      fx = await createChainFixture('edge');
      bastion = await createLoopbackHost({
        rootAuthorizedKey: fx.bootstrap.publicKey,
        address: net.bastionOuter,
        // Its IPv6 leg is the run's bastion (--bastion) in the last test.
        alsoListenOn: [net.bastionOuter6],
        netns: net.bastion,
      });
      await bastion.start();
      for (const i of [2, 3, 4]) {
        const host = await createLoopbackHost({
          rootAuthorizedKey: fx.bootstrap.publicKey,
          address: net.privateAddress(i),
          netns: net.private,
          // The last one boots late: the wait through the bastion has something real to wait for.
          ...(i === 4 ? { startDelayMs: 3_000 } : {}),
        });
        privates.push(host);
        await host.start();
      }
      // p4 is on the private link's IPv6 prefix: IPv6 end to end through the bastion.
      const v6 = await createLoopbackHost({
        rootAuthorizedKey: fx.bootstrap.publicKey,
        address: net.privateAddress6(2),
        netns: net.private,
      });
      privates.push(v6);
      await v6.start();
      await fx.setInventory({
        all: {
          hosts: { bastion: { ansible_host: bastion.address, ansible_user: 'root' } },
          children: {
            private: {
              // p4's IPv6 address is spelled non-canonically, as a workspace may: pins, ssh and the play agree on one spelling.
              hosts: Object.fromEntries(
                privates.map((h, i) => [
                  `p${i + 1}`,
                  { ansible_host: h === v6 ? longhand(h.address) : h.address, ansible_user: 'root' },
                ]),
              ),
              vars: { exocomp_bastion: 'bastion' },
            },
          },
        },
      });
      await cp(sitePlaybook, join(fx.dir, 'site.yml'));
    } catch (error) {
      await net.destroy();
      throw error;
    }
    run = await provisionRun('60s');
    // Five hosts, three plays and a shared machine: more than the default hook bound.
  }, scaled(600_000));

  afterAll(async () => {
    try {
      for (const host of [bastion, ...privates]) await host?.destroy();
      await fx?.cleanup();
    } finally {
      await net?.destroy();
    }
  });

  it('the runner cannot open a TCP connection to a private host, only to the bastion', async () => {
    const direct = await tcpFromRunner(privates[0]!.address, 22);
    expect(direct.code).not.toBe(0);
    expect(direct.stderr).toMatch(/unreachable/i);
    expect((await tcpFromRunner(bastion.address, 22)).code).toBe(0);
  });

  it('waits for, pins, onboards and configures the private hosts (one late, one on IPv6) through the bastion', async () => {
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
    expect(run.stderr).toMatch(/bastion bastion: key pinned/);
    const knownHosts = (await fx.ledgerFile('known_hosts')) ?? '';
    for (const host of [bastion, ...privates]) {
      expect(knownHosts).toContain(`${host.address} ${await host.hostPublicKey()}`);
    }
    for (const [i, host] of privates.entries()) {
      expect(await host.readFile(`/tmp/exocomp-configured-p${i + 1}`)).toContain('user=');
    }
    expect(await bastion.readFile('/tmp/exocomp-configured-bastion')).toContain('user=');
  });

  it('a scheduled converge of tf:edge goes through the bastion too', async () => {
    for (const host of privates) await host.exec('rm -f /tmp/exocomp-configured-*');
    const result = await converge();
    expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(0);
    for (const [i, host] of privates.entries()) {
      expect(await host.readFile(`/tmp/exocomp-configured-p${i + 1}`)).toContain('user=');
    }
  });

  it('drift asks the hosts behind the bastion through it: none shows as unreachable', async () => {
    const { report } = await drift();
    expect(report.configuration, JSON.stringify(report)).toMatchObject({
      ok: true,
      value: { hostCount: 5, unreachable: [], keyMismatches: [], failed: [] },
    });
    // The check-mode play ran on them: the marker it would rewrite (as drift's user) shows as a change on each.
    const config = report.configuration.ok ? report.configuration.value : undefined;
    expect(config?.changed.map((c) => c.host)).toEqual(['bastion', 'p1', 'p2', 'p3', 'p4']);
  });

  it('host onboard rotates a host behind the bastion through it, the bastion checked against its pin', async () => {
    const p1 = privates[0]!;
    await p1.rekey();
    const args = ['host', 'onboard', 'p1', '--inventory', 'tf:edge', ...fx.ledgerArgs];
    const refused = await cli([...args, '--key', fx.bootstrap.privateKeyPath]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/host key changed for .*p1|presented|no longer matches/);
    const rotated = await cli([...args, '--key', fx.bootstrap.privateKeyPath, '--rotate']);
    expect(rotated.code, rotated.stderr).toBe(0);
    expect(rotated.stdout).toContain(`${p1.address}: rotated`);
    expect(await fx.ledgerFile('known_hosts')).toContain(`${p1.address} ${await p1.hostPublicKey()}`);
  });

  it('a rekeyed bastion is refused before any play, and nothing is re-pinned', async () => {
    const before = await fx.ledgerFile('known_hosts');
    for (const host of privates) await host.exec('rm -f /tmp/exocomp-configured-*');
    await bastion.rekey();
    const result = await converge();
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/bastion bastion .*presented a host key other than the pinned one/);
    expect(await fx.ledgerFile('known_hosts')).toBe(before);
    for (const [i, host] of privates.entries()) {
      expect(await host.readFile(`/tmp/exocomp-configured-p${i + 1}`)).toBeUndefined();
    }
    // Drift checks the bastion against its pin too: the hosts behind it are unreachable, and say why.
    const { report } = await drift();
    const config = report.configuration.ok ? report.configuration.value : undefined;
    expect(config?.keyMismatches.map((m) => m.host)).toEqual(['bastion']);
    expect(config?.unreachable.map((u) => u.host)).toEqual(['p1', 'p2', 'p3', 'p4']);
    expect(config?.unreachable[0]?.detail).toMatch(/bastion bastion .*presented a host key other than the pinned one/);
    expect(await fx.ledgerFile('known_hosts')).toBe(before);
  });

  it('a bastion that is down is one error naming it, within the wait bound', async () => {
    await bastion.stop();
    const started = Date.now();
    const result = await provisionRun('4s');
    const elapsed = Date.now() - started;
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/bastion bastion \(.*\) gave no SSH banner within the wait/);
    expect(result.stderr).toMatch(/the 4 host\(s\) behind it \(p1, p2, p3, p4\) could not be probed/);
    expect(result.stderr).not.toMatch(/p1 \(.*\): /);
    // The wait is 4 s; the rest is the CLI, the stand-in's apply and the ledger.
    expect(elapsed).toBeLessThan(40_000);
  });

  it("the run's bastion (--bastion) on its IPv6 address: a host the inventory gives no bastion (on IPv6), and one under a host CA, are reached through it, the bastion itself directly over IPv6", async () => {
    if (!bastion.isRunning()) await bastion.start();
    const p4 = privates[3]!;
    // Its certificate is captured through the jump (ssh-keyscan -c over a relay of the bastion's master).
    const ca = await generateKeyPair(fx.dir, 'host-ca');
    const certified = await createLoopbackHost({
      rootAuthorizedKey: fx.bootstrap.publicKey,
      address: net.privateAddress(5),
      netns: net.private,
      hostCaKeyPath: ca.privateKeyPath,
    });
    privates.push(certified);
    await certified.start();
    await fx.setInventory({
      all: {
        hosts: {
          // Spelled non-canonically here too: the direct path over IPv6, and the run's bastion below.
          edge6: { ansible_host: longhand(net.bastionOuter6), ansible_user: 'root' },
          p4: { ansible_host: p4.address, ansible_user: 'root' },
          cert: { ansible_host: certified.address, ansible_user: 'root', exocomp_host_ca: ca.publicKey },
        },
      },
    });
    await p4.exec('rm -f /tmp/exocomp-configured-*');
    // The run's bastion keeps the user given with it in every connection (issue 40): its fleet user (onboarded as
    // `bastion` above) takes the fleet key configure passes it with; its root takes only the bootstrap key.
    const result = await provisionRun('60s', '--bastion', `exocomp@[${longhand(net.bastionOuter6)}]:22`);
    expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(0);
    expect(result.stderr).toContain(`bastion ${net.bastionOuter6}: key pinned`);
    // Rekeyed by the test above: its IPv6 name is new, so its key now is pinned there (trust on first use).
    const knownHosts = await fx.ledgerFile('known_hosts');
    expect(knownHosts).toContain(`${net.bastionOuter6} ${await bastion.hostPublicKey()}`);
    const [caType, caKey] = ca.publicKey.split(' ');
    expect(knownHosts).toContain(`@cert-authority ${certified.knownHostsName} ${caType} ${caKey}`);
    expect(knownHosts).not.toContain(`${certified.knownHostsName} ${await certified.hostPublicKey()}`);
    expect(await certified.readFile('/tmp/exocomp-configured-cert')).toContain('user=');
    expect(await bastion.readFile('/tmp/exocomp-configured-edge6')).toContain('user=');
    expect(await p4.readFile('/tmp/exocomp-configured-p4')).toContain('user=');
  });
});
