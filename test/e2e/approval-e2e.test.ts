/**
 * Issue 3, acceptance 8: local approval. Issue 27, item 3: every apply records
 * its provenance, and `provenance verify` names what no longer matches — checked
 * on the apply the --wait run makes once approved (one approved chain serves both).
 * The real OpenTofu/Terraform on PATH plans and applies, so `provenance verify`
 * checks against the real state (issue 36).
 */
import { cp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createChainFixture,
  sshHostVars,
  workflowIdFrom,
  type ChainFixture,
  type CliResult,
} from '../support/chain-fixture.js';
import { commitToLedger } from '../support/ledger-git.js';
import { describeWithRealTofu } from '../support/real-tofu.js';
import { createLoopbackHost, type LoopbackHost } from '../support/loopback-host.js';
import { waitFor } from '../support/time.js';

const sitePlaybook = new URL('../fixtures/playbooks/site.yml', import.meta.url).pathname;

describeWithRealTofu('--require-approval', () => {
  let fx: ChainFixture;
  let host: LoopbackHost;

  beforeAll(async () => {
    fx = await createChainFixture('edge', { tofu: 'real' });
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

  describe('--wait, then approved', () => {
    let id: string;
    let appliedWhileWaiting: number;
    let exitWhileWaiting: number | null;
    let approved: CliResult;
    let result: CliResult;

    // One approved chain: what --wait did on the way there, and the provenance its apply recorded.
    beforeAll(async () => {
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
      id = await waitFor('the workflow id', () => /"id":"(edge-[0-9a-f]+)"/.exec(stdout)?.[1], { gaveUp: exited });
      await waitFor(
        'the awaiting-approval record',
        async () => JSON.parse((await fx.ledgerFile(`workflows/${id}.json`)) ?? '{}').state === 'awaiting-approval',
        { gaveUp: exited },
      );
      appliedWhileWaiting = await fx.applyCount();
      exitWhileWaiting = run.child.exitCode;
      approved = await fx.cli(['approval', 'decide', id, '--approve', '--by', 'reviewer', ...fx.ledgerArgs]);
      result = await run.done;
    });

    it('--wait blocks until the decision, then runs the chain', async () => {
      // Still waiting: nothing applied while the decision was pending.
      expect(appliedWhileWaiting).toBe(0);
      expect(exitWhileWaiting).toBeNull();
      expect(approved.code, approved.stderr).toBe(0);
      expect(result.code, result.stderr).toBe(0);
      expect(await fx.applyCount()).toBe(1);
      const record = JSON.parse((await fx.ledgerFile(`workflows/${id}.json`))!);
      expect(record.state).toBe('provisioned');
      expect(record.approval).toMatchObject({ state: 'approved', by: 'reviewer' });
      expect(workflowIdFrom(result)).toBe(id);
    });

    it('records the provenance of the approved apply: verifies, then names the state or the plan digest once either differs', async () => {
      expect(result.code, result.stderr).toBe(0);
      const workflow = JSON.parse((await fx.ledgerFile(`workflows/${id}.json`))!);
      const stateFile = join(fx.workspace, 'terraform.tfstate');
      const state = JSON.parse(await readFile(stateFile, 'utf8'));
      const shown = await fx.cli(['provenance', 'show', id, ...fx.ledgerArgs, '--json']);
      expect(shown.code, shown.stderr).toBe(0);
      const record = JSON.parse(shown.stdout);
      expect(record.statement).toMatchObject({
        _type: 'https://in-toto.io/Statement/v1',
        predicateType: 'https://slsa.dev/provenance/v1',
        subject: [
          { name: 'plan', digest: { sha256: workflow.approval.planFingerprint } },
          { name: 'state', annotations: { lineage: state.lineage, serial: state.serial } },
        ],
      });
      expect(
        record.statement.predicate.buildDefinition.resolvedDependencies.map((d: { name: string }) => d.name),
      ).toEqual(['workspace', 'playbook', 'approval']);
      // Written with apply's success, not in a commit of its own (each record's branch carries that one commit's message).
      expect([...new Set((await fx.ledgerMessages()).filter((m) => m.includes('provenance')))]).toEqual([
        expect.stringMatching(/apply succeeded.*provenance of the apply/s),
      ]);

      const verify = () => fx.cli(['provenance', 'verify', id, ...fx.common]);
      const good = await verify();
      expect(good.code, good.stderr).toBe(0);
      expect(good.stdout).toContain(`provenance of ${id} verifies`);

      // The state moved on (another apply, or a hand edit): the state is named.
      const stateText = await readFile(stateFile, 'utf8');
      await writeFile(stateFile, JSON.stringify({ ...state, serial: state.serial + 1 }));
      const moved = await verify();
      expect(moved.code).toBe(1);
      expect(moved.stderr).toMatch(/does not verify: subject state differs/);
      expect(moved.stdout).toMatch(new RegExp(`DIFFERS {2}subject state: .*serial ${state.serial + 1}`));
      await writeFile(stateFile, stateText);

      // The recorded plan digest was changed behind exocomp's back: the plan is named.
      const edited = structuredClone(record);
      edited.statement.subject[0].digest.sha256 = 'f'.repeat(64);
      await commitToLedger(fx.ledger, { [`provenance/${id}.json`]: `${JSON.stringify(edited, null, 2)}\n` }, 'tamper');
      const forged = await fx.cli(['provenance', 'verify', id, ...fx.common, '--json']);
      expect(forged.code).toBe(1);
      expect(JSON.parse(forged.stdout).checks.filter((c: { ok: boolean }) => !c.ok)).toEqual([
        expect.objectContaining({ part: 'subject plan' }),
      ]);

      // A record that cannot be read is named as such, never taken for "no provenance".
      await commitToLedger(fx.ledger, { [`provenance/${id}.json`]: '{ "schemaVersion": 1, ' }, 'break');
      const broken = await fx.cli(['provenance', 'show', id, ...fx.ledgerArgs]);
      expect(broken.code).toBe(1);
      expect(broken.stderr).toContain(`provenance/${id}.json`);
      expect(broken.stderr).not.toMatch(/has no provenance/);
    });
  });
});
