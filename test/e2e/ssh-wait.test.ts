/**
 * Issue 3, acceptance 2: a host that never answers fails step 2 and blocks the
 * rest. That the wait really waits for a late host is shown on the chain of
 * chain-e2e.test.ts (its db host boots after the apply).
 */
import { cp } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChainFixture, sshHostVars, workflowIdFrom, type ChainFixture } from '../support/chain-fixture.js';
import { createLoopbackHost, type LoopbackHost } from '../support/loopback-host.js';
import { randomLoopbackAddress } from '../support/addresses.js';

const sitePlaybook = new URL('../fixtures/playbooks/site.yml', import.meta.url).pathname;

describe('ssh-wait', () => {
  let fx: ChainFixture;
  const hosts: LoopbackHost[] = [];

  beforeAll(async () => {
    fx = await createChainFixture('edge');
    await cp(sitePlaybook, join(fx.dir, 'site.yml'));
  });
  afterAll(async () => {
    await Promise.all(hosts.map((h) => h.destroy()));
    await fx?.cleanup();
  });

  it('fails step 2 naming a host that never answers; steps 3–4 are blocked and no play runs', async () => {
    const up = await createLoopbackHost({ rootAuthorizedKey: fx.bootstrap.publicKey });
    hosts.push(up);
    await up.start();
    const nowhere = randomLoopbackAddress();
    await fx.setInventory({
      all: {
        hosts: { up: sshHostVars(up), ghost: { ansible_host: nowhere, ansible_port: 2200, ansible_user: 'root' } },
      },
    });
    const shim = await fx.ansibleShim();
    const result = await fx.cli(
      ['provision', 'run', fx.workspace, 'site.yml', ...fx.keys, '--ssh-wait', '2s', '--json'],
      { env: shim.env },
    );
    expect(result.code).toBe(1);
    const id = workflowIdFrom(result);
    const record = JSON.parse((await fx.ledgerFile(`workflows/${id}.json`))!);
    expect(record.state).toBe('provision-failed');
    expect(record.steps.map((s: { state: string }) => s.state)).toEqual(['succeeded', 'failed', 'blocked', 'blocked']);
    expect(record.failure.step).toBe('ssh-wait');
    expect(record.failure.summary).toContain(`ghost (${nowhere}:2200`);
    expect(record.failure.summary).not.toContain('up (');
    expect(await shim.invocations()).toEqual([]);
    // --json: one JSON object per line.
    for (const line of result.stdout.trim().split('\n')) expect(() => JSON.parse(line)).not.toThrow();
  });
});
