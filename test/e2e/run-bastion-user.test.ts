/**
 * The run's bastion keeps the user given with it (issue 40; docs/networks.md):
 * a shared jump host outside the workspace whose only account is `ops`, on a
 * network the test builds from namespaces (test/support/netns.ts). The CLI runs
 * in `runner`, which reaches only the jump host; the private host answers only
 * the jump host. Real sshd, ssh, ansible-core and git; the OpenTofu stand-in.
 */
import { cp } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  convergeArgs,
  createChainFixture,
  provisionArgs,
  type ChainFixture,
  type CliResult,
} from '../support/chain-fixture.js';
import { createLoopbackHost, shellQuote, type LoopbackHost } from '../support/loopback-host.js';
import { createPrivateNetwork, type PrivateNetwork } from '../support/netns.js';
import { scaled } from '../support/time.js';

const sitePlaybook = new URL('../fixtures/playbooks/site.yml', import.meta.url).pathname;

/** Every user the jump host's sshd saw a login attempt for, accepted or not. */
function usersIn(sshdLog: string): Set<string> {
  const attempts = sshdLog.matchAll(
    /(?:Accepted \S+ for|Failed \S+ for(?: invalid user)?|Invalid user|authenticating user|invalid user) (\S+)/g,
  );
  return new Set([...attempts].map((m) => m[1] as string));
}

describe('provision run through a jump host given with --bastion ops@…, outside the workspace', () => {
  let net: PrivateNetwork;
  let fx: ChainFixture;
  let jump: LoopbackHost;
  let host: LoopbackHost;
  let bastion: string;
  let run: CliResult;

  const cli = (args: string[]) => fx.cli(args, { netns: net.runner });
  const provisionRun = () => cli(provisionArgs(fx, '--ssh-wait=60s', '--bastion', bastion));
  /** Only `ops` may log in to the jump host, with these keys; root has none. */
  const letOpsIn = async (publicKey: string) => {
    const result = await jump.exec(
      `id ops >/dev/null 2>&1 || { useradd -m -s /bin/sh ops && usermod -p '*' ops; }
       install -d -m 700 -o ops -g ops ~ops/.ssh
       printf '%s\\n' ${shellQuote(publicKey)} > ~ops/.ssh/authorized_keys
       chown ops:ops ~ops/.ssh/authorized_keys && chmod 600 ~ops/.ssh/authorized_keys
       rm -f /root/.ssh/authorized_keys`,
    );
    expect(result.code, result.stderr).toBe(0);
  };

  beforeAll(async () => {
    net = await createPrivateNetwork(1);
    try {
      fx = await createChainFixture('edge');
      jump = await createLoopbackHost({
        rootAuthorizedKey: fx.bootstrap.publicKey,
        address: net.bastionOuter,
        netns: net.bastion,
      });
      host = await createLoopbackHost({
        rootAuthorizedKey: fx.bootstrap.publicKey,
        address: net.privateAddress(2),
        netns: net.private,
      });
      await Promise.all([jump.start(), host.start()]);
      await letOpsIn(fx.fleet.publicKey);
      bastion = `ops@${jump.address}`;
      await fx.setInventory({ all: { hosts: { p1: { ansible_host: host.address, ansible_user: 'root' } } } });
      await cp(sitePlaybook, join(fx.dir, 'site.yml'));
    } catch (error) {
      await Promise.all([jump?.destroy(), host?.destroy()]);
      await net.destroy();
      throw error;
    }
    run = await provisionRun();
  }, scaled(300_000));

  afterAll(async () => {
    try {
      for (const h of [jump, host]) await h?.destroy();
      await fx?.cleanup();
    } finally {
      await net?.destroy();
    }
  });

  it('provisions the private host behind it, and a converge with the same --bastion works; the jump host saw only ops', async () => {
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
    expect(await host.readFile('/tmp/exocomp-configured-p1')).toContain('user=exocomp');
    await host.exec('rm -f /tmp/exocomp-configured-p1');
    const converge = await cli(convergeArgs(fx, '--bastion', bastion));
    expect(converge.code, `${converge.stdout}\n${converge.stderr}`).toBe(0);
    expect(await host.readFile('/tmp/exocomp-configured-p1')).toContain('user=exocomp');
    const log = await jump.sshdLog();
    expect(log).toMatch(/Accepted publickey for ops /);
    expect([...usersIn(log)], log).toEqual(['ops']);
  });

  it('a jump host that refuses the fleet key stops the run before the onboarding play, naming the hop, its user and the fix', async () => {
    // ops now takes the bootstrap key only: the wait and the scan pass, configure could not.
    await letOpsIn(fx.bootstrap.publicKey);
    const hostLogBefore = (await host.sshdLog()).length;
    const refused = await provisionRun();
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(`configure could not pass bastion ${bastion}:22 as ops with the fleet key`);
    expect(refused.stderr).toMatch(/let ops log in to the bastion with the fleet key/);
    // The run's closing status line names the step and the kind of failure.
    expect(refused.stdout).toMatch(/failed at onboard \(bastion\) .*configure could not pass bastion/);
    // The private host saw the wait's probe and the key capture through the jump host, and no login at all.
    expect((await host.sshdLog()).slice(hostLogBefore)).not.toMatch(/Accepted publickey/);
    expect([...usersIn(await jump.sshdLog())]).toEqual(['ops']);
  });
});
