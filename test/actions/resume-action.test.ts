/**
 * The resume sweeper (issue 4): a workflow whose running step is held by a run
 * that has completed gets its continuation dispatched, and the continuation
 * takes the step over; a workflow held by a live run is never touched.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  awaitApproval,
  createWorkflow,
  decideApproval,
  startStep,
  type Continuation,
  type Workflow,
} from '../../src/domain/workflow.js';
import { GitLedgerStore } from '../../src/ledger/git-store.js';
import { LEDGER_PATHS, serializeRecord } from '../../src/ledger/records.js';
import { events, type ActionResult } from '../support/action-runner.js';
import { createActionFixture, describeRun, planInputs, REPOSITORY, type ActionFixture } from './helpers.js';

function interrupted(id: string, runId: number, now: Date): Workflow {
  const created = createWorkflow({
    id,
    workspace: { path: 'infra/edge', name: 'edge' },
    playbook: 'site.yml',
    requester: 'alice',
    trigger: {
      kind: 'github',
      runId,
      runAttempt: 1,
      repository: REPOSITORY,
      workflowRef: `${REPOSITORY}/.github/workflows/provision.yml@refs/heads/main`,
    },
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

/** Approved by dispatch at `approvedAt`, its continuation never started (every step pending); `continuation` as the approve run recorded it. */
function approvedUnstarted(id: string, approvedAt: Date, continuation?: Continuation): Workflow {
  const created = createWorkflow({
    id,
    workspace: { path: 'infra/edge', name: 'edge' },
    playbook: 'site.yml',
    requester: 'alice',
    trigger: {
      kind: 'github',
      runId: 1,
      runAttempt: 1,
      repository: REPOSITORY,
      workflowRef: `${REPOSITORY}/.github/workflows/provision.yml@refs/heads/main`,
    },
    options: { sshWaitMs: 60_000, onboardUser: 'exocomp', check: false },
    requireApproval: true,
    now: approvedAt,
  });
  const planned = awaitApproval(created, approvedAt, { fingerprint: 'f', summary: '+1 ~0 -0' });
  const approved = decideApproval(planned, {
    approve: true,
    by: 'bob',
    via: 'workflow_dispatch run 2',
    now: approvedAt,
  });
  return continuation ? { ...approved, continuation } : approved;
}

