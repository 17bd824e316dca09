/**
 * The one place a workflow moves forward, for every face (CLI, GitHub
 * actions, GitLab jobs): find or create the workflow record, pass its approval
 * gate, plan for approval, apply exactly the approved plan (the sealed saved
 * plan, or a re-plan whose fingerprint must match), run the chain, and say
 * what to publish. A face parses its inputs, calls this, and renders.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { makePrivateDir } from '../../adapters/private-dir.js';
import { describeError, ExocompError, failureHeadline } from '../../domain/errors.js';
import { recordPlanFailure, recordPlanRun, stepOf, type StepName, type Workflow } from '../../domain/workflow.js';
import { readWorkflow, requireWorkflow } from '../../ledger/records.js';
import { runChain } from './chain.js';
import type { AppContext } from '../runtime/context.js';
import { localHolder, type Holder } from '../runtime/lease.js';
import type { ApprovalGate } from '../ports/approval-gate.js';
import type { CiPlatform } from '../ports/ci-platform.js';
import { checkProvision, planForApproval, recordProvision, type ProvisionRequest } from './provision.js';
import { lookAheadToApply, type PlannedApply } from './apply-workspace.js';
import type { LookAhead } from './look-ahead.js';
import { recordingRunReach, type RunInputs } from '../plays/run-inputs.js';
import { downloadSealedPlan, planArtifactName, uploadSealedPlan } from './sealed-plan.js';
import { saveWorkflow } from './workflows.js';

/** A tool cache restored around the chain (e.g. tofu's provider plugins); `env` goes to tofu and the plays. */
export interface ToolCache {
  env: Record<string, string>;
  save(): Promise<void>;
}

export interface ContinueRequest {
  workflowId: string;
  /**
   * The workflow to create when the ledger does not hold it yet (built only
   * then, so inputs only a new workflow needs are checked only then); without
   * it, a missing workflow is an error.
   */
  create?: () => ProvisionRequest;
  /** `workflowId` was made for this run, so no workflow holds it: the ledger is not searched for one before creating it. */
  newId?: boolean;
  inputs: RunInputs;
  /** How a pending approval gets its decision; default: elsewhere (this run ends awaiting it). */
  gate?: ApprovalGate;
  /**
   * `chain` (default): every step left. `plan`: only plan for approval (a plan
   * job). A step name: that step only (a per-step job; its predecessor must
   * have succeeded).
   */
  scope?: 'chain' | 'plan' | StepName;
  /** The CI run this executes in: its lease holder, and the artifacts sealed plans travel by. Absent: a local process. */
  ci?: { platform: CiPlatform; scratch: string };
  /** Restored before the chain applies, saved after. */
  toolCache?: (workflow: Workflow) => Promise<ToolCache | undefined>;
  /** Called with the workflow whenever this run ends once the workflow is known, failures included (CI status). */
  publish?: (workflow: Workflow) => Promise<void>;
}

export type ContinueOutcome =
  | { kind: 'awaiting-approval'; workflow: Workflow }
  | { kind: 'rejected'; workflow: Workflow }
  /** The plan job is done: the plan awaits approval, or there was nothing to plan. */
  | { kind: 'planned'; workflow: Workflow }
  /** `startAgain`: how to start a new workflow here (the CI run's advice), for a failure only a new one gets past. */
  | { kind: 'ran'; workflow: Workflow; ok: boolean; startAgain?: string };

export async function continueWorkflow(app: AppContext, request: ContinueRequest): Promise<ContinueOutcome> {
  const scope = request.scope ?? 'chain';
  const holder = request.ci ? request.ci.platform.holder() : localHolder();
  // A new workflow no approval holds, run whole or from apply with nothing to restore first, is created with apply running.
  const straightIn = (scope === 'chain' || scope === 'apply') && request.toolCache === undefined;
  const found = await findOrCreate(app, request, straightIn ? holder : undefined);
  try {
    return await moveForward(app, request, scope, found, holder);
  } finally {
    // Not taken when the chain never reached the apply (it stopped first): its plan is removed.
    await found.plannedApply?.discard();
  }
}

