/**
 * The provision workflow record and its state machine (docs/architecture.md, "The chain", "Leases"). Pure:
 * every transition takes the record and the facts it needs (time, lease
 * liveness) and returns a new record, or throws a typed error. Nothing here
 * writes anything; the chain runner persists each returned record before it acts.
 */
import { z } from 'zod';
import { ExocompError } from './errors.js';
import { recordNameProblem } from './names.js';
import { hostKeyModeSchema } from './host-trust.js';
import { bastionProblem } from './bastion.js';

export const STEP_NAMES = ['apply', 'ssh-wait', 'onboard', 'configure'] as const;
export type StepName = (typeof STEP_NAMES)[number];

export const STEP_STATES = ['pending', 'running', 'succeeded', 'failed', 'blocked'] as const;
export type StepState = (typeof STEP_STATES)[number];

export const WORKFLOW_STATES = [
  'created',
  'awaiting-approval',
  'provisioning',
  'provisioned',
  'provision-failed',
  'rejected',
] as const;
export type WorkflowState = (typeof WORKFLOW_STATES)[number];

export const WORKFLOW_SCHEMA_VERSION = 1;

/** Who holds a running step, and the proof of life the next runner judges it by. */
export const leaseSchema = z.object({
  holder: z.string().min(1),
  /** Where the holder runs: a local process (hostname + pid) or a CI run. */
  origin: z.discriminatedUnion('kind', [
    z.object({ kind: z.literal('local'), hostname: z.string(), pid: z.number().int() }),
    z.object({
      kind: z.literal('ci'),
      platform: z.literal('github'),
      repository: z.string(),
      runId: z.number().int(),
      runAttempt: z.number().int(),
    }),
    /** A GitLab job: alive while the Jobs API says it is not finished. */
    z.object({ kind: z.literal('gitlab'), project: z.string(), pipelineId: z.number().int(), jobId: z.number().int() }),
  ]),
  acquiredAt: z.string(),
  heartbeatAt: z.string(),
  ttlMs: z.number().int().positive(),
});
export type Lease = z.infer<typeof leaseSchema>;

export const stepSchema = z.object({
  name: z.enum(STEP_NAMES),
  state: z.enum(STEP_STATES),
  attempts: z.number().int().nonnegative(),
  startedAt: z.string().optional(),
  finishedAt: z.string().optional(),
  lease: leaseSchema.optional(),
  runUrl: z.string().optional(),
  detail: z.string().optional(),
  /** The attempts before the current one, oldest first (the last MAX_EARLIER_ATTEMPTS), for the timeline. */
  earlierAttempts: z
    .array(z.object({ startedAt: z.string(), endedAt: z.string(), outcome: z.enum(['failed', 'interrupted']) }))
    .optional(),
});
export type Step = z.infer<typeof stepSchema>;

export const MAX_EARLIER_ATTEMPTS = 20;

/** The attempt a step is about to leave behind when it starts again: failed (it finished) or interrupted (its holder vanished). */
function earlierAttemptsOf(step: Step, now: string): Step['earlierAttempts'] {
  if (step.startedAt === undefined) return step.earlierAttempts;
  const ended = step.finishedAt ?? step.lease?.heartbeatAt ?? now;
  const attempt = {
    startedAt: step.startedAt,
    endedAt: ended < step.startedAt ? step.startedAt : ended,
    outcome: step.finishedAt !== undefined ? ('failed' as const) : ('interrupted' as const),
  };
  return [...(step.earlierAttempts ?? []), attempt].slice(-MAX_EARLIER_ATTEMPTS);
}

export const failureSchema = z.object({
  step: z.enum(STEP_NAMES),
  kind: z.string(),
  summary: z.string(),
  /** Everything known beyond the summary (a play's failed hosts with message and output), redacted. */
  detail: z.string().optional(),
  /** Every host the failure concerns (the summary names at most ten). */
  hosts: z.array(z.string()).optional(),
  /** How to try again, as a sentence, where the run said (a failed plan: the job to retry). */
  retry: z.string().optional(),
  at: z.string(),
});
export type Failure = z.infer<typeof failureSchema>;

