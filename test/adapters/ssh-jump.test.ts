/**
 * JumpSession against real sshd loopback hosts: a bastion and a host behind it
 * (reachable directly here too; test/e2e/bastion-netns.test.ts proves the
 * private network). Probes, key captures without authentication, strict
 * checking of the bastion's key, and IPv6 (::1) behind the bastion.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BastionError, JumpSession } from '../../src/adapters/ssh-jump.js';
import type { Hop } from '../../src/domain/bastion.js';
import { createLoopbackHost, generateKeyPair, type KeyPair, type LoopbackHost } from '../support/loopback-host.js';

describe('JumpSession', () => {
  let dir: string;
  let key: KeyPair;
  let bastion: LoopbackHost;
  let target: LoopbackHost;
  let target6: LoopbackHost;
  let route: Hop[];
  const knownHosts = async (host: LoopbackHost) => `${host.knownHostsName} ${await host.hostPublicKey()}\n`;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'exocomp-jump-test-'));
    key = await generateKeyPair(dir);
    bastion = await createLoopbackHost({ rootAuthorizedKey: key.publicKey, port: 2200 });
    target = await createLoopbackHost({ rootAuthorizedKey: key.publicKey, port: 2201 });
    target6 = await createLoopbackHost({
      rootAuthorizedKey: key.publicKey,
      address: '::1',
      port: 20_000 + Math.floor(Math.random() * 20_000),
    });
    await Promise.all([bastion.start(), target.start(), target6.start()]);
    route = [{ name: 'bastion', address: bastion.address, port: bastion.port, user: 'root' }];
  });

  afterAll(async () => {
    await Promise.all([bastion?.destroy(), target?.destroy(), target6?.destroy()]);
    await rm(dir, { recursive: true, force: true });
  });

  const open = async () =>
    JumpSession.open([route], {
      knownHosts: await knownHosts(bastion),
      credentials: { identityFiles: [key.privateKeyPath] },
    });

  it('probes a banner through the bastion, and says when nothing listens behind it', async () => {
    const session = await open();
    try {
      const probe = await session.probe(route, target.address, target.port, 5_000);
      expect(probe).toMatchObject({ ok: true, banner: expect.stringMatching(/^SSH-2\.0-OpenSSH/) });
      const closed = await session.probe(route, target.address, 9, 5_000);
      expect(closed).toMatchObject({ ok: false, reason: expect.stringMatching(/bastion bastion could not connect/) });
      const v6 = await session.probe(route, '::1', target6.port, 5_000);
      expect(v6.ok).toBe(true);
    } finally {
      await session.close();
    }
  });

  it('captures the keys of a host behind the bastion without authenticating', async () => {
    const session = await open();
    try {
      const captured = await session.captureHostKeys(route, target.address, target.port, 10_000);
      expect(captured).toBe(`${target.knownHostsName} ${await target.hostPublicKey()}\n`);
      const v6 = await session.captureHostKeys(route, '::1', target6.port, 10_000);
      expect(v6).toBe(`[::1]:${target6.port} ${await target6.hostPublicKey()}\n`);
    } finally {
      await session.close();
    }
    const log = await target.sshdLog();
    expect(log).not.toMatch(/Accepted|Failed publickey/);
  });

  // Issue 40: the play's user replaced the run's bastion's own (only root may log in to this bastion).
  it("logs in to the run's bastion as its own user, not as the play's; an inventory bastion as the play's", async () => {
    const credentials = { identityFiles: [key.privateKeyPath], user: 'exocomp' };
    const runBastion = [{ ...route[0]!, keepsUser: true as const }];
    const session = await JumpSession.open([runBastion], { knownHosts: await knownHosts(bastion), credentials });
    try {
      expect((await session.probe(runBastion, target.address, target.port, 5_000)).ok).toBe(true);
    } finally {
      await session.close();
    }
    const refused = await JumpSession.open([route], { knownHosts: await knownHosts(bastion), credentials }).catch(
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(BastionError);
    expect((refused as BastionError).kind).toBe('bastion');
    expect((refused as Error).message).toMatch(/exocomp@.*Permission denied|Permission denied.*exocomp/);
  });

  it('refuses a bastion whose key is not the pinned one, before anything goes through it', async () => {
    const error = await JumpSession.open([route], {
      knownHosts: await knownHosts(target),
      credentials: { identityFiles: [key.privateKeyPath] },
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BastionError);
    expect((error as BastionError).kind).toBe('host-key');
    expect((error as BastionError).message).toMatch(
      /bastion bastion .* presented a host key other than the pinned one/,
    );
  });

  it('names the bastion when it is down, and when the connection to it is lost', async () => {
    const session = await open();
    try {
      await bastion.stop();
      const lost = await session.probe(route, target.address, target.port, 5_000).catch((e: unknown) => e);
      expect(lost).toBeInstanceOf(BastionError);
      expect((lost as Error).message).toMatch(/the connection to bastion bastion .* was lost/);
    } finally {
      await session.close();
    }
    const down = await open().catch((e: unknown) => e);
    expect(down).toBeInstanceOf(BastionError);
    expect((down as Error).message).toMatch(/bastion bastion \(127\.[0-9.]+:2200\) could not be reached/);
    await bastion.start();
  });
});
