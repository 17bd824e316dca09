/**
 * The chain's jobs on GitHub (the root action, plan, apply and the per-step
 * actions): the action's inputs mapped into the core's JobSettings, and the
 * GitHub adapters added (the ledger through the token, the provider cache,
 * the status in GitHub's comment form, the step outputs). runCiJob
 * (src/app/job/) assembles and runs the job; no decision is made here.
 */
import * as core from '@actions/core';
import type { HostKeyMode } from '../../domain/host-trust.js';
import type { Workflow } from '../../domain/workflow.js';
import type { JobSettingsInput } from '../../app/job/job-settings.js';
import { runCiJob, type CiJobFace, type CiJobResult } from '../../app/job/run-ci-job.js';
import { parseMapping } from '../../app/plays/mappings.js';
import type { RunInputs } from '../../app/plays/run-inputs.js';
import type { AppContext } from '../../app/runtime/context.js';
import type { ActionName } from './inputs.js';
import { providerCache } from './provider-cache.js';
import {
  childEnvironment,
  githubLedger,
  KEY_INPUTS,
  BASTION_INPUT,
  publishedOutputs,
  runInputSettings,
  type Session,
} from './session.js';
import { planPreviewMarkdown, statusMarkdown, type StatusOptions } from './status.js';

/** The inputs a chain action may have, as action.yml names them. */
export interface ChainInputs {
  token: string;
  'workflow-id'?: string | undefined;
  'ledger-branch': string;
  'ledger-repository': string | undefined;
  'ledger-retry-for'?: number;
  comment: boolean;
  'tofu-binary'?: string | undefined;
  'allow-local-state'?: boolean;
  'allow-destroy'?: boolean;
  protect?: string[];
  'seal-key'?: string | undefined;
  'fleet-private-key'?: string | undefined;
  'bootstrap-private-key'?: string | undefined;
  'run-secrets'?: string | undefined;
  'rotate-host-keys'?: string[];
  'host-keys'?: HostKeyMode | undefined;
}

/** The inputs of an action that may start a workflow. */
export interface NewWorkflowInputs {
  workspace: string;
  playbook: string | undefined;
  'workspace-name': string | undefined;
  'ssh-wait': number;
  'onboard-playbook': string | undefined;
  'onboard-user': string;
  vars: string | undefined;
}

export interface ChainJob {
  /** What this job does, its approval and (plan, provision) the workflow it may start. */
  settings: Pick<JobSettingsInput, 'scope' | 'approval' | 'start' | 'preview'>;
  /** How the status says to decide a pending approval. */
  status?: Pick<StatusOptions, 'approvalMode' | 'approveWorkflow'>;
  /** The provider cache around the apply (the jobs that apply). */
  toolCache?: boolean;
  /** How the apply's provenance is attested (the `attest` input: attest.ts). */
  attestation?: RunInputs['attestation'];
}

/** Runs a chain job through the core; a code other than 0 fails the step (the error is logged already). */
export async function runChainJob(
  session: Session<ActionName>,
  inputs: ChainInputs,
  job: ChainJob,
): Promise<CiJobResult> {
  const ledger = githubLedger(session, inputs);
  const face: CiJobFace = {
    platform: session.platform,
    secrets: session.secrets,
    ledger: job.settings.preview ? { store: ledger.store } : ledger,
    progress: session.progress,
    cwd: session.run.workspace,
    env: childEnvironment(process.env),
    tempDir: session.scratch,
    interrupt: session.interrupt,
    now: session.now,
    ...(job.toolCache ? { toolCache: (app: AppContext) => providerCache(session, app) } : {}),
    statusMarkdown: (workflow, now, planView) =>
      statusMarkdown(workflow, { ...job.status, planView, run: session.run, now }),
    previewMarkdown: (preview) => planPreviewMarkdown(preview, session.run),
    published: (workflow: Workflow, app) => publishedOutputs(session, app, workflow),
    keyNames: KEY_INPUTS,
    bastionName: BASTION_INPUT,
    ...(job.attestation ? { attestation: job.attestation } : {}),
  };
  const result = await runCiJob({ ...job.settings, ...commonSettings(inputs) }, face);
  session.progress.flush();
  if (result.code !== 0) process.exitCode = core.ExitCode.Failure;
  return result;
}

function commonSettings(s: ChainInputs): Omit<JobSettingsInput, 'scope' | 'approval' | 'start'> {
  return {
    ...(s['workflow-id'] ? { workflowId: s['workflow-id'] } : {}),
    ...runInputSettings(s),
    rotateHostKeys: s['rotate-host-keys'] ?? [],
    ...(s['host-keys'] ? { hostKeys: s['host-keys'] } : {}),
    allowLocalState: s['allow-local-state'] ?? false,
    allowDestroy: s['allow-destroy'] ?? false,
    protect: s.protect ?? [],
    ledgerBranch: s['ledger-branch'],
    statusComment: s.comment,
  };
}

/** The workflow a plan or provision job starts when the ledger does not hold it yet. */
export function startSettings(s: NewWorkflowInputs, requireApproval: boolean): JobSettingsInput['start'] {
  return {
    workspace: s.workspace,
    ...(s['workspace-name'] ? { workspaceName: s['workspace-name'] } : {}),
    ...(s.playbook ? { playbook: s.playbook } : {}),
    ...(s['onboard-playbook'] ? { onboardPlaybook: s['onboard-playbook'] } : {}),
    onboardUser: s['onboard-user'],
    sshWaitMs: s['ssh-wait'],
    ...(s.vars ? { vars: parseMapping(s.vars, 'the vars input') } : {}),
    requireApproval,
  };
}

/** A per-step job (ssh-wait, onboard, configure): runs only `step`, after the step before it succeeded. */
export async function runOneStep(
  session: Session<'ssh-wait' | 'onboard' | 'configure'>,
  step: 'ssh-wait' | 'onboard' | 'configure',
): Promise<void> {
  await runChainJob(session, session.settings, { settings: { scope: step, approval: { mode: 'elsewhere' } } });
}
