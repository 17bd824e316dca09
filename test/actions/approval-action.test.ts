/**
 * The approval gates as the runner runs them (issue 4): environment mode checks
 * the run's deployment reviews through the API; dispatch mode records
 * `awaiting-approval`, ends green, and the approve action decides and
 * dispatches; a plan that changed since approval is refused (re-plan path).
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { events } from '../support/action-runner.js';
import { gateRulesets } from '../support/github-double.js';
import {
  BOT,
  chainInputs,
  createActionFixture,
  describeRun,
  planInputs,
  REPOSITORY,
  type ActionFixture,
} from './helpers.js';

const inventoryNaming = (address: string) => ({
  all: { hosts: { web: { ansible_host: address, ansible_port: 2222, ansible_user: 'root' } } },
});

async function setInventory(fx: ActionFixture, address: string): Promise<void> {
  await writeFile(
    join(fx.workspace, 'exocomp.auto.tfvars.json'),
    JSON.stringify({ ansible_inventory: inventoryNaming(address) }),
  );
}

function workflowRecord(text: string | undefined): {
  state: string;
  approval: { state: string; by?: string; via?: string; planFingerprint?: string };
  continuation?: { at: string; runId?: number; runUrl?: string; dispatches: number };
} {
  if (text === undefined) throw new Error('no workflow record');
  return JSON.parse(text);
}

describe('environment mode', () => {
  let fx: ActionFixture;
  beforeAll(async () => {
    fx = await createActionFixture('edge');
    await setInventory(fx, '127.0.0.1');
    fx.double.state.environments['staging'] = {};
    fx.double.state.environments['production'] = { requiredReviewers: ['bob'] };
    fx.double.state.environments['guarded'] = { requiredReviewers: ['alice', 'bob'], preventSelfReview: true };
  });
  afterAll(async () => fx?.cleanup());

  const apply = (runId: number, environment: string, attempt: { runAttempt?: number; triggeringActor?: string } = {}) =>
    fx.run('apply', {
      runId,
      ...attempt,
      job: 'apply',
      with: {
        'workflow-id': `edge-${runId}`,
        environment,
        'tofu-binary': planInputs()['tofu-binary']!,
        'allow-local-state': 'true',
      },
    });

  it('refuses to apply when the environment has no required reviewers, saying how to configure it', async () => {
    const plan = await fx.run('plan', { runId: 6001, with: planInputs() });
    expect(plan.code, describeRun(plan)).toBe(0);
    fx.double.state.approvals[6001] = [{ state: 'approved', user: 'bob', environments: ['staging'] }];
    const result = await apply(6001, 'staging');
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/environment "staging" has no required reviewers/);
    expect(result.stdout).toMatch(/Required reviewers/);
    expect(await fx.applyCount()).toBe(0);
    expect(workflowRecord(await fx.ledgerFile('workflows/edge-6001.json')).approval.state).toBe('pending');
  });

  it('refuses to apply when the run has no approval for the environment', async () => {
    const plan = await fx.run('plan', { runId: 6002, with: planInputs() });
    expect(plan.code, describeRun(plan)).toBe(0);
    fx.double.state.approvals[6002] = [{ state: 'approved', user: 'bob', environments: ['staging'] }];
    const result = await apply(6002, 'production');
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/run 6002 has no approval for environment "production"/);
    expect(await fx.applyCount()).toBe(0);
  });

  it('refuses without the environment input, which GitHub does not expose', async () => {
    const result = await fx.run('apply', { runId: 6002, job: 'apply', with: { 'workflow-id': 'edge-6002' } });
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/needs the `environment` input/);
    expect(await fx.applyCount()).toBe(0);
  });

  it('applies once the run holds an approval for the environment, and records who approved', async () => {
    const plan = await fx.run('plan', { runId: 6003, with: planInputs() });
    expect(plan.code, describeRun(plan)).toBe(0);
    fx.double.state.approvals[6003] = [
      { state: 'approved', user: 'bob', environments: ['production'], comment: 'ship it' },
    ];
    const result = await apply(6003, 'production');
    expect(result.code, describeRun(result)).toBe(0);
    expect(await fx.applyCount()).toBe(1);
    expect(result.outputs.state).toBe('provisioning');
    expect(JSON.parse(result.outputs.steps!)[0]).toMatchObject({ name: 'apply', state: 'succeeded', attempts: 1 });
    const record = workflowRecord(await fx.ledgerFile('workflows/edge-6003.json'));
    expect(record.approval).toMatchObject({
      state: 'approved',
      by: 'bob',
      via: 'environment production (run 6003, attempt 1)',
    });
    expect(fx.double.requestsTo('GET /repos/{owner}/{repo}/actions/runs/{run_id}/approvals').length).toBeGreaterThan(0);
    expect(fx.double.violations).toEqual([]);
  });

  it('refuses a gated job that would plan and apply itself: the reviewer approved before any plan existed', async () => {
    fx.double.state.approvals[6004] = [{ state: 'approved', user: 'bob', environments: ['production'] }];
    const appliesBefore = await fx.applyCount();
    const result = await fx.run('provision', {
      runId: 6004,
      with: await chainInputs(fx, { 'require-approval': 'true', environment: 'production' }),
    });
    expect(result.code).toBe(1);
    expect(result.log).toMatch(/has no plan recorded by an earlier job/);
    expect(result.log).toMatch(/needs: plan/);
    expect(await fx.applyCount()).toBe(appliesBefore);
    expect(workflowRecord(await fx.ledgerFile('workflows/edge-6004.json')).approval.state).toBe('pending');
  });

  it('applies a re-run approved after an earlier attempt was rejected: the newest decision is this attempt’s', async () => {
    // Attempt 1: bob rejects, so GitHub fails the apply job without starting it. "Re-run all jobs": attempt 2 plans again.
    const first = await fx.run('plan', { runId: 6006, with: planInputs() });
    expect(first.code, describeRun(first)).toBe(0);
    fx.double.state.approvals[6006] = [{ state: 'rejected', user: 'bob', environments: ['production'] }];
    const second = await fx.run('plan', { runId: 6006, runAttempt: 2, with: planInputs() });
    expect(second.code, describeRun(second)).toBe(0);
    fx.double.state.approvals[6006].push({ state: 'approved', user: 'bob', environments: ['production'] });
    const result = await apply(6006, 'production', { runAttempt: 2 });
    expect(result.code, describeRun(result)).toBe(0);
    expect(JSON.parse(result.outputs.steps!)[0]).toMatchObject({ name: 'apply', state: 'succeeded' });
    const record = workflowRecord(await fx.ledgerFile('workflows/edge-6006.json'));
    expect(record.approval).toMatchObject({
      state: 'approved',
      by: 'bob',
      via: 'environment production (run 6006, attempt 2)',
    });
  });

  it('refuses the requester approving a re-run a third party started, though GitHub let them (prevent self-review)', async () => {
    const plan = await fx.run('plan', { runId: 6007, actor: 'alice', with: planInputs() });
    expect(plan.code, describeRun(plan)).toBe(0);
    // Attempt 1 was rejected; carol re-ran the workflow, so GitHub's "Prevent self-review" now blocks carol, not alice.
    fx.double.state.approvals[6007] = [
      { state: 'rejected', user: 'bob', environments: ['guarded'] },
      { state: 'approved', user: 'alice', environments: ['guarded'] },
    ];
    const appliesBefore = await fx.applyCount();
    const result = await apply(6007, 'guarded', { runAttempt: 2, triggeringActor: 'carol' });
    expect(result.code).toBe(1);
    expect(result.log).toMatch(/alice approved a deployment they requested: environment guarded prevents self-review/);
    expect(result.log).toMatch(/kept out only carol, who started this attempt/);
    expect(await fx.applyCount()).toBe(appliesBefore);
    expect(workflowRecord(await fx.ledgerFile('workflows/edge-6007.json')).approval.state).toBe('pending');
  });

  it('refuses whoever started the attempt approving it where the environment allows self-review', async () => {
    const plan = await fx.run('plan', { runId: 6008, actor: 'alice', with: planInputs() });
    expect(plan.code, describeRun(plan)).toBe(0);
    fx.double.state.approvals[6008] = [{ state: 'approved', user: 'carol', environments: ['production'] }];
    const result = await apply(6008, 'production', { runAttempt: 2, triggeringActor: 'carol' });
    expect(result.code).toBe(1);
    expect(result.log).toMatch(/carol approved an attempt of workflow edge-6008 they started/);
    expect(workflowRecord(await fx.ledgerFile('workflows/edge-6008.json')).approval.state).toBe('pending');
  });
});

describe('dispatch mode', () => {
  let fx: ActionFixture;
  const id = 'edge-7001';
  beforeAll(async () => {
    fx = await createActionFixture('edge');
    await setInventory(fx, '127.0.0.1');
    fx.double.state.collaborators = { alice: 'write', bob: 'maintain', carol: 'read' };
    fx.double.state.issues[12] = { pullRequest: true };
    fx.double.state.workflows['provision.yml'] = { id: 77, workflowDispatch: true, inputs: ['workflow-id'] };
  });
  afterAll(async () => fx?.cleanup());

  const approve = (actor: string, runId: number, decision = 'approve', ref = 'refs/heads/main') =>
    fx.run('approve', {
      runId,
      actor,
      job: 'approve',
      ref,
      workflowFile: 'exocomp-approve.yml',
      event: events.workflowDispatch(REPOSITORY, actor, { 'workflow-id': id, decision }, ref),
      with: { 'workflow-id': id, decision },
    });

  it('records awaiting-approval, says so in the state output, comments the approve command, and ends green', async () => {
    const result = await fx.run('provision', {
      runId: 7001,
      event: events.pullRequest(REPOSITORY, 12, 'alice'),
      with: { ...planInputs(), 'require-approval': 'true', 'approval-mode': 'dispatch' },
    });
    expect(result.code, describeRun(result)).toBe(0);
    expect(result.outputs.state).toBe('awaiting-approval');
    expect(result.outputs['workflow-id']).toBe(id);
    expect(await fx.applyCount()).toBe(0);
    const record = workflowRecord(await fx.ledgerFile(`workflows/${id}.json`));
    expect(record.state).toBe('awaiting-approval');
    expect(record.approval.planFingerprint).toMatch(/^[0-9a-f]{64}$/);
    const [comment] = fx.double.commentsOn(12);
    expect(comment?.author).toBe(BOT);
    expect(comment?.body).toContain(`<!-- exocomp:workflow=${id} -->`);
    expect(comment?.body).toContain(
      `gh workflow run exocomp-approve.yml --repo ${REPOSITORY} -f workflow-id=${id} -f decision=approve`,
    );
    expect(comment?.body).toContain('+ 1 to add, ~ 0 to change, − 0 to destroy');
    expect(result.summary).toContain('awaiting-approval');
  });

  it('refuses an approval by a read-only actor: nothing recorded, nothing dispatched', async () => {
    const result = await approve('carol', 7101);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/carol has read access to acme\/infra; deciding an approval needs write access/);
    expect(workflowRecord(await fx.ledgerFile(`workflows/${id}.json`)).approval.state).toBe('pending');
    expect(fx.double.state.dispatches).toEqual([]);
  });

  it('refuses the requester deciding their own workflow', async () => {
    const result = await approve('alice', 7102);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/alice requested workflow edge-7001 and may not decide it/);
    expect(fx.double.state.dispatches).toEqual([]);
  });

  it('warns that the ledger records are unprotected until a ruleset covers them (read with the job token)', async () => {
    const gateWarnings = (result: { annotations: Array<{ level: string; message: string }> }) =>
      result.annotations.filter((a) => a.level === 'warning' && a.message.includes('approval gate is weaker'));
    const unprotected = await approve('alice', 7106);
    const warned = gateWarnings(unprotected).map((a) => a.message);
    expect(warned).toEqual([
      expect.stringMatching(
        /ledger records \(exocomp-ledger-records\/workflows\/.*\): no ruleset covers the record branches/,
      ),
      expect.stringMatching(/who may bypass/),
      expect.stringMatching(/approve workflow \(default branch main\)/),
    ]);
    expect(warned[0]).toContain('Settings → Rules → Rulesets');

    fx.double.state.rulesets = gateRulesets();
    try {
      const protectedRun = await approve('alice', 7107);
      expect(gateWarnings(protectedRun)).toEqual([]);
      // No GITHUB_TOKEN sees a ruleset's bypass list: `exocomp doctor` with an admin's token checks it, the job stays quiet.
      expect(protectedRun.annotations.filter((a) => a.level !== 'error')).toEqual([]);

      // A refused read is a notice naming the grant; the job goes on to its own decision.
      fx.double.failNext(
        'GET /repos/{owner}/{repo}/rules/branches/{branch}',
        { status: 403, message: 'Resource not accessible by integration' },
        2,
      );
      const refused = await approve('alice', 7108);
      expect(gateWarnings(refused)).toEqual([]);
      expect(refused.annotations).toContainEqual(
        expect.objectContaining({ level: 'notice', message: expect.stringMatching(/ledger records.*metadata: read/) }),
      );
      expect(refused.stdout).toMatch(/alice requested workflow edge-7001 and may not decide it/);
      expect(fx.double.violations).toEqual([]);
    } finally {
      fx.double.state.rulesets = {};
    }
  });

  it('refuses an approval dispatched from another branch or a tag: ledger unchanged, nothing dispatched', async () => {
    const before = await fx.ledgerHistory();
    for (const [runId, ref] of [
      [7104, 'refs/heads/bob-edits'],
      [7105, 'refs/tags/v-approve'],
    ] as const) {
      const result = await approve('bob', runId, 'approve', ref);
      expect(result.code).toBe(1);
      expect(result.stdout).toContain(`this approval runs from ${ref}, not from the default branch main`);
      expect(result.stdout).toMatch(/nothing was recorded/);
    }
    expect(await fx.ledgerHistory()).toBe(before);
    expect(workflowRecord(await fx.ledgerFile(`workflows/${id}.json`)).approval.state).toBe('pending');
    expect(fx.double.state.dispatches).toEqual([]);
  });

  it('records an approval by a writer and dispatches the continuation with the workflow id', async () => {
    const result = await approve('bob', 7103);
    expect(result.code, describeRun(result)).toBe(0);
    const record = workflowRecord(await fx.ledgerFile(`workflows/${id}.json`));
    expect(record.approval).toMatchObject({ state: 'approved', by: 'bob', via: 'workflow_dispatch run 7103' });
    expect(fx.double.state.dispatches).toEqual([
      { workflow: 'provision.yml', ref: 'main', inputs: { 'workflow-id': id }, login: BOT, runId: expect.any(Number) },
    ]);
    // The run the dispatch started is recorded, for the resume sweeper to judge.
    const runId = fx.double.state.dispatches[0]!.runId;
    const recorded = workflowRecord(await fx.ledgerFile(`workflows/${id}.json`));
    expect(recorded.continuation).toEqual({
      at: expect.any(String),
      dispatches: 1,
      runId,
      runUrl: `${fx.double.url}/acme/infra/actions/runs/${runId}`,
    });
    expect(result.outputs.dispatched).toBe('provision.yml');
    // The comment of the pull request follows the decision.
    expect(fx.double.commentsOn(12)).toHaveLength(1);
    expect(fx.double.commentsOn(12)[0]?.body).toContain('approved by bob');
  });

  it('refuses the continuation when the plan changed since approval (re-plan path): nothing applied', async () => {
    await setInventory(fx, '127.0.0.2');
    const result = await fx.run('apply', {
      runId: 7201,
      job: 'apply',
      event: events.workflowDispatch(REPOSITORY, 'bob', { 'workflow-id': id }),
      with: {
        'workflow-id': id,
        'approval-mode': 'dispatch',
        'tofu-binary': planInputs()['tofu-binary']!,
        'allow-local-state': 'true',
      },
    });
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('plan changed since approval');
    expect(await fx.applyCount()).toBe(0);
    expect(result.outputs.state).toBe('provision-failed');
    expect(fx.double.violations).toEqual([]);
  });
});
