/**
 * One CI job, assembled once for every face. A face (GitHub action, GitLab
 * job, a new CI platform) maps its environment into JobSettings and supplies
 * its CiPlatform and the ledger reached with its credential; this builds the
 * use-case context (always behind the secret guard), reads the key material
 * and secrets, builds the run inputs and the new-workflow request, chooses the
 * approval gate, moves the workflow forward (continueWorkflow), publishes the
 * status, and turns the outcome into an exit code.
 */
import { rm } from 'node:fs/promises';
import { DEFAULT_CERTIFICATE_LIFETIME_MS } from '../../domain/user-ca.js';
import { describeError, ExocompError, UsageError } from '../../domain/errors.js';
import { defaultWorkspaceName } from '../../domain/names.js';
import { reviewOnlyAdvice } from '../../domain/plan-applier.js';
import { configurationPreviewMarkdown, renderMarkdown, viewWorkflow } from '../../domain/render.js';
import type { Workflow } from '../../domain/workflow.js';
import type { PlanView } from '../../domain/plan-view.js';
import type { LedgerStore } from '../../ledger/store.js';
import { makePrivateDir } from '../../adapters/private-dir.js';
import { dispatchGate } from '../approval/gates/dispatch.js';
import { planViewToPublish } from '../approval/plan-view.js';
import { environmentGate } from '../approval/gates/environment.js';
import { manualJobGate } from '../approval/gates/manual-job.js';
import { privateKeyFile, sealKeyOf } from '../keys/key-material.js';
import type { RunInputs } from '../plays/run-inputs.js';
import type { ApprovalGate } from '../ports/approval-gate.js';
import type { CiPlatform } from '../ports/ci-platform.js';
import {
  continueWorkflow,
  failureOf,
  type ContinueOutcome,
  type ContinueRequest,
} from '../provision/continue-workflow.js';
import type { ProvisionRequest } from '../provision/provision.js';
import { planJob, type PlanJobOutcome } from '../provision/plan-job.js';
import type { AppContext } from '../runtime/context.js';
import { optionalCall } from '../runtime/optional-call.js';
import type { ProgressListener } from '../runtime/progress.js';
import { SecretGuardedStore } from '../runtime/secret-guarded-store.js';
import type { SecretRegistry } from '../runtime/secrets.js';
import { parseJobSettings, type JobSettings, type JobSettingsInput } from './job-settings.js';
import { parseBastion } from '../../domain/bastion.js';

/** What publishing a workflow's status needs of a face: a job's, or an action that only shows a status (approve, status). */
export type StatusPublisher = Pick<CiJobFace, 'platform' | 'secrets' | 'statusMarkdown' | 'published'>;

/** What a face supplies besides its settings. */
export interface CiJobFace {
  platform: CiPlatform;
  /** Every secret the face knows (its tokens); the job adds the keys and run-secrets. */
  secrets: SecretRegistry;
  /** The ledger reached with the job's credential; `preflight` proves it may push, so a missing right fails fast. */
  ledger: { store: LedgerStore; preflight?: () => Promise<void> };
  progress: ProgressListener;
  /** Where the job's files are: relative workspace and playbook paths start here. */
  cwd: string;
  /** What tofu and the plays get: the face has taken its own tokens out. */
  env: NodeJS.ProcessEnv;
  /** Under which the run's private directory (key copies, plans) is made and removed at the end. */
  tempDir: string;
  interrupt?: AbortSignal;
  now?: () => Date;
  /** A tool cache restored around the apply (GitHub's provider cache). */
  toolCache?: (app: AppContext) => NonNullable<ContinueRequest['toolCache']>;
  /** The status as markdown; default: the workflow's rendered view. */
  statusMarkdown?: (workflow: Workflow, now: Date, planView: PlanView | undefined) => string;
  /** What else the face publishes with the status (its own outputs, a report file). */
  published?: (workflow: Workflow, app: AppContext) => Promise<void>;
  /** A plan preview as markdown (the face's sticky-comment form); default: a plain view. */
  previewMarkdown?: (preview: PlanPreview) => string;
  /** Where each key came from, for messages (e.g. `the fleet-private-key input`); default: its role. */
  keyNames?: Partial<Record<KeyRole, string>>;
  /** Where the bastion comes from, for messages (`--bastion`, the bastion input). */
  bastionName?: string;
  /** How the apply's provenance is attested on this platform, when it can be. */
  attestation?: RunInputs['attestation'];
}

