import { cp, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { localGate } from '../../src/app/approval/gates/local.js';
import { environmentGate } from '../../src/app/approval/gates/environment.js';
import { dispatchGate } from '../../src/app/approval/gates/dispatch.js';
import { decide, decideByDispatch } from '../../src/app/approval/approvals.js';
import { continueWorkflow, failureOf } from '../../src/app/provision/continue-workflow.js';
import type { AppContext } from '../../src/app/runtime/context.js';
import type { ApprovalGate } from '../../src/app/ports/approval-gate.js';
import { RecordingProgress } from '../../src/app/runtime/progress.js';
import { SecretRegistry } from '../../src/app/runtime/secrets.js';
import { awaitApproval, decideApproval, PLAN_FAILURE_KIND, type Workflow } from '../../src/domain/workflow.js';
import { renderText, viewWorkflow } from '../../src/domain/render.js';
import { approvedButUnstarted, stepsHeldByCi } from '../../src/app/provision/interrupted.js';
import { LEDGER_PATHS, requireWorkflow, serializeRecord } from '../../src/ledger/records.js';
import { MemoryLedgerStore } from '../../src/ledger/memory-store.js';
import type { LedgerChange, LedgerSnapshot, LedgerStore } from '../../src/ledger/store.js';
import { fakeCiPlatform } from '../support/fake-ci-platform.js';
import { fixtureWorkspacesDir, invocationsOf, readStandinLog, standinPath } from '../support/tofu-standin.js';
import { sampleWorkflow, T0 } from '../support/workflows.js';
import { privateDirPrefix } from '../../src/adapters/private-dir.js';

function setup(workflow: Workflow) {
  const store = new MemoryLedgerStore({ files: { [LEDGER_PATHS.workflow(workflow.id)]: serializeRecord(workflow) } });
  const app: AppContext = {
    store,
    ledgerBranch: 'exocomp-ledger',
    now: () => T0,
    cwd: '/nonexistent',
    env: {},
    progress: new RecordingProgress(),
  };
  const published: string[] = [];
  const publish = async (w: Workflow) => {
    published.push(`${w.id}:${w.state}`);
  };
  return {
    store,
    app,
    published,
    publish,
    inputs: { runSecrets: {}, rotateHostKeys: [], secrets: new SecretRegistry() },
  };
}

const awaiting = () =>
  awaitApproval(sampleWorkflow('edge-1', { requireApproval: true }), T0, { fingerprint: 'f1', summary: '+1 ~0 -0' });

/** A gate that records whether the core asked it. */
function spyGate(): ApprovalGate & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    mode: 'spy',
    decideNow: async () => (asked.push('decideNow'), undefined),
    awaitDecision: async () => (asked.push('awaitDecision'), undefined),
    howToDecide: () => 'ask someone',
  };
}