describe('resume sweeper', () => {
  let fx: ActionFixture;
  let cache: string;
  beforeAll(async () => {
    fx = await createActionFixture('edge');
    await writeFile(
      join(fx.workspace, 'exocomp.auto.tfvars.json'),
      JSON.stringify({ ansible_inventory: { all: { hosts: {} } } }),
    );
    cache = await mkdtemp(join(tmpdir(), 'exocomp-sweep-cache-'));
    const store = new GitLedgerStore({ remote: fx.ledgerRepo, cacheDir: cache });
    // Heartbeats are fresh: only the runs' status can tell the sweeper which holder is gone.
    const now = new Date();
    const minuteAgo = new Date(now.getTime() - 60_000);
    const twoHoursAgo = new Date(now.getTime() - 2 * 3600_000);
    const runUrl = (id: number) => `${fx.double.url}/${REPOSITORY}/actions/runs/${id}`;
    await store.update(() => ({
      writes: new Map([
        [LEDGER_PATHS.workflow('edge-8100'), serializeRecord(interrupted('edge-8100', 8100, now))],
        [LEDGER_PATHS.workflow('edge-8200'), serializeRecord(interrupted('edge-8200', 8200, now))],
        // Approved two hours ago, continuation never ran (its dispatch failed or its pending run was cancelled).
        [
          LEDGER_PATHS.workflow('edge-8400'),
          serializeRecord(approvedUnstarted('edge-8400', new Date(now.getTime() - 2 * 3600_000))),
        ],
        // Approved a minute ago: its continuation may still be queued.
        [
          LEDGER_PATHS.workflow('edge-8500'),
          serializeRecord(approvedUnstarted('edge-8500', new Date(now.getTime() - 60_000))),
        ],
        // The run ids the approve runs recorded: a minute ago, but its continuation's run was cancelled while pending ...
        [
          LEDGER_PATHS.workflow('edge-8600'),
          serializeRecord(
            approvedUnstarted('edge-8600', minuteAgo, {
              at: minuteAgo.toISOString(),
              dispatches: 1,
              runId: 8601,
              runUrl: runUrl(8601),
            }),
          ),
        ],
        // ... two hours ago, but its continuation still waits in the queue (behind a long apply) ...
        [
          LEDGER_PATHS.workflow('edge-8700'),
          serializeRecord(
            approvedUnstarted('edge-8700', twoHoursAgo, {
              at: twoHoursAgo.toISOString(),
              dispatches: 1,
              runId: 8701,
              runUrl: runUrl(8701),
            }),
          ),
        ],
        // ... and the third continuation of this one failed too: no fourth.
        [
          LEDGER_PATHS.workflow('edge-8800'),
          serializeRecord(
            approvedUnstarted('edge-8800', twoHoursAgo, {
              at: minuteAgo.toISOString(),
              dispatches: 3,
              runId: 8801,
              runUrl: runUrl(8801),
            }),
          ),
        ],
      ]),
      message: 'two workflows mid-apply',
      result: undefined,
    }));
    fx.double.state.runs[8100] = {
      status: 'completed',
      conclusion: 'cancelled',
      runAttempt: 1,
      workflowPath: '.github/workflows/provision.yml',
    };
    fx.double.state.runs[8200] = {
      status: 'in_progress',
      conclusion: null,
      runAttempt: 1,
      workflowPath: '.github/workflows/provision.yml',
    };
    fx.double.state.runs[8601] = {
      status: 'completed',
      conclusion: 'cancelled',
      event: 'workflow_dispatch',
      workflowPath: '.github/workflows/provision.yml',
    };
    fx.double.state.runs[8701] = {
      status: 'queued',
      conclusion: null,
      event: 'workflow_dispatch',
      workflowPath: '.github/workflows/provision.yml',
    };
    fx.double.state.runs[8801] = {
      status: 'completed',
      conclusion: 'failure',
      event: 'workflow_dispatch',
      workflowPath: '.github/workflows/provision.yml',
    };
    fx.double.state.workflows['provision.yml'] = { id: 77, workflowDispatch: true, inputs: ['workflow-id'] };
  });
  afterAll(async () => {
    await rm(cache, { recursive: true, force: true });
    await fx?.cleanup();
  });

  let sweep: ActionResult;
  const continuationOf = async (id: string) =>
    (JSON.parse((await fx.ledgerFile(`workflows/${id}.json`))!) as { continuation?: Continuation }).continuation;

  it('dispatches the continuation of the workflow whose run completed, of the one approved long ago with no run to judge, and of the one whose continuation run was cancelled; leaves the live, the recent and the queued ones alone', async () => {
    sweep = await fx.run('resume', { runId: 8900, workflowFile: 'resume.yml', event: events.schedule(REPOSITORY) });
    expect(sweep.code, describeRun(sweep)).toBe(0);
    expect(JSON.parse(sweep.outputs.resumed!)).toEqual(['edge-8400', 'edge-8600', 'edge-8100']);
    const dispatch = (id: string) => ({
      workflow: 'provision.yml',
      ref: 'main',
      inputs: { 'workflow-id': id },
      login: 'github-actions[bot]',
      runId: expect.any(Number),
    });
    expect(fx.double.state.dispatches).toEqual([dispatch('edge-8400'), dispatch('edge-8600'), dispatch('edge-8100')]);
    expect(sweep.stdout).not.toContain('edge-8500');
    expect(sweep.stdout).toContain('edge-8200: apply live');
    expect(sweep.stdout).toContain(`edge-8700: apply continuing (${fx.double.url}/${REPOSITORY}/actions/runs/8701)`);
    expect(sweep.summary).toContain('| `edge-8100` | apply | dispatched |');
    expect(fx.double.violations).toEqual([]);
  });

  it('records each continuation it starts, with its run', async () => {
    const runOf = (id: string) => fx.double.state.dispatches.find((d) => d.inputs['workflow-id'] === id)!.runId;
    expect(await continuationOf('edge-8600')).toEqual({
      at: expect.any(String),
      dispatches: 2,
      runId: runOf('edge-8600'),
      runUrl: `${fx.double.url}/${REPOSITORY}/actions/runs/${runOf('edge-8600')}`,
    });
    expect(await continuationOf('edge-8400')).toMatchObject({ dispatches: 1, runId: runOf('edge-8400') });
    // The step's holder armed it after the approval's continuation: this is the first since.
    expect(await continuationOf('edge-8100')).toMatchObject({ dispatches: 1, runId: runOf('edge-8100') });
    expect((await continuationOf('edge-8700'))?.runId).toBe(8701);
  });

  it('gives up on a workflow whose continuations keep ending without starting it, with a warning naming the last run', async () => {
    expect(sweep.stdout).toContain('edge-8800: apply gave-up');
    expect(
      sweep.annotations.some(
        (a) =>
          a.level === 'warning' &&
          a.message.includes(
            `edge-8800: 3 continuations ended without moving its chain (the last: ${fx.double.url}/${REPOSITORY}/actions/runs/8801)`,
          ),
      ),
    ).toBe(true);
    expect((await continuationOf('edge-8800'))?.dispatches).toBe(3);
  });

  it('a second sweep starts nothing new while the continuations it started are queued', async () => {
    const before = fx.double.state.dispatches.length;
    const again = await fx.run('resume', {
      runId: 8901,
      workflowFile: 'resume.yml',
      event: events.schedule(REPOSITORY),
    });
    expect(again.code, describeRun(again)).toBe(0);
    expect(JSON.parse(again.outputs.resumed!)).toEqual([]);
    expect(fx.double.state.dispatches).toHaveLength(before);
    for (const id of ['edge-8400', 'edge-8600', 'edge-8100'])
      expect(again.stdout).toMatch(new RegExp(`${id}: apply continuing`));
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