export const approvalSchema = z.object({
  required: z.boolean(),
  state: z.enum(['not-required', 'pending', 'approved', 'rejected']),
  by: z.string().optional(),
  at: z.string().optional(),
  via: z.string().optional(),
  comment: z.string().optional(),
  /** Hash of the normalized plan that was approved. */
  planFingerprint: z.string().optional(),
  planSummary: z.string().optional(),
  /** Fingerprint of the check-mode configure run against the hosts tf:<name> named at plan time: the approval binds it too. */
  configFingerprint: z.string().optional(),
  /** That preview: per host, the tasks that would change and their diffs (redacted). */
  configPreview: z.string().optional(),
  /** The CI run whose artifacts hold that plan's saved plan, sealed; unset when no sealed plan was shipped. */
  planRunId: z.number().int().optional(),
  /**
   * The attempt of that run which uploaded it (GitHub re-runs): a run's artifact names are unique across its
   * attempts, so each attempt's plan has its own. Unset in records made before attempts were recorded.
   */
  planRunAttempt: z.number().int().positive().optional(),
});
export type Approval = z.infer<typeof approvalSchema>;

export const triggerSchema = z.object({
  kind: z.enum(['local', 'github', 'gitlab']),
  runId: z.number().int().optional(),
  runAttempt: z.number().int().optional(),
  runUrl: z.string().optional(),
  sha: z.string().optional(),
  pullRequest: z.number().int().optional(),
  repository: z.string().optional(),
  workflowRef: z.string().optional(),
});
export type Trigger = z.infer<typeof triggerSchema>;

/** What the chain needs to run again on resume; never holds a secret. */
export const chainOptionsSchema = z.object({
  sshWaitMs: z.number().int().positive(),
  onboardPlaybook: z.string().optional(),
  onboardUser: z.string(),
  remoteUser: z.string().optional(),
  vars: z.record(z.string(), z.unknown()).optional(),
  check: z.boolean().default(false),
  limit: z.string().optional(),
  tags: z.string().optional(),
  /** The run's `host-keys` mode when the workflow started; absent (or written before it was kept): `auto`. */
  hostKeys: hostKeyModeSchema.optional(),
  /** The run's bastion when the workflow started, as formatBastion writes it; absent: none. */
  bastion: z
    .string()
    .refine((text) => bastionProblem(text) === undefined, 'not a bastion ([user@]host[:port])')
    .optional(),
});
export type ChainOptions = z.infer<typeof chainOptionsSchema>;

export const continuationSchema = z.object({
  /** When it was started. */
  at: z.string(),
  /** How many continuations were started since the workflow was approved (or its step was last armed). */
  dispatches: z.number().int().positive(),
  /** The run the CI platform said it started; absent where it does not say (GitHub Enterprise Server without `return_run_details`). */
  runId: z.number().int().optional(),
  runUrl: z.string().optional(),
});
export type Continuation = z.infer<typeof continuationSchema>;

export const workflowSchema = z.object({
  schemaVersion: z.literal(WORKFLOW_SCHEMA_VERSION),
  id: z.string().refine((id) => recordNameProblem(id) === undefined, 'not a record name'),
  workspace: z.object({ path: z.string(), name: z.string() }),
  playbook: z.string(),
  requester: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
  trigger: triggerSchema,
  options: chainOptionsSchema,
  approval: approvalSchema,
  state: z.enum(WORKFLOW_STATES),
  steps: z.array(stepSchema).length(STEP_NAMES.length),
  failure: failureSchema.optional(),
  /** The last run started to continue this workflow in CI (a dispatch-mode approval, the resume sweeper). */
  continuation: continuationSchema.optional(),
  /** Settings changed on resume (`provision resume --ssh-wait 10m`), oldest first. */
  overrides: z.array(z.object({ at: z.string(), setting: z.string(), from: z.string(), to: z.string() })).optional(),
});
export type Workflow = z.infer<typeof workflowSchema>;

