/** `provision resume --ssh-wait 10m` records the override in the ledger and uses it (issue 13, item 3). */
import { copyFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChainFixture, sshHostVars, workflowIdFrom, type ChainFixture } from '../support/chain-fixture.js';
import { createLoopbackHost, type LoopbackHost } from '../support/loopback-host.js';

const sitePlaybook = new URL('../fixtures/playbooks/site.yml', import.meta.url).pathname;

describe('provision resume with overrides', () => {
  let fx: ChainFixture;
  let host: LoopbackHost;
  let id: string;

  beforeAll(async () => {
    fx = await createChainFixture();
    host = await createLoopbackHost({ rootAuthorizedKey: fx.bootstrap.publicKey });
    await fx.setInventory({ all: { hosts: { web1: sshHostVars(host) } } });
    await copyFile(sitePlaybook, join(fx.dir, 'site.yml'));
  });

  afterAll(async () => {
    await host?.destroy();
    await fx?.cleanup();
  });

  it('records --ssh-wait as a change and waits that long', async () => {
    // The host is not up: a 2 s wait fails.
    const first = await fx.cli(['provision', 'run', fx.workspace, 'site.yml', ...fx.keys, '--ssh-wait', '2s']);
    expect(first.code).toBe(1);
    id = workflowIdFrom(first);
    await host.start();
    const resumed = await fx.cli(['provision', 'resume', id, ...fx.keys, '--ssh-wait', '10m']);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toContain('recorded: ssh-wait 2.0s → 10m 00s');
    expect(resumed.stderr).toMatch(/waiting up to 10m 00s for 1 host/);
    expect(await fx.ledgerMessages()).toContain(`${id}: resume with ssh-wait 2.0s → 10m 00s`);
    const record = JSON.parse((await fx.ledgerFile(`workflows/${id}.json`))!);
    expect(record.options.sshWaitMs).toBe(600_000);
    expect(record.overrides).toEqual([{ at: expect.any(String), setting: 'ssh-wait', from: '2.0s', to: '10m 00s' }]);
  });

  it('refuses a --playbook that does not exist, changing nothing', async () => {
    const before = await fx.ledgerMessages();
    const result = await fx.cli(['provision', 'resume', id, ...fx.keys, '--playbook', 'gone.yml']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--playbook "gone.yml" does not exist');
    expect(await fx.ledgerMessages()).toEqual(before);
  });
});
