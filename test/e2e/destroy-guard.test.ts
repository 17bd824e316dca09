/**
 * Issue 27 item 2 through the CLI: a plan that replaces one host of tf:fleet
 * and destroys the other is refused after the plan and before any approval can
 * bind it, listing the addresses (exit 1; no plan view, no fingerprint, no
 * apply); a protected address is refused even with --allow-destroy; with
 * --allow-destroy the plan is recorded for approval. The tofu stand-in plans;
 * no host is contacted.
 */
import { join } from 'node:path';
import { cp, mkdir, rm, writeFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LEDGER_PATHS } from '../../src/ledger/records.js';
import { createChainFixture, workflowIdFrom, type ChainFixture } from '../support/chain-fixture.js';
import { replaceWeb1DestroyWeb2, twoHosts } from '../support/destroy-plan.js';
import { invocationsOf, readStandinLog } from '../support/tofu-standin.js';

const sitePlaybook = new URL('../fixtures/playbooks/site.yml', import.meta.url).pathname;
let fx: ChainFixture;

beforeAll(async () => {
  fx = await createChainFixture();
  await cp(sitePlaybook, join(fx.dir, 'site.yml'));
  await twoHosts(fx.workspace);
  const applied = await fx.cli(['workspace', 'apply', fx.workspace, ...fx.common, '--workspace-name', 'fleet']);
  expect(applied.code, applied.stderr).toBe(0);
  await replaceWeb1DestroyWeb2(fx.workspace);
});
afterAll(() => fx?.cleanup());

const plan = (...extra: string[]) =>
  fx.cli([
    'provision',
    'run',
    fx.workspace,
    'site.yml',
    '--workspace-name',
    'fleet',
    '--require-approval',
    ...fx.common,
    ...extra,
  ]);
const applies = async () => invocationsOf(await readStandinLog(fx.standinLog), 'apply').length;

/** What the ledger holds of the workflow's approval: its state, the bound fingerprint, a recorded plan view. */
async function approvalOf(id: string) {
  const workflow = JSON.parse((await fx.ledgerFile(LEDGER_PATHS.workflow(id))) ?? '{}') as {
    state?: string;
    approval?: { planFingerprint?: string };
  };
  return {
    state: workflow.state,
    planFingerprint: workflow.approval?.planFingerprint,
    planView: await fx.ledgerFile(LEDGER_PATHS.planView(id)),
  };
}

describe('the destroy guard through the CLI', () => {
  it('without --allow-destroy: refused after the plan, listing the replaced and destroyed hosts’ addresses; nothing binds, nothing applies', async () => {
    const appliesBefore = await applies();
    const result = await plan();
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toContain('refused by the destroy guard (2 address(es))');
    expect(result.stderr).toContain('terraform_data.web1: host web1 replaced');
    expect(result.stderr).toContain('terraform_data.web2: host web2 destroyed');
    expect(result.stderr).toContain('allow-destroy');
    // The plan was made (the guard judges it), and nothing was applied.
    expect(invocationsOf(await readStandinLog(fx.standinLog), 'show').length).toBeGreaterThan(0);
    expect(await applies()).toBe(appliesBefore);
    const recorded = await approvalOf(workflowIdFrom(result));
    expect(recorded.state).not.toBe('awaiting-approval');
    expect(recorded.planFingerprint).toBeUndefined();
    expect(recorded.planView).toBeUndefined();
  });

  it('a protected address (the workspace policy) is refused even with --allow-destroy', async () => {
    await mkdir(join(fx.workspace, '.exocomp'), { recursive: true });
    await writeFile(join(fx.workspace, '.exocomp', 'policy.yml'), 'protect:\n  - terraform_data.web*\n');
    try {
      const result = await plan('--allow-destroy');
      expect(result.code, result.stderr).toBe(1);
      expect(result.stderr).toContain('terraform_data.web1: replace of an address protected by "terraform_data.web*"');
      expect(result.stderr).toContain('terraform_data.web2: destroy of an address protected by "terraform_data.web*"');
      expect((await approvalOf(workflowIdFrom(result))).planFingerprint).toBeUndefined();
    } finally {
      await rm(join(fx.workspace, '.exocomp'), { recursive: true, force: true });
    }
  });

  it('with --allow-destroy: the plan is recorded for approval with its view', async () => {
    const appliesBefore = await applies();
    const result = await plan('--allow-destroy');
    expect(result.stderr).not.toContain('destroy guard');
    const recorded = await approvalOf(workflowIdFrom(result));
    expect(recorded.state, result.stderr).toBe('awaiting-approval');
    expect(recorded.planFingerprint).toMatch(/^[0-9a-f]{16,}$/);
    expect(recorded.planView).toContain('terraform_data.web2');
    expect(await applies()).toBe(appliesBefore);
  });
});