describe('continueWorkflow', () => {
  it('refuses a rejected workflow: publishes it, runs nothing, and the face fails with an approval error', async () => {
    const rejected = decideApproval(awaiting(), { approve: false, by: 'carol', via: 'cli', now: T0 });
    const { app, store, published, publish, inputs } = setup(rejected);
    const before = store.history().length;
    const outcome = await continueWorkflow(app, {
      workflowId: 'edge-1',
      inputs,
      gate: localGate({ wait: false }),
      publish,
    });
    expect(outcome.kind).toBe('rejected');
    expect(published).toEqual(['edge-1:rejected']);
    expect(store.history().length).toBe(before);
    expect(failureOf(outcome)).toMatchObject({
      kind: 'approval',
      message: 'workflow edge-1 was rejected by carol; nothing is applied',
    });
  });

  it('a pending approval in dispatch mode ends the apply job awaiting it, with nothing planned or applied', async () => {
    const { app, store, published, publish, inputs } = setup(awaiting());
    const before = store.history().length;
    const outcome = await continueWorkflow(app, {
      workflowId: 'edge-1',
      inputs,
      gate: dispatchGate(),
      scope: 'apply',
      publish,
    });
    expect(outcome).toMatchObject({ kind: 'awaiting-approval', workflow: { state: 'awaiting-approval' } });
    expect(store.history().length).toBe(before);
    expect(published).toEqual(['edge-1:awaiting-approval']);
    expect(failureOf(outcome)).toBeUndefined();
  });

  it('an environment gate that finds no approval refuses: the workflow is published as it stands and the ledger is unchanged', async () => {
    const { app, store, published, publish, inputs } = setup(awaiting());
    const platform = fakeCiPlatform();
    const before = store.history().length;
    await expect(
      continueWorkflow(app, {
        workflowId: 'edge-1',
        inputs,
        gate: environmentGate(platform, 'production'),
        scope: 'apply',
        publish,
      }),
    ).rejects.toMatchObject({
      kind: 'approval',
      message: 'nobody approved production',
    });
    expect(platform.calls).toEqual(['gatedJobApproval production']);
    expect(published).toEqual(['edge-1:awaiting-approval']);
    expect(store.history().length).toBe(before);
  });

  it('the environment gate records who approved the gated job', async () => {
    const { app } = setup(awaiting());
    const platform = fakeCiPlatform({
      approval: { by: 'bob', via: 'environment production (run 9001)', comment: 'lgtm', selfReviewAllowed: false },
    });
    const decided = await environmentGate(platform, 'production').decideNow(app, awaiting());
    expect(decided?.approval).toMatchObject({
      state: 'approved',
      by: 'bob',
      via: 'environment production (run 9001)',
      comment: 'lgtm',
    });
    expect(requireWorkflow(await app.store.read(), 'edge-1').approval.state).toBe('approved');
  });

  it('the environment gate refuses a workflow with no plan from an earlier job, showing the two-job shape', async () => {
    const created = sampleWorkflow('edge-1', { requireApproval: true });
    const { app, store } = setup(created);
    const before = store.history().length;
    const platform = fakeCiPlatform({
      approval: { by: 'bob', via: 'environment production (run 9001)', comment: '', selfReviewAllowed: false },
    });
    const refusal = environmentGate(platform, 'production').decideNow(app, created);
    await expect(refusal).rejects.toMatchObject({
      kind: 'approval',
      message: expect.stringContaining('has no plan recorded by an earlier job'),
    });
    await expect(environmentGate(platform, 'production').decideNow(app, created)).rejects.toMatchObject({
      help: expect.stringMatching(/plan:[\s\S]*needs: plan[\s\S]*environment: production/),
    });
    expect(platform.calls).toEqual([]);
    expect(store.history().length).toBe(before);
  });

  it('the environment gate refuses the requester approving their own deployment where self-review is allowed, or warns when told to', async () => {
    const requester = awaiting().requester;
    const selfApproved = {
      by: requester,
      via: 'environment production (run 9001)',
      comment: '',
      selfReviewAllowed: true,
    };
    const { app } = setup(awaiting());
    await expect(
      environmentGate(fakeCiPlatform({ approval: selfApproved }), 'production').decideNow(app, awaiting()),
    ).rejects.toMatchObject({
      kind: 'approval',
      message: expect.stringContaining(`${requester} approved a deployment they requested`),
    });
    expect(requireWorkflow(await app.store.read(), 'edge-1').approval.state).toBe('pending');
    // Prevent self-review on: GitHub itself kept the requester from approving, so whoever approved is someone else.
    const prevented = await environmentGate(
      fakeCiPlatform({ approval: { ...selfApproved, selfReviewAllowed: false } }),
      'production',
    ).decideNow(app, awaiting());
    expect(prevented?.approval.state).toBe('approved');

    const second = setup(awaiting());
    const warned = await environmentGate(fakeCiPlatform({ approval: selfApproved }), 'production', 'warn').decideNow(
      second.app,
      awaiting(),
    );
    expect(warned?.approval).toMatchObject({ state: 'approved', by: requester });
    expect((second.app.progress as RecordingProgress).events).toContainEqual(
      expect.objectContaining({ type: 'warning', message: expect.stringContaining('Prevent self-review') }),
    );
  });

  it('a later step’s job never asks the gate: the chain refuses it until apply succeeded', async () => {
    const { app, inputs } = setup(awaiting());
    const gate = spyGate();
    await expect(
      continueWorkflow(app, { workflowId: 'edge-1', inputs, gate, scope: 'ssh-wait' }),
    ).rejects.toMatchObject({ kind: 'illegal-transition' });
    expect(gate.asked).toEqual([]);
  });

  it('local mode with wait: blocks until the decision is in the ledger, and a rejection ends it', async () => {
    const { app, inputs } = setup(awaiting());
    const running = continueWorkflow(app, { workflowId: 'edge-1', inputs, gate: localGate({ wait: true, pollMs: 5 }) });
    await new Promise((resolve) => setTimeout(resolve, 30));
    await decide(app, 'edge-1', { approve: false, by: 'carol', via: 'cli' });
    expect((await running).kind).toBe('rejected');
  });

  it('a workflow the ledger does not hold, with nothing to create it from, is an error', async () => {
    const { app, inputs } = setup(awaiting());
    await expect(continueWorkflow(app, { workflowId: 'nope', inputs })).rejects.toMatchObject({
      kind: 'usage',
      message: 'no workflow nope in the ledger',
    });
  });
});

