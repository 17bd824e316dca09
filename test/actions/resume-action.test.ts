/**
 * The resume sweeper (issue 4): a workflow whose running step is held by a run
 * that has completed gets its continuation dispatched, and the continuation
 * takes the step over; a workflow held by a live run is never touched.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { awaitApproval, createWorkflow, decideApproval, startStep, type Workflow } from '../../src/domain/workflow.js';
import { GitLedgerStore } from '../../src/ledger/git-store.js';
import { LEDGER_PATHS, serializeRecord } from '../../src/ledger/records.js';
import { events } from '../support/action-runner.js';
import { createActionFixture, describeRun, planInputs, REPOSITORY, type ActionFixture } from './helpers.js';

function interrupted(id: string, runId: number, now: Date): Workflow {
  const created = createWorkflow({
    id,
    workspace: { path: 'infra/edge', name: 'edge' },
    playbook: 'site.yml',
    requester: 'alice',
    trigger: { kind: 'github', runId, runAttempt: 1, repository: REPOSITORY, workflowRef: `${REPOSITORY}/.github/workflows/provision.yml@refs/heads/main` },
    options: { sshWaitMs: 60_000, onboardUser: 'exocomp', check: false },
    requireApproval: false,
    now,
  });
  const lease = {
    holder: `github:${REPOSITORY}:${runId}:1:provision`,
    origin: { kind: 'ci' as const, platform: 'github' as const, repository: REPOSITORY, runId, runAttempt: 1 },
    acquiredAt: now.toISOString(),
    heartbeatAt: now.toISOString(),
    ttlMs: 60_000,
  };
  return startStep(created, 'apply', lease, now);
}

/** Approved by dispatch at `approvedAt`, its continuation never started (every step pending). */
function approvedUnstarted(id: string, approvedAt: Date): Workflow {
  const created = createWorkflow({
    id,
    workspace: { path: 'infra/edge', name: 'edge' },
    playbook: 'site.yml',
    requester: 'alice',
    trigger: { kind: 'github', runId: 1, runAttempt: 1, repository: REPOSITORY, workflowRef: `${REPOSITORY}/.github/workflows/provision.yml@refs/heads/main` },
    options: { sshWaitMs: 60_000, onboardUser: 'exocomp', check: false },
    requireApproval: true,
    now: approvedAt,
  });
  const planned = awaitApproval(created, approvedAt, { fingerprint: 'f', summary: '+1 ~0 -0' });
  return decideApproval(planned, { approve: true, by: 'bob', via: 'workflow_dispatch run 2', now: approvedAt });
}

describe('resume sweeper', () => {
  let fx: ActionFixture;
  let cache: string;
  beforeAll(async () => {
    fx = await createActionFixture('edge');
    await writeFile(join(fx.workspace, 'exocomp.auto.tfvars.json'), JSON.stringify({ ansible_inventory: { all: { hosts: {} } } }));
    cache = await mkdtemp(join(tmpdir(), 'exocomp-sweep-cache-'));
    const store = new GitLedgerStore({ remote: fx.ledgerRepo, cacheDir: cache });
    // Heartbeats are fresh: only the runs' status can tell the sweeper which holder is gone.
    const now = new Date();
    await store.update(() => ({
      writes: new Map([
        [LEDGER_PATHS.workflow('edge-8100'), serializeRecord(interrupted('edge-8100', 8100, now))],
        [LEDGER_PATHS.workflow('edge-8200'), serializeRecord(interrupted('edge-8200', 8200, now))],
        // Approved two hours ago, continuation never ran (its dispatch failed or its pending run was cancelled).
        [LEDGER_PATHS.workflow('edge-8400'), serializeRecord(approvedUnstarted('edge-8400', new Date(now.getTime() - 2 * 3600_000)))],
        // Approved a minute ago: its continuation may still be queued.
        [LEDGER_PATHS.workflow('edge-8500'), serializeRecord(approvedUnstarted('edge-8500', new Date(now.getTime() - 60_000)))],
      ]),
      message: 'two workflows mid-apply',
      result: undefined,
    }));
    fx.double.state.runs[8100] = { status: 'completed', conclusion: 'cancelled', runAttempt: 1, workflowPath: '.github/workflows/provision.yml' };
    fx.double.state.runs[8200] = { status: 'in_progress', conclusion: null, runAttempt: 1, workflowPath: '.github/workflows/provision.yml' };
    fx.double.state.workflows['provision.yml'] = { id: 77, workflowDispatch: true, inputs: ['workflow-id'] };
  });
  afterAll(async () => {
    await rm(cache, { recursive: true, force: true });
    await fx?.cleanup();
  });

  it('dispatches the continuation of the workflow whose run completed and of the one approved long ago but never started; leaves the live and the recent ones alone', async () => {
    const result = await fx.run('resume', { runId: 8900, workflowFile: 'resume.yml', event: events.schedule(REPOSITORY) });
    expect(result.code, describeRun(result)).toBe(0);
    expect(JSON.parse(result.outputs.resumed!)).toEqual(['edge-8400', 'edge-8100']);
    expect(fx.double.state.dispatches).toEqual([
      { workflow: 'provision.yml', ref: 'main', inputs: { 'workflow-id': 'edge-8400' }, login: 'github-actions[bot]' },
      { workflow: 'provision.yml', ref: 'main', inputs: { 'workflow-id': 'edge-8100' }, login: 'github-actions[bot]' },
    ]);
    expect(result.stdout).not.toContain('edge-8500');
    expect(result.stdout).toContain('edge-8200: apply live');
    expect(result.summary).toContain('| `edge-8100` | apply | dispatched |');
    expect(fx.double.violations).toEqual([]);
  });

  it('the continuation takes the step over from the completed run (attempt 2)', async () => {
    const result = await fx.run('apply', {
      runId: 8300,
      event: events.workflowDispatch(REPOSITORY, 'github-actions[bot]', { 'workflow-id': 'edge-8100' }),
      with: { 'workflow-id': 'edge-8100', 'tofu-binary': planInputs()['tofu-binary']!, 'allow-local-state': 'true' },
    });
    expect(result.code, describeRun(result)).toBe(0);
    expect(JSON.parse(result.outputs.steps!)[0]).toMatchObject({ name: 'apply', state: 'succeeded', attempts: 2 });
    expect(await fx.applyCount()).toBe(1);
  });

  it('a continuation of the live one refuses: its lease is held', async () => {
    const result = await fx.run('apply', {
      runId: 8301,
      event: events.workflowDispatch(REPOSITORY, 'github-actions[bot]', { 'workflow-id': 'edge-8200' }),
      with: { 'workflow-id': 'edge-8200', 'tofu-binary': planInputs()['tofu-binary']!, 'allow-local-state': 'true' },
    });
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/step apply of edge-8200 is running under github:acme\/infra:8200:1:provision/);
    expect(await fx.applyCount()).toBe(1);
  });
});
