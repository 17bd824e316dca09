/**
 * Keys explained end to end (issue 13, items 2 and 3): `exocomp keys init`
 * writes keys a run converges with; an unusable key is refused before the
 * ledger is touched, saying how to fix it; a play whose key the hosts refuse
 * says which key it offered and how to pass one.
 */
import { chmod, copyFile, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChainFixture, sshHostVars, type ChainFixture } from '../support/chain-fixture.js';
import { createLoopbackHost, type LoopbackHost } from '../support/loopback-host.js';
import { KEY_VARIABLES } from '../../src/domain/key-variables.js';

const sitePlaybook = new URL('../fixtures/playbooks/site.yml', import.meta.url).pathname;

describe('exocomp keys init', () => {
  let fx: ChainFixture;
  let host: LoopbackHost;
  let keys: string;
  let init: Awaited<ReturnType<ChainFixture['cli']>>;

  beforeAll(async () => {
    fx = await createChainFixture();
    keys = join(fx.dir, 'keys');
    init = await fx.cli(['keys', 'init', '--dir', keys]);
    host = await createLoopbackHost({
      rootAuthorizedKey: (await readFile(join(keys, 'bootstrap_ed25519.pub'), 'utf8')).trim(),
    });
    await host.start();
    await fx.setInventory({ all: { hosts: { web1: sshHostVars(host) } } });
    await copyFile(sitePlaybook, join(fx.dir, 'site.yml'));
  });

  afterAll(async () => {
    await host?.destroy();
    await fx?.cleanup();
  });

  const keyArgs = () => [
    '--fleet-key',
    join(keys, 'fleet_ed25519'),
    '--bootstrap-key',
    join(keys, 'bootstrap_ed25519'),
  ];

  it('writes the three keys 0600 with public halves beside, and names the secrets to set', async () => {
    expect(init.code, init.stderr).toBe(0);
    for (const file of ['fleet_ed25519', 'bootstrap_ed25519', 'seal.key'])
      expect(((await stat(join(keys, file))).mode & 0o777).toString(8)).toBe('600');
    for (const file of ['fleet_ed25519.pub', 'bootstrap_ed25519.pub'])
      expect((await stat(join(keys, file))).isFile()).toBe(true);
    for (const secret of Object.values(KEY_VARIABLES)) expect(init.stdout).toContain(`gh secret set ${secret} < `);
    const again = await fx.cli(['keys', 'init', '--dir', keys]);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/already exist.*never overwritten silently/);
  });

  it('uses a key others can read through a private copy, warning with the chmod that fixes it (issue 23)', async () => {
    const fleet = join(keys, 'fleet_ed25519');
    await chmod(fleet, 0o644);
    // The missing playbook stops the run after the keys were read, before the ledger is touched.
    const result = await fx.cli(['provision', 'run', fx.workspace, 'gone.yml', ...fx.common, ...keyArgs()]);
    await chmod(fleet, 0o600);
    expect(result.stderr).toContain(`--fleet-key ${fleet} can be read by others (mode 0644)`);
    expect(result.stderr).toContain(`chmod 600 ${fleet}`);
    expect(result.stderr).toContain('the playbook "gone.yml" does not exist');
    expect(result.code).toBe(2);
    expect(await fx.ledgerMessages()).toEqual([]);
  });

  it('converges a host with the keys it wrote', async () => {
    const seal = (await readFile(join(keys, 'seal.key'), 'utf8')).trim();
    const result = await fx.cli([
      'provision',
      'run',
      fx.workspace,
      'site.yml',
      ...fx.common,
      ...keyArgs(),
      '--seal-key',
      seal,
      '--ssh-wait',
      '60s',
    ]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/provisioned/);
  });

  it('says which key a play offered when the hosts refuse it, and how to pass the fleet key', async () => {
    const result = await fx.cli(['playbook', 'run', 'site.yml', '--inventory', 'tf:edge', ...fx.ledgerArgs], {
      env: { HOME: join(fx.dir, 'empty-home') },
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /web1 refused the key: no key was given, so ssh offered only its defaults .* as user exocomp\. Pass the fleet key that onboarding installed: --fleet-key <private key file>/,
    );
  });
});