describe('decideByDispatch', () => {
  it('refuses a decider without the right to decide: nothing recorded, nothing dispatched', async () => {
    const { app, store } = setup(awaiting());
    const platform = fakeCiPlatform({ mayDecide: false });
    const before = store.history().length;
    await expect(
      decideByDispatch(app, platform, {
        workflowId: 'edge-1',
        approve: true,
        reason: undefined,
        allowSelfApproval: false,
        continueWith: undefined,
      }),
    ).rejects.toMatchObject({
      kind: 'permission',
      message: 'bob has read access; deciding an approval needs write access or above',
    });
    expect(store.history().length).toBe(before);
    expect(platform.dispatched).toEqual([]);
  });

  it('refuses the requester deciding their own workflow', async () => {
    const { app } = setup(awaiting());
    const platform = fakeCiPlatform({ actor: 'alice' });
    await expect(
      decideByDispatch(app, platform, {
        workflowId: 'edge-1',
        approve: true,
        reason: undefined,
        allowSelfApproval: false,
        continueWith: undefined,
      }),
    ).rejects.toMatchObject({ kind: 'approval' });
    expect(platform.dispatched).toEqual([]);
  });

  it('records the approval with the run it was decided in, then dispatches the continuation', async () => {
    const { app } = setup(awaiting());
    const platform = fakeCiPlatform();
    const outcome = await decideByDispatch(app, platform, {
      workflowId: 'edge-1',
      approve: true,
      reason: 'ok',
      allowSelfApproval: false,
      continueWith: 'chain.yml',
    });
    expect(outcome.workflow.approval).toMatchObject({
      state: 'approved',
      by: 'bob',
      via: 'fake run 9001',
      comment: 'ok',
    });
    expect(outcome.dispatched).toEqual({ target: 'chain.yml', ref: 'main' });
    expect(platform.dispatched).toEqual([{ workflow: 'edge-1', target: 'chain.yml' }]);
  });

  it('records the continuation it started, with its run when the platform names it', async () => {
    const { app } = setup(awaiting());
    const run = { id: 9100, url: 'https://ci.example/runs/9100' };
    await decideByDispatch(app, fakeCiPlatform({ startedRun: run }), {
      workflowId: 'edge-1',
      approve: true,
      reason: undefined,
      allowSelfApproval: false,
      continueWith: undefined,
    });
    expect(requireWorkflow(await app.store.read(), 'edge-1').continuation).toEqual({
      at: expect.any(String),
      dispatches: 1,
      runId: 9100,
      runUrl: run.url,
    });
  });

  it('a rejection is recorded and dispatches nothing', async () => {
    const { app } = setup(awaiting());
    const platform = fakeCiPlatform();
    const outcome = await decideByDispatch(app, platform, {
      workflowId: 'edge-1',
      approve: false,
      reason: undefined,
      allowSelfApproval: false,
      continueWith: undefined,
    });
    expect(outcome).toMatchObject({ workflow: { state: 'rejected' }, dispatched: undefined });
    expect(platform.dispatched).toEqual([]);
  });
});