export class IllegalTransitionError extends ExocompError {
  constructor(message: string, help?: string) {
    super('illegal-transition', message, help === undefined ? {} : { help });
    this.name = 'IllegalTransitionError';
  }
}

export class LeaseHeldError extends ExocompError {
  readonly lease: Lease;
  constructor(workflowId: string, step: StepName, lease: Lease) {
    super(
      'lease-held',
      `step ${step} of ${workflowId} is running under ${lease.holder} (heartbeat ${lease.heartbeatAt})`,
      {
        help: 'wait for that run to finish; a lease whose holder is gone or whose heartbeat expired is taken over automatically',
      },
    );
    this.name = 'LeaseHeldError';
    this.lease = lease;
  }
}

export interface NewWorkflow {
  id: string;
  workspace: { path: string; name: string };
  playbook: string;
  requester: string;
  trigger: Trigger;
  options: ChainOptions;
  requireApproval: boolean;
  now: Date;
}

export function createWorkflow(input: NewWorkflow): Workflow {
  const at = input.now.toISOString();
  return {
    schemaVersion: WORKFLOW_SCHEMA_VERSION,
    id: input.id,
    workspace: input.workspace,
    playbook: input.playbook,
    requester: input.requester,
    createdAt: at,
    updatedAt: at,
    trigger: input.trigger,
    options: input.options,
    approval: input.requireApproval ? { required: true, state: 'pending' } : { required: false, state: 'not-required' },
    state: 'created',
    steps: STEP_NAMES.map((name) => ({ name, state: 'pending', attempts: 0 })),
  };
}

/** Facts about a lease's holder that only I/O can establish, handed in by the caller. */
export interface LeaseFacts {
  /** True when the holder is known to be gone: its process exited, or its CI run completed. */
  holderGone?: boolean;
}

export type LeaseVerdict = 'live' | 'dead';

/**
 * The longest a CI job runs (GitHub stops a job after 6 hours; GitLab's
 * default is 1 hour): a CI lease nobody can judge is presumed dead after it.
 */
export const CI_LEASE_MAX_MS = 6 * 60 * 60_000;

/**
 * Whether the holder renews the lease with heartbeat commits. A CI job does
 * not: its run's status says whether it lives, so a long step costs the ledger
 * no commit every few seconds. A local process does.
 */
export function leaseNeedsHeartbeats(lease: Pick<Lease, 'origin'>): boolean {
  return lease.origin.kind !== 'ci';
}

/**
 * A lease is dead when its holder is known to be gone. Otherwise a local
 * holder lives while its heartbeat is younger than its TTL; a CI holder lives
 * while its run does, and — when nobody can ask the platform — at most
 * CI_LEASE_MAX_MS after it took the lease.
 */
export function judgeLease(lease: Lease, now: Date, facts: LeaseFacts = {}): LeaseVerdict {
  if (facts.holderGone === true) return 'dead';
  if (!leaseNeedsHeartbeats(lease)) {
    if (facts.holderGone === false) return 'live';
    return now.getTime() - Date.parse(lease.acquiredAt) > CI_LEASE_MAX_MS ? 'dead' : 'live';
  }
  const age = now.getTime() - Date.parse(lease.heartbeatAt);
  return age > lease.ttlMs ? 'dead' : 'live';
}

export function stepOf(workflow: Workflow, name: StepName): Step {
  const step = workflow.steps.find((s) => s.name === name);
  if (!step) throw new IllegalTransitionError(`workflow ${workflow.id} has no step ${name}`);
  return step;
}

function withStep(workflow: Workflow, name: StepName, change: (step: Step) => Step, now: Date): Workflow {
  return {
    ...workflow,
    updatedAt: now.toISOString(),
    steps: workflow.steps.map((s) => (s.name === name ? change(s) : s)),
  };
}