/** Past finding or creating the workflow: its approval gate, the plan for approval, the chain. */
async function moveForward(
  app: AppContext,
  request: ContinueRequest,
  scope: NonNullable<ContinueRequest['scope']>,
  found: Found,
  holder: Holder,
): Promise<ContinueOutcome> {
  const publish = request.publish ?? (async () => undefined);
  const gate = request.gate ?? decidedElsewhere;
  let workflow = found.workflow;
  const ended = async (outcome: ContinueOutcome): Promise<ContinueOutcome> => {
    await publish(outcome.workflow);
    return outcome;
  };
  if (workflow.state === 'rejected') return ended({ kind: 'rejected', workflow });
  const pending = workflow.approval.required && workflow.approval.state === 'pending';

  if (scope === 'plan') {
    if (pending && (workflow.state === 'created' || workflow.state === 'awaiting-approval'))
      workflow = await orRecordPlanFailure(app, request, workflow, publish);
    else
      info(app, `workflow ${workflow.id} is ${workflow.state} (approval ${workflow.approval.state}): nothing to plan`);
    return ended({ kind: 'planned', workflow });
  }

  // Only a run that may apply asks the gate; a later step's job is refused by the chain until apply succeeded.
  if (pending && (scope === 'chain' || scope === 'apply')) {
    const decided = await orPublish(publish, workflow, () => gate.decideNow(app, workflow));
    if (decided) workflow = decided;
    else {
      // A plan job made the plan already when this run only applies.
      if (workflow.state === 'created' && scope === 'chain') workflow = await planAndShip(app, request, workflow);
      info(app, gate.howToDecide(workflow));
      const later = await gate.awaitDecision(app, workflow);
      if (!later) return ended({ kind: 'awaiting-approval', workflow });
      workflow = later;
      if (workflow.state === 'rejected') return ended({ kind: 'rejected', workflow });
    }
  }

  const applies = scope === 'chain' || scope === 'apply';
  const approved = applies
    ? await orPublish(publish, workflow, () => approvedPlanFile(app, request, workflow))
    : undefined;
  try {
    const cache = applies ? await request.toolCache?.(workflow) : undefined;
    const runApp = cache ? { ...app, env: { ...app.env, ...cache.env } } : app;
    const inputs = {
      ...request.inputs,
      ...(approved ? { savedPlanFile: approved.file } : {}),
      ...(found.plannedApply ? { plannedApply: found.plannedApply } : {}),
    };
    const result = await runChain(runApp, workflow.id, inputs, {
      holder,
      ...(request.ci ? { probe: request.ci.platform.probeHolder } : {}),
      ...(scope === 'chain' ? {} : { only: scope }),
      ...(found.applyStarted ? { seen: workflow, started: 'apply' as const } : {}),
    });
    await cache?.save();
    const startAgain = request.ci?.platform.run.startAgain;
    return ended({ kind: 'ran', workflow: result.workflow, ok: result.ok, ...(startAgain ? { startAgain } : {}) });
  } finally {
    // The unsealed plan holds sensitive values in clear: it does not outlive this run.
    if (approved) await rm(approved.dir, { recursive: true, force: true });
  }
}

/** The step's failure as an error, for a face that fails its job after publishing. */
export function failureOf(outcome: ContinueOutcome): ExocompError | undefined {
  if (outcome.kind === 'rejected') {
    return new ExocompError(
      'approval',
      `workflow ${outcome.workflow.id} was rejected by ${outcome.workflow.approval.by ?? 'a reviewer'}; nothing is applied`,
      {
        help: 'start a new workflow to try again',
      },
    );
  }
  if (outcome.kind !== 'ran' || outcome.ok) return undefined;
  const failure = outcome.workflow.failure;
  if (failure?.kind === 'approval' && !outcome.workflow.approval.required) {
    // The destroy guard refused a plan no approval binds: its summary says what lets it through.
    return new ExocompError('approval', `${failure.step} refused: ${failure.summary}`, {
      help: 'nothing was applied; once the run says what the refusal asks for, resume or re-run it',
    });
  }
  if (failure?.kind === 'approval') {
    // The approval covers a plan that no longer holds: running this workflow again can only refuse again.
    return new ExocompError('approval', `${failure.step} refused: ${failure.summary}`, {
      help: `nothing was applied; this workflow cannot apply any more. ${outcome.startAgain ?? 'Start a new workflow'}, so the current plan is reviewed and approved`,
    });
  }
  return new ExocompError(
    'tool-failed',
    failure
      ? `${failure.step} failed (${failure.kind}): ${failure.summary}`
      : `workflow ${outcome.workflow.id} did not finish`,
    {
      help: 'fix the cause and re-run the job: succeeded steps are skipped',
    },
  );
}