describe('continueWorkflow: a new workflow no approval holds', () => {
  const dirs: string[] = [];
  afterEach(async () => {
    await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
  });

  /**
   * The edge workspace naming `hosts` (none by default), the stand-in's log, and a ledger whose first write waits for
   * `holdFirstWrite`, and its second (apply's success) for `holdSecondWrite`.
   */
  async function fresh(
    holdFirstWrite: (log: string) => Promise<void>,
    options: { hosts?: Record<string, unknown>; holdSecondWrite?: () => Promise<void> } = {},
  ) {
    const dir = await mkdtemp(join(tmpdir(), 'exocomp-lookahead-'));
    dirs.push(dir);
    const workspace = join(dir, 'ws');
    await cp(join(fixtureWorkspacesDir, 'edge'), workspace, { recursive: true });
    await writeFile(
      join(workspace, 'exocomp.auto.tfvars.json'),
      JSON.stringify({ ansible_inventory: { all: { hosts: options.hosts ?? {} } } }),
    );
    // The provision checks refuse a missing playbook before the first write (issue 23).
    await writeFile(join(dir, 'site.yml'), '- hosts: all\n  tasks: []\n');
    const log = join(dir, 'standin.log');
    const memory = new MemoryLedgerStore();
    let writes = 0;
    const store: LedgerStore = {
      description: memory.description,
      read: () => memory.read(),
      migrate: () => memory.migrate(),
      update: async <T>(mutate: (snapshot: LedgerSnapshot) => LedgerChange<T>) => {
        const write = writes++;
        if (write === 0) await holdFirstWrite(log);
        if (write === 1) await options.holdSecondWrite?.();
        return memory.update(mutate);
      },
    };
    const progress = new RecordingProgress();
    const app: AppContext = {
      store,
      ledgerBranch: 'exocomp-ledger',
      now: () => T0,
      cwd: dir,
      env: { ...process.env, EXOCOMP_TOFU_STANDIN_LOG: log },
      progress,
    };
    const request = {
      workflowId: 'edge-new1',
      newId: true,
      scope: 'apply' as const,
      inputs: { runSecrets: {}, rotateHostKeys: [], secrets: new SecretRegistry(), tofuBinary: standinPath },
      create: () => ({
        workspacePath: workspace,
        workspaceName: 'edge',
        playbook: 'site.yml',
        requireApproval: false,
        trigger: { kind: 'local' as const },
        options: { sshWaitMs: 1000, onboardUser: 'exocomp', check: false },
      }),
    };
    return { app, memory, progress, log, request };
  }

  /** Plan directories this process made and left behind (makePrivateDir names them exocomp-plan-<pid>.<pidns>-…). */
  const planDirs = async () => (await readdir(tmpdir())).filter((name) => name.startsWith(privateDirPrefix('plan')));

  it('plans while the write that records it with apply running is on its way, and applies only after that write', async () => {
    let planAtWrite = -1;
    const { app, memory, progress, log, request } = await fresh(async (file) => {
      // The write waits (bounded) until the plan has run: it can only finish if the plan did not wait for the write.
      for (let i = 0; i < 600 && invocationsOf(await readStandinLog(file), 'plan').length === 0; i++)
        await new Promise((resolve) => setTimeout(resolve, 50));
      const seen = await readStandinLog(file);
      planAtWrite = invocationsOf(seen, 'plan').length;
      expect(invocationsOf(seen, 'apply')).toEqual([]);
    });
    const before = await planDirs();
    const outcome = await continueWorkflow(app, request);
    expect(outcome).toMatchObject({ kind: 'ran', ok: true });
    expect(planAtWrite).toBe(1);
    const ran = await readStandinLog(log);
    expect(invocationsOf(ran, 'plan')).toHaveLength(1);
    expect(invocationsOf(ran, 'apply')).toHaveLength(1);
    expect(memory.history().map((commit) => commit.message)).toEqual([
      expect.stringMatching(/^edge-new1: created for edge \(site\.yml\); apply running \(local:/),
      expect.stringMatching(/^edge-new1: apply succeeded; tf:edge: capture/),
    ]);
    // What tofu said while planning is shown inside the apply step, after it started.
    const started = progress.events.findIndex((e) => e.type === 'step-started' && e.step === 'apply');
    const applyLines = progress.events.flatMap((e, i) => (e.type === 'info' && e.step === 'apply' ? [i] : []));
    expect(applyLines.length).toBeGreaterThan(0);
    expect(Math.min(...applyLines)).toBeGreaterThan(started);
    expect(await planDirs()).toEqual(before);
  });

  it('a first write that fails stops the plan and removes it: nothing is applied and nothing recorded', async () => {
    const { app, memory, log, request } = await fresh(async () => {
      throw new Error('ledger unreachable');
    });
    const before = await planDirs();
    await expect(continueWorkflow(app, request)).rejects.toThrow('ledger unreachable');
    expect(invocationsOf(await readStandinLog(log), 'apply')).toEqual([]);
    expect(memory.history()).toEqual([]);
    expect(await planDirs()).toEqual(before);
  });

  /** A loopback port that answers with an SSH banner, counting the connections it got. */
  async function bannerServer() {
    const server = createServer((socket) => {
      connections.count++;
      sockets.push(socket);
      // ssh-keyscan hangs up once it has what it wants: a reset on this side is not the test's concern.
      socket.on('error', () => {});
      socket.end('SSH-2.0-OpenSSH_9.2p1 exocomp-test\r\n');
    });
    const connections = { count: 0 };
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    servers.push(server);
    return {
      get count() {
        return connections.count;
      },
      port: (server.address() as AddressInfo).port,
    };
  }
  const servers: Server[] = [];
  const sockets: Socket[] = [];
  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.destroy();
    await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
  });

  it('waits for the banners of the hosts apply created while its success is written, and shows the wait inside ssh-wait', async () => {
    const banner = await bannerServer();
    let probedAtWrite = false;
    const { app, memory, progress, request } = await fresh(async () => undefined, {
      hosts: { web1: { ansible_host: '127.0.0.1', ansible_port: banner.port } },
      // The write waits (bounded) for a probe: it can only finish if the wait did not wait for the write.
      holdSecondWrite: async () => {
        for (let i = 0; i < 600 && banner.count === 0; i++) await new Promise((resolve) => setTimeout(resolve, 50));
        probedAtWrite = banner.count > 0;
      },
    });
    // No fleet key: onboarding fails before it touches the host, after ssh-wait succeeded.
    const outcome = await continueWorkflow(app, { ...request, scope: 'chain' });
    expect(outcome).toMatchObject({ kind: 'ran', ok: false, workflow: { failure: { step: 'onboard' } } });
    expect(probedAtWrite).toBe(true);
    expect(memory.history().map((commit) => commit.message)[1]).toMatch(
      /^edge-new1: apply succeeded; ssh-wait running \(local:.*; tf:edge: capture/,
    );
    const started = progress.events.findIndex((e) => e.type === 'step-started' && e.step === 'ssh-wait');
    const waitLines = progress.events.flatMap((e, i) =>
      e.type === 'info' && e.step === 'ssh-wait' ? [{ i, message: e.message }] : [],
    );
    expect(waitLines.map((line) => line.message)).toEqual([
      'waiting up to 1.0s for 1 host(s): web1',
      expect.stringMatching(/^web1 answered after /),
    ]);
    expect(Math.min(...waitLines.map((line) => line.i))).toBeGreaterThan(started);
  });

  it('a run that only applies (a per-step job) does not wait for the banners it will not use', async () => {
    const banner = await bannerServer();
    const { app, request } = await fresh(async () => undefined, {
      hosts: { web1: { ansible_host: '127.0.0.1', ansible_port: banner.port } },
    });
    expect(await continueWorkflow(app, request)).toMatchObject({ kind: 'ran', ok: true });
    expect(banner.count).toBe(0);
  });

  it('without newId the ledger is searched first, and an existing workflow is continued, not planned again beside a write', async () => {
    const { app, log, request } = await fresh(async () => undefined);
    await continueWorkflow(app, request);
    const plans = invocationsOf(await readStandinLog(log), 'plan').length;
    const again = await continueWorkflow(app, { ...request, newId: false });
    expect(again).toMatchObject({ kind: 'ran', ok: true });
    // apply succeeded already: the chain skips it, and no plan was made for it.
    expect(invocationsOf(await readStandinLog(log), 'plan')).toHaveLength(plans);
  });
});

