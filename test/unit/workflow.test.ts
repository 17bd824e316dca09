import { describe, expect, it } from 'vitest';
import {
  CI_LEASE_MAX_MS,
  leaseNeedsHeartbeats,
  awaitApproval,
  decideApproval,
  failStep,
  heartbeat,
  IllegalTransitionError,
  judgeLease,
  LeaseHeldError,
  nextStep,
  recordPlanRun,
  resumeWorkflow,
  startStep,
  STEP_NAMES,
  stepOf,
  succeedAndStartNext,
  succeedStep,
  workflowSchema,
  type Lease,
  type Workflow,
} from '../../src/domain/workflow.js';
import { localLease as lease, sampleWorkflow, T0 as t0 } from '../support/workflows.js';
import { parseBastion } from '../../src/domain/bastion.js';
import { recordingRunReach, runReach } from '../../src/app/plays/run-inputs.js';

const at = (seconds: number) => new Date(t0.getTime() + seconds * 1000);

const fresh = (requireApproval = false): Workflow => sampleWorkflow('edge-0001', { requireApproval });

function runTo(workflow: Workflow, upTo: number, holder = 'runner-a'): Workflow {
  let w = workflow;
  for (const name of STEP_NAMES.slice(0, upTo)) {
    w = startStep(w, name, lease(holder), t0);
    w = succeedStep(w, name, holder, at(1));
  }
  return w;
}

describe('workflow record', () => {
  it('starts created with four pending steps and validates against its schema', () => {
    const w = fresh();
    expect(w.state).toBe('created');
    expect(w.steps.map((s) => [s.name, s.state, s.attempts])).toEqual([
      ['apply', 'pending', 0],
      ['ssh-wait', 'pending', 0],
      ['onboard', 'pending', 0],
      ['configure', 'pending', 0],
    ]);
    expect(workflowSchema.parse(w)).toEqual(w);
  });

  it('rejects a record with an unknown state or a missing step', () => {
    expect(workflowSchema.safeParse({ ...fresh(), state: 'half-done' }).success).toBe(false);
    expect(workflowSchema.safeParse({ ...fresh(), steps: fresh().steps.slice(1) }).success).toBe(false);
    expect(workflowSchema.safeParse({ ...fresh(), schemaVersion: 2 }).success).toBe(false);
  });
});

