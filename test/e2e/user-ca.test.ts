/**
 * Short-lived fleet credentials (issue 42, "Accepted when"): a run with a user
 * CA and `--fleet-auth cert` onboards and configures hosts with a certificate
 * it signs per run; the hosts keep no fleet key, refuse the plain key, a
 * certificate for another principal and one that expired; the ledger lists the
 * run's serial and key id, and neither logs nor ledger history hold private
 * key material. Real sshd, ssh-keygen, ansible-core; two hosts, one chain run.
 */
import { copyFile, mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProcess } from '../../src/adapters/process.js';
import {
  createChainFixture,
  sshHostVars,
  workflowIdFrom,
  type ChainFixture,
  type CliResult,
} from '../support/chain-fixture.js';
import { createLoopbackHost, generateKeyPair, type LoopbackHost } from '../support/loopback-host.js';

const sitePlaybook = new URL('../fixtures/playbooks/site.yml', import.meta.url).pathname;

describe('user CA: a certificate per run (issue 42)', () => {
  let fx: ChainFixture;
  let hosts: LoopbackHost[];
  let caKey: string;
  let run: CliResult;
  let again: CliResult;

  beforeAll(async () => {
    fx = await createChainFixture();
    caKey = join(fx.dir, 'keys', 'user_ca_ed25519');
    const init = await fx.cli(['keys', 'init', '--user-ca', '--dir', join(fx.dir, 'keys')]);
    expect(init.code, init.stderr).toBe(0);
    hosts = await Promise.all([1, 2].map(() => createLoopbackHost({ rootAuthorizedKey: fx.bootstrap.publicKey })));
    await Promise.all(hosts.map((h) => h.start()));
    await fx.setInventory({ all: { hosts: { web1: sshHostVars(hosts[0]!), web2: sshHostVars(hosts[1]!) } } });
    await copyFile(sitePlaybook, join(fx.dir, 'site.yml'));
    await mkdir(join(fx.dir, 'certs'));
    run = await certificateRun();
  });

  /** A whole provision run whose hosts accept only certificates of the user CA. */
  function certificateRun(): Promise<CliResult> {
    return fx.cli([
      'provision',
      'run',
      fx.workspace,
      'site.yml',
      ...fx.keys,
      '--user-ca-key',
      caKey,
      '--fleet-auth',
      'cert',
      '--ssh-wait',
      '60s',
    ]);
  }

  afterAll(async () => {
    await Promise.all((hosts ?? []).map((h) => h.destroy()));
    await fx?.cleanup();
  });

  /** One login as `user` with `key` (and its -cert.pub beside, when there is one); the exit code and stderr. */
  async function login(host: LoopbackHost, key: string, user = 'exocomp') {
    return runProcess('ssh', [
      ...['-i', key, '-o', 'IdentitiesOnly=yes', '-o', 'BatchMode=yes', '-o', 'StrictHostKeyChecking=no'],
      ...['-o', 'UserKnownHostsFile=/dev/null', '-o', 'LogLevel=ERROR', '-p', String(host.port)],
      `${user}@${host.address}`,
      'true',
    ]);
  }

  /** A fresh key signed by the CA for `principal`, valid between the given offsets from now (seconds). */
  async function certified(name: string, principal: string, from: number, to: number, serial = '1') {
    const pair = await generateKeyPair(join(fx.dir, 'certs'), name);
    const now = Math.floor(Date.now() / 1000);
    const window = `0x${(now + from).toString(16)}:0x${(now + to).toString(16)}`;
    const signed = await runProcess('ssh-keygen', [
      ...['-q', '-s', caKey, '-I', `test-${name}`, '-n', principal, '-V', window, '-z', serial],
      `${pair.privateKeyPath}.pub`,
    ]);
    expect(signed.code, signed.stderr).toBe(0);
    return pair.privateKeyPath;
  }

  it('onboards and configures both hosts with the run certificate; no fleet key in authorized_keys', async () => {
    expect(run.code, run.stderr).toBe(0);
    const fleetBlob = fx.fleet.publicKey.split(' ')[1]!;
    for (const [index, host] of hosts.entries()) {
      const marker = (await host.readFile(`/tmp/exocomp-configured-web${index + 1}`)) ?? '';
      expect(marker).toContain('user=exocomp');
      const authorized = (await host.readFile('/home/exocomp/.ssh/authorized_keys')) ?? '';
      expect(authorized).not.toContain(fleetBlob);
      expect(await host.readFile('/etc/ssh/sshd_config.d/exocomp-exocomp.conf')).toContain('AuthorizedKeysFile none');
    }
  });

  it('refuses the plain fleet key, another principal and an expired certificate; admits a valid one', async () => {
    const [host] = hosts as [LoopbackHost];
    const plain = await login(host, fx.fleet.privateKeyPath);
    expect(plain.code).toBe(255);
    expect(plain.stderr).toMatch(/Permission denied/);

    const valid = await certified('valid', 'exocomp', -60, 600);
    expect((await login(host, valid)).code).toBe(0);

    const otherPrincipal = await certified('other', 'root', -60, 600);
    expect((await login(host, otherPrincipal)).stderr).toMatch(/Permission denied/);
    expect((await login(host, otherPrincipal, 'root')).stderr).toMatch(/Permission denied/);

    // Ends 3 s from now (instead of a 1-minute certificate waited out): admitted now, refused once it has ended.
    const shortLived = await certified('short', 'exocomp', -60, 3);
    expect((await login(host, shortLived)).code).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 4_500));
    const expired = await login(host, shortLived);
    expect(expired.code).toBe(255);
    expect(expired.stderr).toMatch(/Permission denied/);
  });

  it("records the run's certificate serial and key id in the ledger", async () => {
    const workflowId = workflowIdFrom(run);
    const record = JSON.parse((await fx.ledgerFile('user-ca.json')) ?? '{}') as {
      issued: { serial: string; keyId: string; principal: string; validBefore: number; validAfter: number }[];
    };
    expect(record.issued).toHaveLength(1);
    const [issued] = record.issued;
    expect(issued!.keyId).toBe(workflowId);
    expect(issued!.principal).toBe('exocomp');
    expect(issued!.serial).toMatch(/^[1-9]\d*$/);
    // Default lifetime: one hour (plus the minute backdated for clock skew).
    expect(issued!.validBefore - issued!.validAfter).toBeGreaterThanOrEqual(3600);
    expect(issued!.validBefore - issued!.validAfter).toBeLessThanOrEqual(3661 + 60);
    // sshd logged the certificate it admitted: the same serial and key id.
    expect(await hosts[0]!.sshdLog()).toContain(`ID ${workflowId} (serial ${issued!.serial})`);
  });

  it('keys revoke, then a run: the revoked serial and key id are refused, the run works with a fresh certificate', async () => {
    const [host] = hosts as [LoopbackHost];
    const bySerial = await certified('by-serial', 'exocomp', -60, 600, '4242');
    const byKeyId = await certified('by-key-id', 'exocomp', -60, 600, '77');
    const kept = await certified('kept', 'exocomp', -60, 600, '78');
    for (const key of [bySerial, byKeyId, kept]) expect((await login(host, key)).code).toBe(0);
    for (const target of ['4242', 'test-by-key-id']) {
      const revoked = await fx.cli(['keys', 'revoke', target, ...fx.ledgerArgs]);
      expect(revoked.code, revoked.stderr).toBe(0);
      expect(revoked.stdout).toMatch(/^revoked /);
    }
    again = await certificateRun();
    expect(again.code, again.stderr).toBe(0);
    expect((await login(host, bySerial)).stderr).toMatch(/Permission denied/);
    expect((await login(host, byKeyId)).stderr).toMatch(/Permission denied/);
    expect((await login(host, kept)).code).toBe(0);
    const record = JSON.parse((await fx.ledgerFile('user-ca.json')) ?? '{}') as { issued: { keyId: string }[] };
    expect(record.issued.map((c) => c.keyId)).toEqual([workflowIdFrom(run), workflowIdFrom(again)]);
  });

  it('leaves no CA or ephemeral private key in the logs or the ledger history', async () => {
    const caBody = (await readFile(caKey, 'utf8')).split('\n').slice(1, -2).join('');
    const history = await runProcess('git', ['-C', fx.ledger, 'log', '--all', '-p', '--format=%B']);
    expect(history.code).toBe(0);
    for (const text of [run.stdout, run.stderr, again.stdout, again.stderr, history.stdout]) {
      expect(text).not.toMatch(/PRIVATE KEY/);
      for (const line of caBody.match(/.{20,}/g) ?? []) expect(text).not.toContain(line.slice(0, 20));
    }
  });
});