const decidedElsewhere: ApprovalGate = {
  mode: 'elsewhere',
  decideNow: async () => undefined,
  awaitDecision: async () => undefined,
  howToDecide: (workflow) => `workflow ${workflow.id} is awaiting approval`,
};

function info(app: AppContext, message: string): void {
  app.progress.emit({ type: 'info', message });
}

/** Publishes the workflow as it stands before a refusal propagates. */
async function orPublish<T>(
  publish: (workflow: Workflow) => Promise<void>,
  workflow: Workflow,
  work: () => Promise<T>,
): Promise<T> {
  try {
    return await work();
  } catch (error) {
    await publish(workflow);
    throw error;
  }
}

interface Found {
  workflow: Workflow;
  /** This run created it with apply running under its holder. */
  applyStarted: boolean;
  /** The apply's plan, made beside that creating write. */
  plannedApply?: LookAhead<PlannedApply>;
}

/**
 * The workflow, and whether this run created it with apply already running
 * under `startApplyAs` (only when no approval holds it). Then the apply's plan
 * is made while that first write is on its way: it changes nothing, so it need
 * not wait for the write (ADR 0017); the apply step takes it.
 */
async function findOrCreate(
  app: AppContext,
  request: ContinueRequest,
  startApplyAs: Holder | undefined,
): Promise<Found> {
  if (!request.newId) {
    const existing = readWorkflow(await app.store.read(), request.workflowId);
    if (existing) {
      if (request.create)
        info(
          app,
          `continuing workflow ${existing.id} (${existing.state}); its workspace and playbook come from the ledger`,
        );
      return { workflow: existing, applyStarted: false };
    }
  }
  if (!request.create)
    return { workflow: requireWorkflow(await app.store.read(), request.workflowId), applyStarted: false };
  // How the run reaches the hosts is recorded with the workflow: a resume that does not say reaches them the same way.
  const created = request.create();
  const provision = { ...created, options: recordingRunReach(created.options, request.inputs) };
  const starter = provision.requireApproval ? undefined : startApplyAs;
  await checkProvision(app, provision, request.inputs);
  const plannedApply = starter
    ? lookAheadToApply(app, {
        workspacePath: provision.workspacePath,
        ...(provision.options.vars ? { vars: provision.options.vars } : {}),
        tofuBinary: request.inputs.tofuBinary,
        ...(request.inputs.allowLocalState ? { allowLocalState: true } : {}),
        secrets: request.inputs.secrets,
      })
    : undefined;
  let workflow: Workflow;
  try {
    workflow = await recordProvision(app, provision, request.workflowId, starter);
  } catch (error) {
    await plannedApply?.discard();
    throw error;
  }
  app.progress.emit({ type: 'workflow-created', id: workflow.id, where: app.store.description });
  return { workflow, applyStarted: starter !== undefined, ...(plannedApply ? { plannedApply } : {}) };
}

/**
 * A plan job's plan, or its failure recorded (recordPlanFailure: `status` shows it, the sweeper leaves it,
 * a retried plan job plans again) and published before the error propagates. A failure to record it is
 * said, never put in place of the plan's own error.
 */
async function orRecordPlanFailure(
  app: AppContext,
  request: ContinueRequest,
  workflow: Workflow,
  publish: (workflow: Workflow) => Promise<void>,
): Promise<Workflow> {
  try {
    return await planAndShip(app, request, workflow);
  } catch (error) {
    const secrets = request.inputs.secrets;
    const summary = secrets.redact(failureHeadline(error));
    const detail = error instanceof ExocompError && error.detail ? { detail: secrets.redact(error.detail) } : {};
    const retryPlan = request.ci?.platform.run.retryPlan;
    const retry = retryPlan ? { retry: secrets.redact(retryPlan) } : {};
    try {
      const failed = await saveWorkflow(
        app,
        workflow.id,
        (w) => recordPlanFailure(w, app.now(), { summary, ...detail, ...retry }),
        `${workflow.id}: plan failed`,
      );
      await publish(failed);
    } catch (recording) {
      app.progress.emit({
        type: 'warning',
        message: secrets.redact(`could not record the plan's failure in the ledger: ${describeError(recording)}`),
      });
    }
    throw retryPlan && error instanceof ExocompError ? withRetry(error, retryPlan) : error;
  }
}