export type PlanPreview = Extract<PlanJobOutcome, { kind: 'previewed' }>;
type KeyRole = keyof JobSettings['keys'];

export interface CiJobResult {
  /** 0 also while the workflow awaits approval. */
  code: number;
  outcome?: ContinueOutcome;
  /** A preview job's plan (it recorded nothing). */
  preview?: PlanPreview;
}

/** Runs the job; nothing thrown escapes, and whatever is logged is redacted. */
export async function runCiJob(raw: JobSettingsInput, face: CiJobFace): Promise<CiJobResult> {
  const { platform, secrets } = face;
  let privateDir: string | undefined;
  try {
    const settings = parseJobSettings(raw);
    privateDir = await makePrivateDir('job', face.tempDir);
    const inputs = {
      ...(await readRunInputs(settings, { ...face, privateDir })),
      ...(face.attestation ? { attestation: face.attestation } : {}),
    };
    const app = jobContext(face, settings.ledgerBranch);
    if (settings.preview) return { code: 0, preview: await previewJob(settings, face, app, inputs, privateDir) };
    // Every input is read and checked by now; the first network call proves the ledger can be written.
    await face.ledger.preflight?.();
    // A plan job asks no gate, but its notice says how the gate of the job that applies is passed.
    const gate = gateFor(settings, platform);
    const appliesHere = settings.scope === 'apply' || settings.scope === 'chain';
    const outcome = await continueWorkflow(app, {
      workflowId: workflowIdOf(settings, platform),
      ...(startsWorkflow(settings) ? { create: () => newWorkflow(settings, platform) } : {}),
      inputs,
      ...(gate && appliesHere ? { gate } : {}),
      scope: settings.scope,
      ci: { platform, scratch: privateDir },
      ...(face.toolCache ? { toolCache: face.toolCache(app) } : {}),
      publish: (workflow) => publishStatus(face, app, workflow, { comment: settings.statusComment }),
    });
    if (outcome.workflow.state === 'awaiting-approval') {
      // A run without an apply job (a merge request's plan) names where the change is applied instead of a gate.
      const applier = settings.approval.applier;
      const advice =
        applier?.kind === 'none' ? reviewOnlyAdvice(applier, platform.run.url) : gate?.howToDecide(outcome.workflow);
      platform.log.notice(
        `workflow ${outcome.workflow.id} is awaiting approval; nothing was applied. ${advice ?? ''}`.trim(),
      );
    }
    const failure = failureOf(outcome);
    if (failure) throw failure;
    return { code: 0, outcome };
  } catch (error) {
    platform.log.error(secrets.redact(describeError(error)));
    return { code: error instanceof ExocompError ? error.exitCode : 1 };
  } finally {
    if (privateDir) await rm(privateDir, { recursive: true, force: true });
  }
}

/** The use-case context: the ledger always behind the secret guard, so no face can write a secret into a record. */
export function jobContext(
  face: Pick<CiJobFace, 'ledger' | 'secrets' | 'progress' | 'now' | 'cwd' | 'env' | 'interrupt'>,
  ledgerBranch: string,
): AppContext {
  const warn = (message: string) => face.progress.emit({ type: 'warning', message });
  return {
    store: new SecretGuardedStore(face.ledger.store, face.secrets, warn),
    ledgerBranch,
    now: face.now ?? (() => new Date()),
    cwd: face.cwd,
    env: face.env,
    progress: face.progress,
    ...(face.interrupt ? { interrupt: face.interrupt } : {}),
  };
}