describe('step transitions', () => {
  it('runs the four steps in order to provisioned', () => {
    const w = runTo(fresh(), 4);
    expect(w.state).toBe('provisioned');
    expect(w.steps.every((s) => s.state === 'succeeded' && s.attempts === 1 && s.lease === undefined)).toBe(true);
    expect(nextStep(w)).toBeUndefined();
  });

  it('marks the workflow provisioning while steps run', () => {
    const w = startStep(fresh(), 'apply', lease('a'), t0);
    expect(w.state).toBe('provisioning');
    expect(stepOf(w, 'apply')).toMatchObject({ state: 'running', attempts: 1, lease: { holder: 'a' } });
  });

  it('refuses a step before its predecessor succeeded', () => {
    expect(() => startStep(fresh(), 'ssh-wait', lease('a'), t0)).toThrow(IllegalTransitionError);
    const applying = startStep(fresh(), 'apply', lease('a'), t0);
    expect(() => startStep(applying, 'ssh-wait', lease('a'), t0)).toThrow(/apply is running, not succeeded/);
  });

  it('never runs a succeeded step again', () => {
    const w = runTo(fresh(), 1);
    expect(() => startStep(w, 'apply', lease('b'), t0)).toThrow(/already succeeded/);
  });

  it('only the lease holder can finish or heartbeat a step', () => {
    const w = startStep(fresh(), 'apply', lease('a'), t0);
    expect(() => succeedStep(w, 'apply', 'b', at(1))).toThrow(/held by a, not b/);
    expect(() => failStep(w, 'apply', 'b', at(1), { kind: 'x', summary: 'y' })).toThrow(IllegalTransitionError);
    expect(() => heartbeat(w, 'apply', 'b', at(1))).toThrow(IllegalTransitionError);
    expect(stepOf(heartbeat(w, 'apply', 'a', at(5)), 'apply').lease?.heartbeatAt).toBe(at(5).toISOString());
  });

  it('refuses to finish a step that is not running', () => {
    expect(() => succeedStep(fresh(), 'apply', 'a', t0)).toThrow(/pending, not running/);
  });

  it('a failure blocks every later step and records its context', () => {
    let w = runTo(fresh(), 1);
    w = startStep(w, 'ssh-wait', lease('a'), at(2));
    w = failStep(w, 'ssh-wait', 'a', at(7), { kind: 'ssh-wait', summary: 'web2 (127.0.0.9:22) never answered' });
    expect(w.state).toBe('provision-failed');
    expect(w.steps.map((s) => s.state)).toEqual(['succeeded', 'failed', 'blocked', 'blocked']);
    expect(w.failure).toEqual({
      step: 'ssh-wait',
      kind: 'ssh-wait',
      summary: 'web2 (127.0.0.9:22) never answered',
      at: at(7).toISOString(),
    });
    expect(() => startStep(w, 'ssh-wait', lease('b'), at(8))).toThrow(/must be resumed/);
    expect(() => startStep(w, 'onboard', lease('b'), at(8))).toThrow(IllegalTransitionError);
  });

  it('resume re-opens the failed step and keeps succeeded ones', () => {
    let w = runTo(fresh(), 2);
    w = startStep(w, 'onboard', lease('a'), at(2));
    w = failStep(w, 'onboard', 'a', at(3), { kind: 'host-key', summary: 'key changed' });
    w = resumeWorkflow(w, at(4));
    expect(w.state).toBe('provisioning');
    expect(w.steps.map((s) => s.state)).toEqual(['succeeded', 'succeeded', 'pending', 'pending']);
    expect(nextStep(w)?.name).toBe('onboard');
    w = startStep(w, 'onboard', lease('b'), at(5));
    expect(stepOf(w, 'onboard').attempts).toBe(2);
    expect(stepOf(w, 'onboard').detail).toBeUndefined();
    w = succeedStep(w, 'onboard', 'b', at(6));
    w = startStep(w, 'configure', lease('b'), at(6));
    w = succeedStep(w, 'configure', 'b', at(7));
    expect(w.state).toBe('provisioned');
    expect(w.failure).toBeUndefined();
  });

  it('resume is only for failed workflows', () => {
    expect(() => resumeWorkflow(fresh(), t0)).toThrow(IllegalTransitionError);
    expect(() => resumeWorkflow(runTo(fresh(), 4), t0)).toThrow(/provisioned/);
  });

  it('a success that starts the next step is the two transitions in one', () => {
    const applying = startStep(fresh(), 'apply', lease('a'), t0);
    const both = succeedAndStartNext(applying, 'apply', 'a', at(1), 'applied', lease('a'));
    expect(both.started).toBe('ssh-wait');
    expect(both.workflow).toEqual(
      startStep(succeedStep(applying, 'apply', 'a', at(1), 'applied'), 'ssh-wait', lease('a'), at(1)),
    );
    // Each step of the chain that way, then the last one's success alone.
    let w = both.workflow;
    for (const [name, next] of [
      ['ssh-wait', 'onboard'],
      ['onboard', 'configure'],
      ['configure', undefined],
    ] as const) {
      const step = succeedAndStartNext(w, name, 'a', at(2), undefined, lease('a'));
      expect(step.started).toBe(next);
      w = step.workflow;
    }
    expect(w.state).toBe('provisioned');
  });

  it('a success starts only a pending next step, and only the holder may succeed', () => {
    const applying = startStep(fresh(), 'apply', lease('a'), t0);
    expect(() => succeedAndStartNext(applying, 'apply', 'b', at(1), undefined, lease('b'))).toThrow(/held by a, not b/);
    // A next step someone holds is left as it is (a record written by hand, or a future layout).
    const odd: Workflow = {
      ...applying,
      steps: applying.steps.map((s) => (s.name === 'ssh-wait' ? { ...s, state: 'running', lease: lease('z') } : s)),
    };
    const alone = succeedAndStartNext(odd, 'apply', 'a', at(1), undefined, lease('a'));
    expect(alone.started).toBeUndefined();
    expect(stepOf(alone.workflow, 'apply').state).toBe('succeeded');
    expect(stepOf(alone.workflow, 'ssh-wait').lease?.holder).toBe('z');
  });

  it('refuses any step of a provisioned workflow', () => {
    expect(() => startStep(runTo(fresh(), 4), 'configure', lease('a'), t0)).toThrow(/already provisioned/);
  });
});