/** Records that the workflow waits for a decision before anything is applied. */
export function awaitApproval(
  workflow: Workflow,
  now: Date,
  plan?: { fingerprint: string; summary: string; configuration?: { fingerprint: string; preview: string } },
): Workflow {
  if (!workflow.approval.required) {
    throw new IllegalTransitionError(`workflow ${workflow.id} does not require approval`);
  }
  if (workflow.state !== 'created' && workflow.state !== 'awaiting-approval') {
    throw new IllegalTransitionError(
      `workflow ${workflow.id} is ${workflow.state}; only a created workflow can wait for approval`,
    );
  }
  if (workflow.approval.state !== 'pending') {
    throw new IllegalTransitionError(`workflow ${workflow.id} was already ${workflow.approval.state}`);
  }
  const approval: Approval = { ...workflow.approval };
  if (plan) {
    approval.planFingerprint = plan.fingerprint;
    approval.planSummary = plan.summary;
    delete approval.configFingerprint;
    delete approval.configPreview;
    if (plan.configuration) {
      approval.configFingerprint = plan.configuration.fingerprint;
      approval.configPreview = plan.configuration.preview;
    }
    // An earlier plan's artifact is not this plan's; recordPlanRun names the new one once it is shipped.
    delete approval.planRunId;
    delete approval.planRunAttempt;
  }
  const { failure, ...rest } = workflow;
  // A plan that succeeds clears the failure of the one before it.
  const kept = failure && failure.kind !== PLAN_FAILURE_KIND ? { failure } : {};
  return { ...rest, ...kept, state: 'awaiting-approval', approval, updatedAt: now.toISOString() };
}

/** The failure kind a plan for approval records: the workflow waits for a plan again, and takes no approval until one succeeds. */
export const PLAN_FAILURE_KIND = 'plan';

/**
 * A plan for approval failed (a plan job): recorded as the workflow's failure at `apply` (kind `plan`),
 * back to `created` with no plan to approve. It is retryable: the next plan for this workflow (the plan job
 * retried in the same pipeline) clears it; until then an approval is refused, as nobody saw a plan.
 */
export function recordPlanFailure(
  workflow: Workflow,
  now: Date,
  failure: { summary: string; detail?: string; retry?: string },
): Workflow {
  if (workflow.state !== 'created' && workflow.state !== 'awaiting-approval') {
    throw new IllegalTransitionError(
      `workflow ${workflow.id} is ${workflow.state}; only a workflow waiting for its plan records a plan failure`,
    );
  }
  const at = now.toISOString();
  const approval: Approval = { ...workflow.approval };
  for (const key of ['planFingerprint', 'planSummary', 'planRunId', 'configFingerprint', 'configPreview'] as const)
    delete approval[key];
  return {
    ...workflow,
    state: 'created',
    approval,
    updatedAt: at,
    failure: {
      step: 'apply',
      kind: PLAN_FAILURE_KIND,
      summary: failure.summary,
      ...(failure.detail ? { detail: failure.detail } : {}),
      ...(failure.retry ? { retry: failure.retry } : {}),
      at,
    },
  };
}

/**
 * The state a person reads: `plan-failed` for a workflow that waits for a plan again because its last one failed
 * (it stays `created`, ADR 0019), else the recorded state.
 */
export function shownState(workflow: { state: WorkflowState; failure?: Failure | null | undefined }): string {
  return workflow.state === 'created' && workflow.failure?.kind === PLAN_FAILURE_KIND ? 'plan-failed' : workflow.state;
}

/** Records the CI run whose artifacts hold the sealed saved plan of the plan awaiting approval. */
export function recordPlanRun(workflow: Workflow, runId: number, now: Date, runAttempt?: number): Workflow {
  if (workflow.approval.planFingerprint === undefined) {
    throw new IllegalTransitionError(`workflow ${workflow.id} recorded no plan, so no run holds its saved plan`);
  }
  const { planRunAttempt: _earlier, ...approval } = workflow.approval;
  return {
    ...workflow,
    approval: { ...approval, planRunId: runId, ...(runAttempt === undefined ? {} : { planRunAttempt: runAttempt }) },
    updatedAt: now.toISOString(),
  };
}