/** What reading the run inputs needs: where relative paths start, the secrets, the run's private directory. */
export interface RunInputsSource {
  cwd: string;
  secrets: SecretRegistry;
  privateDir: string;
  keyNames?: Partial<Record<KeyRole, string>>;
  /** Where the bastion comes from, for messages (`--bastion`, the bastion input). */
  bastionName?: string;
  /** Told when a key file is readable by others (it works: the run uses its private copy). */
  warn?: (message: string) => void;
}

/**
 * The never-persisted run inputs, for a CI job and for a face's other jobs
 * (converge, drift): each key copied into the run's private directory, every
 * secret registered first.
 */
export async function readRunInputs(
  settings: Partial<
    Pick<
      JobSettings,
      | 'keys'
      | 'runSecrets'
      | 'rotateHostKeys'
      | 'tofuBinary'
      | 'allowLocalState'
      | 'allowDestroy'
      | 'protect'
      | 'hostKeys'
      | 'bastion'
      | 'fleetAuth'
      | 'certificateLifetimeMs'
      | 'certificateSourceAddress'
    >
  >,
  from: RunInputsSource,
): Promise<RunInputs> {
  const keys = settings.keys ?? {};
  const runSecrets = settings.runSecrets ?? {};
  const source = (role: KeyRole, given: string) => ({
    role: from.keyNames?.[role] ?? (role === 'userCa' ? 'the user CA key' : `the ${role} key`),
    given,
    cwd: from.cwd,
  });
  from.secrets.add(...Object.values(runSecrets));
  const sealKey = keys.seal === undefined ? undefined : await sealKeyOf(source('seal', keys.seal), from.secrets);
  const keyFile = (role: 'fleet' | 'bootstrap', name: string) => {
    const given = keys[role];
    return given === undefined
      ? undefined
      : privateKeyFile(source(role, given), from.privateDir, name, from.secrets, from.warn);
  };
  const fleetKeyPath = await keyFile('fleet', 'fleet-key');
  const bootstrapKeyPath = await keyFile('bootstrap', 'bootstrap-key');
  const caKeyPath =
    keys.userCa === undefined
      ? undefined
      : await privateKeyFile(source('userCa', keys.userCa), from.privateDir, 'user-ca-key', from.secrets, from.warn);
  return {
    ...(caKeyPath
      ? {
          userCa: {
            caKeyPath,
            privateDir: from.privateDir,
            lifetimeMs: settings.certificateLifetimeMs ?? DEFAULT_CERTIFICATE_LIFETIME_MS,
            secrets: from.secrets,
            sourceAddress: settings.certificateSourceAddress,
            issued: new Map(),
          },
        }
      : {}),
    ...(settings.fleetAuth ? { fleetAuth: settings.fleetAuth } : {}),
    ...(settings.tofuBinary ? { tofuBinary: settings.tofuBinary } : {}),
    ...(settings.allowLocalState ? { allowLocalState: true } : {}),
    ...(settings.allowDestroy ? { allowDestroy: true } : {}),
    ...(settings.protect && settings.protect.length > 0 ? { protect: settings.protect } : {}),
    ...(fleetKeyPath ? { fleetKeyPath } : {}),
    ...(bootstrapKeyPath ? { bootstrapKeyPath } : {}),
    ...(sealKey ? { sealKey } : {}),
    runSecrets,
    rotateHostKeys: settings.rotateHostKeys ?? [],
    ...(settings.hostKeys ? { hostKeys: settings.hostKeys } : {}),
    ...(settings.bastion ? { bastion: parseBastion(settings.bastion, from.bastionName ?? 'the bastion') } : {}),
    secrets: from.secrets,
  };
}

function workspaceNameOf(start: NonNullable<JobSettings['start']>): string {
  return start.workspaceName ?? defaultWorkspaceName(start.workspace);
}