describe('leases', () => {
  it('a live lease refuses a second runner', () => {
    const w = startStep(fresh(), 'apply', lease('a', t0, 60_000), t0);
    expect(() => startStep(w, 'apply', lease('b'), at(30))).toThrow(LeaseHeldError);
  });

  it('an expired heartbeat is a dead lease: the step is re-armed with attempts + 1', () => {
    const w = startStep(fresh(), 'apply', lease('a', t0, 60_000), t0);
    const taken = startStep(w, 'apply', lease('b', at(61)), at(61));
    expect(stepOf(taken, 'apply')).toMatchObject({ state: 'running', attempts: 2, lease: { holder: 'b' } });
  });

  it('a holder known to be gone is a dead lease even with a fresh heartbeat', () => {
    const w = startStep(fresh(), 'apply', lease('a'), t0);
    const taken = startStep(w, 'apply', lease('b', at(1)), at(1), { holderGone: true });
    expect(stepOf(taken, 'apply').lease?.holder).toBe('b');
  });

  it('the same holder cannot arm a step twice', () => {
    const w = startStep(fresh(), 'apply', lease('a'), t0);
    expect(() => startStep(w, 'apply', lease('a'), at(1), { holderGone: true })).toThrow(
      /already running under this holder/,
    );
  });

  it('judges a lease by heartbeat age and holder facts', () => {
    const l = lease('a', t0, 10_000);
    expect(judgeLease(l, at(10))).toBe('live');
    expect(judgeLease(l, at(11))).toBe('dead');
    expect(judgeLease(l, at(1), { holderGone: true })).toBe('dead');
    expect(judgeLease(l, at(1), { holderGone: false })).toBe('live');
  });

  it('judges a CI lease by its run, not by heartbeats (CI holders commit none)', () => {
    const ci: Lease = {
      holder: 'github:o/r:7:1:provision',
      origin: { kind: 'ci', platform: 'github', repository: 'o/r', runId: 7, runAttempt: 1 },
      acquiredAt: t0.toISOString(),
      heartbeatAt: t0.toISOString(),
      ttlMs: 10_000,
    };
    expect(leaseNeedsHeartbeats(ci)).toBe(false);
    expect(leaseNeedsHeartbeats(lease('a'))).toBe(true);
    // An hour without a heartbeat: the run still going is what counts.
    expect(judgeLease(ci, at(3600), { holderGone: false })).toBe('live');
    expect(judgeLease(ci, at(3600))).toBe('live');
    expect(judgeLease(ci, at(1), { holderGone: true })).toBe('dead');
    // Nobody could ask the platform: dead once no CI job can still be running.
    expect(judgeLease(ci, new Date(t0.getTime() + CI_LEASE_MAX_MS + 1000))).toBe('dead');
    const w = startStep(fresh(), 'apply', ci, t0);
    expect(() => startStep(w, 'apply', lease('b', at(3600)), at(3600))).toThrow(LeaseHeldError);
    expect(
      stepOf(startStep(w, 'apply', lease('b', at(3600)), at(3600), { holderGone: true }), 'apply').lease?.holder,
    ).toBe('b');
  });

  it('the old holder cannot finish a step another runner took over', () => {
    const w = startStep(fresh(), 'apply', lease('a'), t0);
    const taken = startStep(w, 'apply', lease('b', at(1)), at(1), { holderGone: true });
    expect(() => succeedStep(taken, 'apply', 'a', at(2))).toThrow(/held by b, not a/);
  });
});