/**
 * Records the run started to continue the workflow (`run` when the platform
 * named it). `dispatches` counts the continuations started since the chain
 * last moved: the sweeper stops re-starting one that keeps ending without
 * starting the chain.
 */
export function recordContinuation(
  workflow: Workflow,
  run: { id: number; url: string } | undefined,
  now: Date,
): Workflow {
  const at = now.toISOString();
  const previous = workflow.continuation;
  const sinceMoved = previous !== undefined && !chainMovedSince(workflow, previous.at);
  const continuation: Continuation = {
    at,
    dispatches: sinceMoved ? previous.dispatches + 1 : 1,
    ...(run ? { runId: run.id, runUrl: run.url } : {}),
  };
  return { ...workflow, continuation, updatedAt: at };
}

/** Whether a step was armed after `since`: a continuation started before that has done its work. */
function chainMovedSince(workflow: Workflow, since: string): boolean {
  const time = Date.parse(since);
  return workflow.steps.some((step) => step.startedAt !== undefined && Date.parse(step.startedAt) > time);
}

export interface Decision {
  approve: boolean;
  by: string;
  via: string;
  comment?: string;
  now: Date;
}

export function decideApproval(workflow: Workflow, decision: Decision): Workflow {
  if (!workflow.approval.required) {
    throw new IllegalTransitionError(`workflow ${workflow.id} does not require approval`, 'nothing to decide');
  }
  if (workflow.approval.state !== 'pending') {
    throw new IllegalTransitionError(
      `workflow ${workflow.id} was already ${workflow.approval.state}${workflow.approval.by ? ` by ${workflow.approval.by}` : ''}`,
      'a decision is final; start a new workflow to change it',
    );
  }
  if (decision.approve && workflow.failure?.kind === PLAN_FAILURE_KIND) {
    throw new IllegalTransitionError(
      `workflow ${workflow.id} has no plan to approve: its plan failed (${workflow.failure.summary})`,
      'nothing was applied; fix the cause and plan again (retry the plan job), then approve what it shows',
    );
  }
  const at = decision.now.toISOString();
  const approval: Approval = {
    ...workflow.approval,
    state: decision.approve ? 'approved' : 'rejected',
    by: decision.by,
    at,
    via: decision.via,
  };
  if (decision.comment !== undefined) approval.comment = decision.comment;
  return {
    ...workflow,
    approval,
    state: decision.approve ? (workflow.state === 'awaiting-approval' ? 'created' : workflow.state) : 'rejected',
    updatedAt: at,
  };
}

/**
 * Arms a step: write-ahead, before the step does anything. A step runs only
 * when its predecessor succeeded; a running step whose lease is live refuses a
 * second runner; a dead lease is re-armed (attempts + 1).
 */
