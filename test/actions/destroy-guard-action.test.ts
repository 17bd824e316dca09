/**
 * Issue 27 item 2 through the plan action as the runner runs it: a plan that
 * replaces one host of tf:fleet and destroys the other fails the job after the
 * plan, listing the addresses, with no approval bound and nothing applied; the
 * `protect` input refuses a protected address even with `allow-destroy`; with
 * `allow-destroy` the plan is recorded for approval. The tofu stand-in plans,
 * the GitHub double serves the ledger; no host is contacted.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProcess } from '../../src/adapters/process.js';
import { LEDGER_PATHS } from '../../src/ledger/records.js';
import { cliPath } from '../support/chain-fixture.js';
import { replaceWeb1DestroyWeb2, twoHosts } from '../support/destroy-plan.js';
import { standinPath } from '../support/tofu-standin.js';
import { createActionFixture, describeRun, planInputs, type ActionFixture } from './helpers.js';

describe('the destroy guard in the plan action', () => {
  let fx: ActionFixture;

  beforeAll(async () => {
    fx = await createActionFixture();
    await twoHosts(fx.workspace);
    // The state under review was applied before (here by the CLI on the same ledger): tf:fleet names web1 and web2.
    const env: NodeJS.ProcessEnv = { ...process.env, XDG_CACHE_HOME: join(fx.dir, 'cache') };
    delete env.GITHUB_ACTIONS;
    const applied = await runProcess(
      process.execPath,
      [
        cliPath,
        'workspace',
        'apply',
        fx.workspace,
        '--workspace-name',
        'fleet',
        '--ledger',
        fx.ledgerRepo,
        '--tofu-binary',
        standinPath,
      ],
      { cwd: fx.checkout, env },
    );
    expect(applied.code, applied.stderr).toBe(0);
    await replaceWeb1DestroyWeb2(fx.workspace);
  });
  afterAll(() => fx?.cleanup());

  const plan = (runId: number, extra: Record<string, string> = {}) =>
    fx.run('plan', {
      runId,
      with: planInputs({ 'workspace-name': 'fleet', 'workflow-id': `fleet-${runId}`, ...extra }),
    });
  const workflow = async (runId: number) =>
    JSON.parse((await fx.ledgerFile(LEDGER_PATHS.workflow(`fleet-${runId}`))) ?? '{}') as {
      state?: string;
      approval?: { planFingerprint?: string };
    };

  it('without allow-destroy: the job fails after the plan, listing the addresses; no approval binds, nothing applies', async () => {
    const applies = await fx.applyCount();
    const result = await plan(7001);
    expect(result.code, describeRun(result)).not.toBe(0);
    for (const text of [result.log, result.annotations.map((a) => a.message).join('\n')]) {
      expect(text).toContain('refused by the destroy guard');
      expect(text).toContain('terraform_data.web1: host web1 replaced');
      expect(text).toContain('terraform_data.web2: host web2 destroyed');
    }
    expect(result.outputs.state).not.toBe('awaiting-approval');
    expect((await workflow(7001)).approval?.planFingerprint).toBeUndefined();
    expect(await fx.ledgerFile(LEDGER_PATHS.planView('fleet-7001'))).toBeUndefined();
    expect(await fx.applyCount()).toBe(applies);
  });

  it('a protect pattern refuses the address it covers even with allow-destroy', async () => {
    const result = await plan(7002, { 'allow-destroy': 'true', protect: 'terraform_data.web1' });
    expect(result.code, describeRun(result)).not.toBe(0);
    expect(result.log).toContain('terraform_data.web1: replace of an address protected by "terraform_data.web1"');
    // allow-destroy lets web2 go: the refusal names the protected address alone.
    expect(result.log).toContain('refused by the destroy guard (1 address(es))');
    expect((await workflow(7002)).approval?.planFingerprint).toBeUndefined();
  });

  it('with allow-destroy: the plan is recorded for approval', async () => {
    const applies = await fx.applyCount();
    const result = await plan(7003, { 'allow-destroy': 'true' });
    expect(result.code, describeRun(result)).toBe(0);
    expect(result.outputs.state).toBe('awaiting-approval');
    expect((await workflow(7003)).approval?.planFingerprint).toMatch(/^[0-9a-f]{16,}$/);
    expect(await fx.ledgerFile(LEDGER_PATHS.planView('fleet-7003'))).toContain('terraform_data.web2');
    expect(await fx.applyCount()).toBe(applies);
  });
});