describe('approval', () => {
  it('no step runs before an approval', () => {
    const w = awaitApproval(fresh(true), t0, { fingerprint: 'abc', summary: '+1 ~0 -0' });
    expect(w.state).toBe('awaiting-approval');
    expect(w.approval).toMatchObject({ required: true, state: 'pending', planFingerprint: 'abc' });
    expect(() => startStep(w, 'apply', lease('a'), t0)).toThrow(/needs an approval/);
  });

  it('an approval releases the chain', () => {
    let w = awaitApproval(fresh(true), t0);
    w = decideApproval(w, { approve: true, by: 'bob', via: 'cli', comment: 'ship it', now: at(5) });
    expect(w.state).toBe('created');
    expect(w.approval).toMatchObject({
      state: 'approved',
      by: 'bob',
      via: 'cli',
      comment: 'ship it',
      at: at(5).toISOString(),
    });
    expect(runTo(w, 4).state).toBe('provisioned');
  });

  it('a rejection ends the workflow', () => {
    let w = awaitApproval(fresh(true), t0);
    w = decideApproval(w, { approve: false, by: 'bob', via: 'cli', now: at(5) });
    expect(w.state).toBe('rejected');
    expect(() => startStep(w, 'apply', lease('a'), t0)).toThrow(/rejected/);
    expect(() => decideApproval(w, { approve: true, by: 'carol', via: 'cli', now: at(6) })).toThrow(
      /already rejected by bob/,
    );
  });

  it('records the run and attempt holding the sealed plan, and forgets both when a new plan is recorded', () => {
    let w = awaitApproval(fresh(true), t0, { fingerprint: 'abc', summary: '+1 ~0 -0' });
    w = recordPlanRun(w, 42, at(1), 2);
    expect(w.approval).toMatchObject({ planRunId: 42, planRunAttempt: 2 });
    // A platform without attempts records none, and an earlier attempt's is not kept beside the new run.
    expect(recordPlanRun(w, 43, at(2)).approval).toMatchObject({ planRunId: 43 });
    expect(recordPlanRun(w, 43, at(2)).approval.planRunAttempt).toBeUndefined();
    w = awaitApproval(w, at(3), { fingerprint: 'def', summary: '+2 ~0 -0' });
    expect(w.approval.planRunId).toBeUndefined();
    expect(w.approval.planRunAttempt).toBeUndefined();
    expect(workflowSchema.parse(JSON.parse(JSON.stringify(recordPlanRun(w, 44, at(4), 3))))).toMatchObject({
      approval: { planRunId: 44, planRunAttempt: 3 },
    });
  });

  it('refuses decisions and waits where no approval is required', () => {
    expect(() => decideApproval(fresh(false), { approve: true, by: 'b', via: 'cli', now: t0 })).toThrow(
      /does not require approval/,
    );
    expect(() => awaitApproval(fresh(false), t0)).toThrow(IllegalTransitionError);
  });
});

describe('how the run reaches the hosts, kept with the workflow (host-keys, bastion)', () => {
  const parseOptions = (options: Record<string, unknown>) =>
    workflowSchema.safeParse({ ...fresh(), options: { ...fresh().options, ...options } });

  it('reads a record written before they were kept, and one that keeps them; refuses a bad bastion in a record', () => {
    const old = fresh();
    expect(old.options).not.toHaveProperty('hostKeys');
    expect(workflowSchema.parse(JSON.parse(JSON.stringify(old)))).toEqual(old);
    expect(parseOptions({ hostKeys: 'known', bastion: 'ops@[fd00:26::1]:2222' }).success).toBe(true);
    expect(parseOptions({ hostKeys: 'trust-me' }).success).toBe(false);
    expect(parseOptions({ bastion: '-oProxyCommand=x' }).success).toBe(false);
  });

  it('a resume uses what the workflow started with unless the run says; a new workflow records what the run said', () => {
    const bastion = parseBastion('ops@[fd00:26::1]:2222', '--bastion');
    const started = { ...fresh(), options: recordingRunReach(fresh().options, { hostKeys: 'known', bastion }) };
    expect(started.options).toMatchObject({ hostKeys: 'known', bastion: 'ops@[fd00:26::1]:2222' });
    const playUser = started.options.onboardUser;
    expect(runReach({}, started)).toEqual({ hostKeys: 'known', bastion, playUser });
    expect(runReach({ hostKeys: 'tofu' }, started)).toEqual({ hostKeys: 'tofu', bastion, playUser });
    expect(runReach({}, fresh())).toEqual({ hostKeys: 'auto', playUser });
    // The user configure logs in as: the run's bastion given without a user takes it (domain/bastion.ts).
    const deploying = { ...started, options: { ...started.options, remoteUser: 'deploy' } };
    expect(runReach({}, deploying).playUser).toBe('deploy');
    expect(recordingRunReach(fresh().options, {})).toEqual(fresh().options);
  });
});
