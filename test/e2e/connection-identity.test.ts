/**
 * Connection identity (issue 29): two hosts whose address, port and user read
 * the same when concatenated (what OpenSSH's %C hashes) are each onboarded and
 * configured on themselves, each checked against its own pin. Real sshd hosts,
 * ansible-core and git; the OpenTofu stand-in.
 */
import { cp } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProcess } from '../../src/adapters/process.js';
import { createChainFixture, sshHostVars, type ChainFixture, type CliResult } from '../support/chain-fixture.js';
import { createLoopbackHost, type LoopbackHost } from '../support/loopback-host.js';
import { canListen, collidingLoopbackPair } from '../support/addresses.js';

const sitePlaybook = new URL('../fixtures/playbooks/site.yml', import.meta.url).pathname;

function output(result: CliResult): string {
  return `exit ${result.code}\n${result.stdout}\n${result.stderr}`;
}

/** The ControlPath ssh itself would use for `%C`. */
async function percentC(host: LoopbackHost, user: string): Promise<string> {
  const args = ['-G', '-F', '/dev/null', '-o', 'ControlPath=/cp/%C', '-l', user, '-p', String(host.port), host.address];
  const config = (await runProcess('ssh', args)).stdout;
  return /^controlpath (.+)$/m.exec(config)?.[1] ?? '';
}

async function freePair(): Promise<ReturnType<typeof collidingLoopbackPair>> {
  for (let attempt = 0; attempt < 20; attempt += 1) {
    const pair = collidingLoopbackPair();
    if ((await canListen(pair[0].address, pair[0].port)) && (await canListen(pair[1].address, pair[1].port)))
      return pair;
  }
  throw new Error('found no free colliding pair of loopback endpoints');
}

describe('two hosts whose %C collides', () => {
  let fx: ChainFixture;
  let one: LoopbackHost;
  let two: LoopbackHost;
  let run: CliResult;

  beforeAll(async () => {
    fx = await createChainFixture('edge');
    await cp(sitePlaybook, join(fx.dir, 'site.yml'));
    const [first, second] = await freePair();
    one = await createLoopbackHost({ rootAuthorizedKey: fx.bootstrap.publicKey, ...first });
    two = await createLoopbackHost({ rootAuthorizedKey: fx.bootstrap.publicKey, ...second });
    await Promise.all([one.start(), two.start()]);
    await fx.setInventory({ all: { hosts: { one: sshHostVars(one), two: sshHostVars(two) } } });
    run = await fx.cli(['provision', 'run', fx.workspace, 'site.yml', ...fx.keys, '--workspace-name', 'edge']);
  });

  afterAll(async () => {
    await one?.destroy();
    await two?.destroy();
    await fx?.cleanup();
  });

  it('collide under OpenSSH %C, for the bootstrap user and for the fleet user', async () => {
    for (const user of ['root', 'exocomp']) {
      const [a, b] = [await percentC(one, user), await percentC(two, user)];
      expect(a).toMatch(/^\/cp\/[0-9a-f]{40}$/);
      expect(a).toBe(b);
    }
  });

  it('are each onboarded and configured on itself', async () => {
    expect(run.code, output(run)).toBe(0);
    for (const [host, name, other] of [
      [one, 'one', 'two'],
      [two, 'two', 'one'],
    ] as const) {
      expect(await host.readFile(`/tmp/exocomp-configured-${name}`)).toContain('user=exocomp');
      expect(await host.readFile(`/tmp/exocomp-configured-${other}`)).toBeUndefined();
      expect(await host.readFile('/home/exocomp/.ssh/authorized_keys')).toContain(fx.fleet.publicKey.split(' ')[1]);
      // Each host's own sshd saw the bootstrap login, and the fleet user's.
      const log = await host.sshdLog();
      expect(log).toMatch(/Accepted publickey for root/);
      // One fleet-user login: the proof's, which configure then rode (no second key exchange).
      expect(log.match(/Accepted publickey for exocomp/g)).toHaveLength(1);
    }
  });

  it('refuses the one that was rekeyed, and only that one', async () => {
    await two.exec('rm -f /tmp/exocomp-configured-*');
    await one.exec('rm -f /tmp/exocomp-configured-*');
    await two.rekey();
    const play = await fx.cli([
      'playbook',
      'run',
      'site.yml',
      '--inventory',
      'tf:edge',
      '--fleet-key',
      fx.fleet.privateKeyPath,
      ...fx.ledgerArgs,
    ]);
    expect(play.code, output(play)).not.toBe(0);
    expect(play.stderr + play.stdout).toMatch(/host key verification failed|REMOTE HOST IDENTIFICATION HAS CHANGED/i);
    expect(await one.readFile('/tmp/exocomp-configured-one')).toContain('user=exocomp');
    expect(await two.readFile('/tmp/exocomp-configured-two')).toBeUndefined();
    expect(await one.readFile('/tmp/exocomp-configured-two')).toBeUndefined();
  });
});