describe('a plan job whose plan fails (issue 24, item 2)', () => {
  it('records the failure (status shows it, failed at apply, kind plan), publishes it, and takes no approval', async () => {
    const created = sampleWorkflow('edge-1', { requireApproval: true });
    const { app, store, inputs, publish, published } = setup(created);
    // The workspace does not exist under cwd: the plan cannot run.
    await expect(continueWorkflow(app, { workflowId: 'edge-1', inputs, scope: 'plan', publish })).rejects.toThrow(
      /infra\/edge/,
    );
    const recorded = requireWorkflow(await store.read(), 'edge-1');
    expect(recorded).toMatchObject({
      state: 'created',
      approval: { state: 'pending' },
      failure: { step: 'apply', kind: PLAN_FAILURE_KIND, summary: expect.stringContaining('infra/edge') },
    });
    expect(recorded.approval.planFingerprint).toBeUndefined();
    expect(published).toEqual(['edge-1:created']);
    expect(renderText(viewWorkflow(recorded, T0))).toMatch(/failed at apply \(plan\)/);
    // Nobody saw a plan: an approval is refused, and the sweeper has nothing to continue.
    expect(() => decideApproval(recorded, { approve: true, by: 'bob', via: 'cli', now: T0 })).toThrow(
      /no plan to approve: its plan failed/,
    );
    expect(await approvedButUnstarted(app, { graceMs: 0 })).toEqual([]);
    expect(await stepsHeldByCi(app, 'gitlab', async () => true)).toEqual([]);
    // A later plan that succeeds clears it.
    const replanned = awaitApproval(recorded, T0, { fingerprint: 'f2', summary: '+1 ~0 -0' });
    expect(replanned.failure).toBeUndefined();
    expect(replanned.state).toBe('awaiting-approval');
  });

  it('a stale approval says to start a new workflow the way the CI run says, not to re-run the job', () => {
    const failed = {
      ...awaiting(),
      state: 'provision-failed' as const,
      failure: {
        step: 'apply' as const,
        kind: 'approval',
        summary: 'plan changed since approval',
        at: T0.toISOString(),
      },
    };
    const error = failureOf({
      kind: 'ran',
      workflow: failed,
      ok: false,
      startAgain: 'Start a new pipeline on main: Build › Pipelines › Run pipeline',
    });
    expect(error?.help).toContain('Start a new pipeline on main');
    expect(error?.help).not.toMatch(/re-run the job/);
    expect(error?.message).toContain('plan changed since approval');
  });
});