/** The given workflow, or `<workspace name>-<run id>`: stable across re-runs of the run, so a re-run resumes it. */
function workflowIdOf(settings: JobSettings, platform: CiPlatform): string {
  if (settings.workflowId !== undefined) return settings.workflowId;
  if (settings.start === undefined)
    throw new UsageError(
      'no workflow to continue: no workflow id was given, and no workspace to start one',
      'give the workflow id (the plan job’s workflow-id output), or the workspace and playbook',
    );
  return `${workspaceNameOf(settings.start)}-${platform.run.id}`;
}

/** Only a job that plans or applies starts a workflow; a later step's job continues one. */
function startsWorkflow(settings: JobSettings): boolean {
  return settings.start !== undefined && ['plan', 'apply', 'chain'].includes(settings.scope);
}

/** The workflow this job starts; its files are checked with the rest of the provision checks, before the first write. */
function newWorkflow(settings: JobSettings, platform: CiPlatform): ProvisionRequest {
  const start = settings.start as NonNullable<JobSettings['start']>;
  if (start.playbook === undefined)
    throw new UsageError('starting a workflow needs the playbook', 'give the configure playbook (the playbook input)');
  return {
    workspacePath: start.workspace,
    workspaceName: workspaceNameOf(start),
    playbook: start.playbook,
    requireApproval: start.requireApproval ?? settings.approval.mode !== 'none',
    trigger: platform.run.trigger,
    requester: platform.run.actor,
    options: {
      sshWaitMs: start.sshWaitMs,
      onboardUser: start.onboardUser,
      ...(start.onboardPlaybook ? { onboardPlaybook: start.onboardPlaybook } : {}),
      ...(start.vars && Object.keys(start.vars).length > 0 ? { vars: start.vars } : {}),
      check: false,
    },
  };
}

/**
 * A preview: the plan (and the configure play in check mode) with no ledger
 * write, published to the run's summary and its pull/merge request's sticky
 * plan comment. Its token may be read-only, so no push access is proven.
 */
async function previewJob(
  settings: JobSettings,
  face: CiJobFace,
  app: AppContext,
  inputs: RunInputs,
  privateDir: string,
): Promise<PlanPreview> {
  const start = settings.start as NonNullable<JobSettings['start']>;
  const outcome = await planJob(app, {
    workflowId: workflowIdOf(settings, face.platform),
    inputs,
    ci: { platform: face.platform, scratch: privateDir },
    preview: {
      workspacePath: start.workspace,
      workspaceName: workspaceNameOf(start),
      vars: start.vars,
      playbook: start.playbook,
      remoteUser: start.onboardUser,
    },
  });
  if (outcome.kind !== 'previewed') throw new Error('a preview job recorded a plan');
  const { platform, secrets } = face;
  const body = secrets.redact(face.previewMarkdown?.(outcome) ?? previewText(outcome, platform));
  await optionalCall(platform.log, secrets, { skipped: 'no run summary', grant: undefined }, () =>
    platform.writeSummary(body),
  );
  const changeRequest = settings.statusComment ? platform.run.changeRequest : undefined;
  if (changeRequest !== undefined) await upsertComment(face, changeRequest, `plan-${outcome.workspaceName}`, body);
  return outcome;
}

function previewText(preview: PlanPreview, platform: CiPlatform): string {
  const { configuration } = preview;
  return [
    `### exocomp plan for \`${preview.workspaceName}\``,
    '',
    `Plan: ${preview.planSummary} · fingerprint \`${preview.planFingerprint.slice(0, 16)}\``,
    '',
    ...(configuration.kind === 'previewed'
      ? configurationPreviewMarkdown(configuration.fingerprint, configuration.preview)
      : [`_Configuration: ${configuration.reason}._`]),
    '',
    `<sub>[run ${platform.run.id}](${platform.run.url}) · plan only, nothing recorded or applied</sub>`,
  ].join('\n');
}

