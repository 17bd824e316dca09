/** Issue 3, acceptance 8: local approval. */
import { cp } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChainFixture, sshHostVars, workflowIdFrom, type ChainFixture } from '../support/chain-fixture.js';
import { createLoopbackHost, type LoopbackHost } from '../support/loopback-host.js';
import { waitFor } from '../support/time.js';

const sitePlaybook = new URL('../fixtures/playbooks/site.yml', import.meta.url).pathname;

describe('--require-approval', () => {
  let fx: ChainFixture;
  let host: LoopbackHost;

  beforeAll(async () => {
    fx = await createChainFixture('edge');
    await cp(sitePlaybook, join(fx.dir, 'site.yml'));
    host = await createLoopbackHost({ rootAuthorizedKey: fx.bootstrap.publicKey });
    await host.start();
    await fx.setInventory({ all: { hosts: { web: sshHostVars(host) } } });
  });
  afterAll(async () => {
    await host?.destroy();
    await fx?.cleanup();
  });

  it('plans, records awaiting-approval and applies nothing until approved; --reject ends the workflow', async () => {
    const result = await fx.cli(['provision', 'run', fx.workspace, 'site.yml', ...fx.keys, '--require-approval']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/awaiting-approval/);
    expect(result.stdout).toMatch(/exocomp approval decide edge-[0-9a-f]+ --approve/);
    expect(await fx.applyCount()).toBe(0);
    const id = workflowIdFrom(result);
    const list = await fx.cli(['approval', 'list', ...fx.ledgerArgs, '--json']);
    expect(JSON.parse(list.stdout).pending.map((p: { id: string }) => p.id)).toEqual([id]);
    const rejected = await fx.cli(['approval', 'decide', id, '--reject', '--comment', 'not today', ...fx.ledgerArgs]);
    expect(rejected.code, rejected.stderr).toBe(0);
    const record = JSON.parse((await fx.ledgerFile(`workflows/${id}.json`))!);
    expect(record.state).toBe('rejected');
    expect(record.approval).toMatchObject({ state: 'rejected', comment: 'not today', via: 'cli' });
    const resumed = await fx.cli(['provision', 'resume', id, ...fx.keys]);
    expect(resumed.code).toBe(1);
    expect(await fx.applyCount()).toBe(0);
    const again = await fx.cli(['approval', 'decide', id, '--approve', ...fx.ledgerArgs]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/already rejected/);
  });

  it('--wait blocks until the decision, then runs the chain', async () => {
    const run = fx.spawnCli([
      'provision',
      'run',
      fx.workspace,
      'site.yml',
      ...fx.keys,
      '--require-approval',
      '--wait',
      '--json',
    ]);
    let stdout = '';
    run.child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
    const exited = () => (run.child.exitCode === null ? undefined : `the CLI exited ${run.child.exitCode}`);
    const id = await waitFor('the workflow id', () => /"id":"(edge-[0-9a-f]+)"/.exec(stdout)?.[1], { gaveUp: exited });
    // Still waiting: nothing applied while the decision is pending.
    await waitFor(
      'the awaiting-approval record',
      async () => JSON.parse((await fx.ledgerFile(`workflows/${id}.json`)) ?? '{}').state === 'awaiting-approval',
      { gaveUp: exited },
    );
    expect(await fx.applyCount()).toBe(0);
    expect(run.child.exitCode).toBeNull();
    const approved = await fx.cli(['approval', 'decide', id, '--approve', '--by', 'reviewer', ...fx.ledgerArgs]);
    expect(approved.code, approved.stderr).toBe(0);
    const result = await run.done;
    expect(result.code, result.stderr).toBe(0);
    expect(await fx.applyCount()).toBe(1);
    const record = JSON.parse((await fx.ledgerFile(`workflows/${id}.json`))!);
    expect(record.state).toBe('provisioned');
    expect(record.approval).toMatchObject({ state: 'approved', by: 'reviewer' });
    expect(workflowIdFrom(result)).toBe(id);
  });
});