/** The plan's own error, its help ending on the job to retry. */
function withRetry(error: ExocompError, retry: string): ExocompError {
  return new ExocompError(error.kind, error.message, {
    help: error.help ? `${error.help}. ${retry}` : retry,
    cause: error,
    ...(error.detail === undefined ? {} : { detail: error.detail }),
    ...(error.hosts === undefined ? {} : { hosts: error.hosts }),
  });
}

/**
 * Plans and records `awaiting-approval`. On CI with a seal key, the saved plan
 * is sealed and uploaded as an artifact of this run, and the run recorded, so
 * the apply (a later job, or the continuation a dispatch starts) applies
 * exactly it. Without a seal key the apply re-plans and compares fingerprints.
 */
async function planAndShip(app: AppContext, request: ContinueRequest, workflow: Workflow): Promise<Workflow> {
  const ci = request.ci;
  const sealKey = request.inputs.sealKey;
  if (!ci?.platform.artifacts || sealKey === undefined) {
    // A warning (an annotation on the run's summary page), not a log line: the approved plan is not what the
    // apply job applies, and the reviewer should know before approving.
    if (ci)
      app.progress.emit({
        type: 'warning',
        message:
          'no seal key: the plan was not sealed for the apply job, which re-plans and compares with the approved plan (set EXOCOMP_SEAL_KEY)',
      });
    return planForApproval(app, workflow.id, request.inputs);
  }
  // A private directory of this process (0700, pid in its name): never a path another job shares.
  const dir = await makePrivateDir('plan', ci.scratch);
  const { id: runId, attempt } = ci.platform.run;
  try {
    const planFile = join(dir, 'exocomp.tfplan');
    await planForApproval(app, workflow.id, request.inputs, planFile);
    await uploadSealedPlan(ci.platform.artifacts, planFile, sealKey, workflow.id, dir, attempt);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  const shipped = await saveWorkflow(
    app,
    workflow.id,
    (w) => recordPlanRun(w, runId, app.now(), attempt),
    `${workflow.id}: sealed plan in run ${runId}`,
  );
  info(app, `uploaded the sealed plan for the apply job (an artifact of run ${runId})`);
  return shipped;
}

/**
 * The approved plan to apply, unsealed from the artifact of the run that made
 * it into a private directory the caller removes; undefined when the apply re-plans and compares with the approved
 * fingerprint instead (no seal key, or no sealed plan was shipped). With a
 * seal key, a shipped plan that cannot be found is a refusal, never a re-plan.
 */
async function approvedPlanFile(
  app: AppContext,
  request: ContinueRequest,
  workflow: Workflow,
): Promise<{ file: string; dir: string } | undefined> {
  const { planFingerprint, planRunId, planRunAttempt } = workflow.approval;
  // Nothing approved to bring, or applied already (a resume): the chain skips the apply.
  if (planFingerprint === undefined || stepOf(workflow, 'apply').state === 'succeeded') return undefined;
  const ci = request.ci;
  if (!ci?.platform.artifacts) return undefined;
  if (planRunId === undefined) {
    info(
      app,
      'the plan job shipped no sealed plan (it had no seal key): the apply re-plans and compares the plan with the one approved',
    );
    return undefined;
  }
  const sealKey = request.inputs.sealKey;
  if (sealKey === undefined) {
    info(app, 'no seal key: the apply re-plans and compares the plan with the one approved');
    return undefined;
  }
  const dir = await makePrivateDir('plan', ci.scratch);
  const file = await downloadSealedPlan(
    ci.platform.artifacts,
    planRunId,
    sealKey,
    workflow.id,
    dir,
    planRunAttempt,
  ).catch(async (error: unknown) => {
    await rm(dir, { recursive: true, force: true });
    throw error;
  });
  if (file === undefined) {
    await rm(dir, { recursive: true, force: true });
    throw new ExocompError(
      'approval',
      `approved plan artifact not found: run ${planRunId} holds no ${planArtifactName(workflow.id, planRunAttempt)} (it expired, or was deleted)`,
      {
        help: 'nothing was applied; start a new workflow so a fresh plan is reviewed (on GitHub, raise the plan job’s artifact-retention-days, default 7, when approvals take longer)',
      },
    );
  }
  const ofAttempt = planRunAttempt === undefined ? '' : `, attempt ${planRunAttempt}`;
  info(app, `applying the approved plan from the plan job (sealed artifact) of run ${planRunId}${ofAttempt}`);
  return { file, dir };
}