/** The gate of the job that applies; none where the decision is made elsewhere (a later step). */
function gateFor(settings: JobSettings, platform: CiPlatform): ApprovalGate | undefined {
  const { mode, environment, selfApproval, job, applier } = settings.approval;
  switch (mode) {
    case 'environment':
      return environmentGate(platform, environment, selfApproval === 'warn' ? 'warn' : 'refuse');
    case 'manual':
      return manualJobGate(platform, {
        startedByPerson: job?.startedByHand ?? false,
        allowSelfApproval: selfApproval === 'allow',
        jobName: job?.name ?? 'job',
        applyJob: applier?.kind === 'job' ? applier.job : (job?.name ?? 'job'),
      });
    case 'dispatch':
      return dispatchGate();
    case 'none':
    case 'elsewhere':
      return undefined;
  }
}

// GitLab's note limit is 1,000,000 characters; the view is cut well below it so a note stays readable.
const MR_NOTE_PLAN_VIEW_LIMIT = 40_000;

/**
 * The status, whenever the job ends once the workflow is known: the outputs
 * every face has, the run's summary, the sticky comment on its pull/merge
 * request, then the face's own extras. Everything after the outputs is optional.
 */
export async function publishStatus(
  face: StatusPublisher,
  app: AppContext,
  workflow: Workflow,
  options: { comment: boolean },
): Promise<void> {
  const { platform, secrets } = face;
  platform.setOutput('workflow-id', workflow.id);
  platform.setOutput('workflow-state', workflow.state);
  const now = app.now();
  const planView = await planViewToPublish(app, workflow.id, (message) =>
    platform.log.warning(secrets.redact(message)),
  );
  const body = secrets.redact(
    face.statusMarkdown?.(workflow, now, planView) ??
      renderMarkdown(viewWorkflow(workflow, now), { planView, planViewLimit: MR_NOTE_PLAN_VIEW_LIMIT }),
  );
  await optionalCall(platform.log, secrets, { skipped: 'no run summary', grant: undefined }, () =>
    platform.writeSummary(body),
  );
  const changeRequest = options.comment ? await changeRequestOf(face, workflow) : undefined;
  const commentUrl =
    changeRequest === undefined ? undefined : await upsertComment(face, changeRequest, workflow.id, body);
  // Where a reviewer reads the status (e.g. a deployment's environment url): the comment, else the run's summary.
  platform.setOutput('status-url', commentUrl ?? platform.run.url);
  await face.published?.(workflow, app);
}

/** The sticky comment `key` (optional: a refusal or a failure is a notice, the job goes on); its url when it has one. */
async function upsertComment(
  face: StatusPublisher,
  changeRequest: number,
  key: string,
  body: string,
): Promise<string | undefined> {
  const { platform, secrets } = face;
  const outcome = await optionalCall(
    platform.log,
    secrets,
    { skipped: `no status comment on ${changeRequest}`, grant: platform.grants?.['status-comment'] },
    () => platform.upsertStatusComment(changeRequest, key, body),
  );
  if (outcome?.kind === 'refused') {
    const grant = platform.grants?.['status-comment'];
    const fix = grant ? `; to get it, grant ${grant}` : '';
    platform.log.notice(secrets.redact(`${outcome.reason}: the status is in the job summary instead${fix}`));
  } else if (outcome) {
    platform.log.info(`${outcome.kind} the status comment on ${changeRequest}`);
    return outcome.url;
  }
  return undefined;
}

const changeRequests = new WeakMap<StatusPublisher, Promise<number | undefined>>();

/**
 * The run's pull/merge request, else the one the workflow was started from (a
 * continuation), else looked up once per job (optional).
 */
function changeRequestOf(face: StatusPublisher, workflow: Workflow): Promise<number | undefined> {
  const { platform } = face;
  const known = platform.run.changeRequest ?? workflow.trigger.pullRequest;
  if (known !== undefined || !platform.findChangeRequest) return Promise.resolve(known);
  let found = changeRequests.get(face);
  if (!found) {
    const lookup = platform.findChangeRequest;
    found = optionalCall(
      platform.log,
      face.secrets,
      {
        skipped: 'no status comment: its pull/merge request could not be looked up',
        grant: platform.grants?.['change-request-lookup'],
      },
      () => lookup(),
    );
    changeRequests.set(face, found);
  }
  return found;
}