export function startStep(
  workflow: Workflow,
  name: StepName,
  lease: Lease,
  now: Date,
  facts: LeaseFacts = {},
): Workflow {
  if (workflow.state === 'rejected') {
    throw new IllegalTransitionError(`workflow ${workflow.id} was rejected; no step runs`);
  }
  if (workflow.state === 'provisioned') {
    throw new IllegalTransitionError(`workflow ${workflow.id} is already provisioned`);
  }
  if (workflow.state === 'provision-failed') {
    throw new IllegalTransitionError(
      `workflow ${workflow.id} failed at ${workflow.failure?.step ?? 'a step'}; it must be resumed before a step runs again`,
      `exocomp provision resume ${workflow.id}`,
    );
  }
  if (workflow.approval.required && workflow.approval.state !== 'approved') {
    throw new IllegalTransitionError(
      `workflow ${workflow.id} needs an approval before ${name} (approval is ${workflow.approval.state})`,
      `exocomp approval decide ${workflow.id} --approve`,
    );
  }
  const index = STEP_NAMES.indexOf(name);
  const previous = index > 0 ? workflow.steps[index - 1] : undefined;
  if (previous && previous.state !== 'succeeded') {
    throw new IllegalTransitionError(
      `step ${name} of ${workflow.id} cannot start: ${previous.name} is ${previous.state}, not succeeded`,
    );
  }
  const step = stepOf(workflow, name);
  switch (step.state) {
    case 'succeeded':
      throw new IllegalTransitionError(
        `step ${name} of ${workflow.id} already succeeded; a succeeded step never runs again`,
      );
    case 'failed':
    case 'blocked':
      throw new IllegalTransitionError(
        `step ${name} of ${workflow.id} is ${step.state}; resume the workflow to run it again`,
        `exocomp provision resume ${workflow.id}`,
      );
    case 'running': {
      if (!step.lease) break; // a running step without a lease can only come from a crash mid-write: re-arm
      if (step.lease.holder === lease.holder) {
        throw new IllegalTransitionError(`step ${name} of ${workflow.id} is already running under this holder`);
      }
      if (judgeLease(step.lease, now, facts) === 'live') throw new LeaseHeldError(workflow.id, name, step.lease);
      break;
    }
    case 'pending':
      break;
  }
  const at = now.toISOString();
  const armed = withStep(
    workflow,
    name,
    (s) => {
      const earlierAttempts = earlierAttemptsOf(s, at);
      const next: Step = {
        ...s,
        state: 'running',
        attempts: s.attempts + 1,
        startedAt: at,
        lease,
        ...(earlierAttempts ? { earlierAttempts } : {}),
      };
      delete next.finishedAt;
      delete next.detail;
      return next;
    },
    now,
  );
  return { ...armed, state: 'provisioning' };
}

function requireHolder(workflow: Workflow, name: StepName, holder: string): Step {
  const step = stepOf(workflow, name);
  if (step.state !== 'running') {
    throw new IllegalTransitionError(`step ${name} of ${workflow.id} is ${step.state}, not running`);
  }
  if (step.lease?.holder !== holder) {
    throw new IllegalTransitionError(
      `step ${name} of ${workflow.id} is held by ${step.lease?.holder ?? 'nobody'}, not ${holder}`,
      'another runner took over this step after this one was judged gone; this runner must stop',
    );
  }
  return step;
}

export function heartbeat(workflow: Workflow, name: StepName, holder: string, now: Date): Workflow {
  const step = requireHolder(workflow, name, holder);
  const lease = step.lease as Lease;
  return withStep(workflow, name, (s) => ({ ...s, lease: { ...lease, heartbeatAt: now.toISOString() } }), now);
}

export function succeedStep(workflow: Workflow, name: StepName, holder: string, now: Date, detail?: string): Workflow {
  requireHolder(workflow, name, holder);
  const at = now.toISOString();
  const next = withStep(
    workflow,
    name,
    (s) => {
      const done: Step = { ...s, state: 'succeeded', finishedAt: at };
      delete done.lease;
      if (detail !== undefined) done.detail = detail;
      return done;
    },
    now,
  );
  const allDone = next.steps.every((s) => s.state === 'succeeded');
  const result: Workflow = { ...next, state: allDone ? 'provisioned' : 'provisioning' };
  if (allDone) delete result.failure;
  return result;
}

/**
 * The step succeeded and the next one starts under `nextLease` in the same
 * transition, so the chain writes once between two steps, not twice. Only a
 * pending next step starts this way; after the last step, or when the next
 * one is not pending, this is the success alone (`started` is undefined).
 */
export function succeedAndStartNext(
  workflow: Workflow,
  name: StepName,
  holder: string,
  now: Date,
  detail: string | undefined,
  nextLease: Lease,
): { workflow: Workflow; started: StepName | undefined } {
  const done = succeedStep(workflow, name, holder, now, detail);
  const next = STEP_NAMES[STEP_NAMES.indexOf(name) + 1];
  if (next === undefined || stepOf(done, next).state !== 'pending') return { workflow: done, started: undefined };
  return { workflow: startStep(done, next, nextLease, now), started: next };
}

/** A failed step blocks every later step; the workflow keeps the failure context. */
export function failStep(
  workflow: Workflow,
  name: StepName,
  holder: string,
  now: Date,
  failure: { kind: string; summary: string; detail?: string; hosts?: readonly string[] },
): Workflow {
  requireHolder(workflow, name, holder);
  const at = now.toISOString();
  const index = STEP_NAMES.indexOf(name);
  return {
    ...workflow,
    updatedAt: at,
    state: 'provision-failed',
    failure: {
      step: name,
      kind: failure.kind,
      summary: failure.summary,
      ...(failure.detail ? { detail: failure.detail } : {}),
      ...(failure.hosts && failure.hosts.length > 0 ? { hosts: [...failure.hosts] } : {}),
      at,
    },
    steps: workflow.steps.map((s, i) => {
      if (s.name === name) {
        const failed: Step = { ...s, state: 'failed', finishedAt: at, detail: failure.summary };
        delete failed.lease;
        return failed;
      }
      return i > index ? { ...s, state: 'blocked' } : s;
    }),
  };
}

/** Re-opens a failed workflow from its failed step; succeeded steps stay succeeded. */
export function resumeWorkflow(workflow: Workflow, now: Date): Workflow {
  if (workflow.state !== 'provision-failed') {
    throw new IllegalTransitionError(
      `workflow ${workflow.id} is ${workflow.state}; only a failed workflow is resumed this way`,
      workflow.state === 'provisioning'
        ? 'a running step whose holder is gone is taken over by `exocomp provision resume` directly'
        : undefined,
    );
  }
  return {
    ...workflow,
    updatedAt: now.toISOString(),
    state: 'provisioning',
    steps: workflow.steps.map((s) => (s.state === 'failed' || s.state === 'blocked' ? { ...s, state: 'pending' } : s)),
  };
}

/** The first step that still has to run, or undefined when the chain is done. */
export function nextStep(workflow: Workflow): Step | undefined {
  return workflow.steps.find((s) => s.state !== 'succeeded');
}

/** What `provision resume` may change in a workflow before it continues. */
export interface ResumeOverrides {
  sshWaitMs?: number;
  playbook?: string;
}

/**
 * Applies resume overrides that differ from the record, noting each as a
 * change (`ssh-wait 5m → 10m`). Only a workflow that is not finished may be
 * changed; the returned list is empty when nothing differs.
 */
export function overrideWorkflow(
  workflow: Workflow,
  overrides: ResumeOverrides,
  now: Date,
  format: (ms: number) => string,
): { workflow: Workflow; changes: string[] } {
  const at = now.toISOString();
  const noted: NonNullable<Workflow['overrides']> = [];
  let next: Workflow = workflow;
  if (overrides.sshWaitMs !== undefined && overrides.sshWaitMs !== workflow.options.sshWaitMs) {
    noted.push({ at, setting: 'ssh-wait', from: format(workflow.options.sshWaitMs), to: format(overrides.sshWaitMs) });
    next = { ...next, options: { ...next.options, sshWaitMs: overrides.sshWaitMs } };
  }
  if (overrides.playbook !== undefined && overrides.playbook !== workflow.playbook) {
    noted.push({ at, setting: 'playbook', from: workflow.playbook, to: overrides.playbook });
    next = { ...next, playbook: overrides.playbook };
  }
  if (noted.length === 0) return { workflow, changes: [] };
  if (workflow.state === 'provisioned' || workflow.state === 'rejected') {
    throw new IllegalTransitionError(
      `workflow ${workflow.id} is ${workflow.state}; its settings cannot change`,
      'start a new workflow with provision run',
    );
  }
  return {
    workflow: { ...next, updatedAt: at, overrides: [...(workflow.overrides ?? []), ...noted] },
    changes: noted.map((n) => `${n.setting} ${n.from} → ${n.to}`),
  };
}
