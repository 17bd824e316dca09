/**
 * What `exocomp gitlab plan|apply|resume` does inside a GitLab job: read the
 * job's settings from CI/CD variables (the templates set them from their spec
 * inputs) once, build the CI-platform port and the ledger reached with the
 * job's credential, and map the variables into the core's JobSettings:
 * runCiJob (src/app/job/) assembles and runs the job, publishes the status
 * (dotenv outputs, the log, the sticky MR note) and says the exit code. The
 * decisions stay in the core.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { describeError, ExocompError } from '../../domain/errors.js';
import { parseDuration } from '../../domain/duration.js';
import { KEY_VARIABLES, USER_CA_KEY_VARIABLE } from '../../domain/key-variables.js';
import { fleetAuthModeSchema } from '../../domain/user-ca.js';
import { HOST_KEY_MODES } from '../../domain/host-trust.js';
import { defaultWorkspaceName, parseWorkspaceName, workflowIdProblem } from '../../domain/names.js';
import { codeQualityReport, type TofuDiagnostic } from '../../domain/tofu-diagnostics.js';
import type { Workflow } from '../../domain/workflow.js';
import type { PlanApplier } from '../../domain/plan-applier.js';
import { jobContext, runCiJob, type CiJobFace } from '../../app/job/run-ci-job.js';
import type { JobSettingsInput } from '../../app/job/job-settings.js';
import type { CiPlatform } from '../../app/ports/ci-platform.js';
import { sweepInterrupted } from '../../app/provision/interrupted.js';
import { SecretRegistry } from '../../app/runtime/secrets.js';
import { DEFAULT_LEDGER_BRANCH } from '../../ledger/git-store.js';
import { GitLabApi, GITLAB_TOKEN_VARIABLE } from './api.js';
import { readGitLabJob, type GitLabJob } from './job.js';
import { LEDGER_TOKEN_VARIABLE, openGitLabLedger } from './ledger.js';
import { createGitLabLog, type GitLabLog } from './log.js';
import { gitlabPlatform } from './platform.js';
import { GitLabProgress } from './progress.js';
import { warnAboutGitLabGate, type GitLabSetupTarget } from './setup.js';
import { findMergeRequest } from './status-note.js';
import { gitlabStateEnv } from './tofu-state.js';

export type GitLabJobKind = 'plan' | 'apply' | 'configure' | 'resume' | 'sweep';

const flag = z
  .enum(['true', 'false'])
  .default('false')
  .transform((v) => v === 'true');
const settingsSchema = z.object({
  EXOCOMP_WORKSPACE: z.string().optional(),
  EXOCOMP_PLAYBOOK: z.string().optional(),
  EXOCOMP_WORKSPACE_NAME: z.string().optional(),
  EXOCOMP_WORKFLOW_ID: z
    .string()
    .superRefine((id, ctx) => {
      const problem = workflowIdProblem(id);
      if (problem !== undefined) ctx.addIssue({ code: 'custom', message: `not a workflow id: ${problem}` });
    })
    .optional(),
  EXOCOMP_APPROVAL: z.enum(['none', 'manual', 'environment']).default('manual'),
  EXOCOMP_ENVIRONMENT: z.string().optional(),
  /** The job of this pipeline that applies the plan job's plan (provision.yml: `<prefix>apply`); unset: none. */
  EXOCOMP_APPLY_JOB: z.string().optional(),
  EXOCOMP_ALLOW_SELF_APPROVAL: flag,
  EXOCOMP_LEDGER_BRANCH: z.string().default(DEFAULT_LEDGER_BRANCH),
  EXOCOMP_LEDGER_PROJECT: z.string().optional(),
  EXOCOMP_STATE: z.enum(['local', 'gitlab']).default('local'),
  EXOCOMP_ALLOW_LOCAL_STATE: flag,
  EXOCOMP_ALLOW_DESTROY: flag,
  /** Protect patterns, comma- or newline-separated. */
  EXOCOMP_PROTECT: z
    .string()
    .default('')
    .transform((v) =>
      v
        .split(/[\n,]/)
        .map((item) => item.trim())
        .filter((item) => item !== ''),
    ),
  // Empty: the mode the workflow started with (the resume template's default).
  EXOCOMP_HOST_KEYS: z
    .enum(['', ...HOST_KEY_MODES])
    .optional()
    .transform((mode) => mode || undefined),
  /** Judged by the core's run-input reader (domain/bastion.ts). */
  EXOCOMP_BASTION: z.string().optional(),
  EXOCOMP_SSH_WAIT: z.string().default('5m'),
  EXOCOMP_ONBOARD_USER: z.string().default('exocomp'),
  EXOCOMP_TOFU_BINARY: z.string().optional(),
  [KEY_VARIABLES.fleet]: z.string().optional(),
  [KEY_VARIABLES.bootstrap]: z.string().optional(),
  [KEY_VARIABLES.seal]: z.string().optional(),
  /** The user CA (docs/keys.md "User CA"): a masked variable or File, like the keys above. */
  [USER_CA_KEY_VARIABLE]: z.string().optional(),
  EXOCOMP_FLEET_AUTH: fleetAuthModeSchema.optional(),
  EXOCOMP_CERTIFICATE_LIFETIME: z.string().optional(),
  EXOCOMP_MR_NOTE: z
    .enum(['true', 'false'])
    .default('true')
    .transform((v) => v === 'true'),
  CI_JOB_MANUAL: flag,
});
export type GitLabSettings = z.infer<typeof settingsSchema>;

/** Reads the settings; an empty variable is an unset one (templates pass empty inputs as ''). */
export function readGitLabSettings(env: NodeJS.ProcessEnv): GitLabSettings {
  const given = Object.fromEntries(
    Object.entries(env).filter(([k, v]) => (k.startsWith('EXOCOMP_') || k === 'CI_JOB_MANUAL') && v !== ''),
  );
  const parsed = settingsSchema.safeParse(given);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ExocompError(
      'usage',
      `the CI/CD variable ${String(issue?.path[0] ?? '?')} is not valid: ${issue?.message ?? 'bad value'}`,
      {
        help: 'check the template inputs that set it',
      },
    );
  }
  return parsed.data;
}

/** Runs one job; returns the exit code (0 also while awaiting approval). Nothing thrown escapes unredacted. */
export async function runGitLabJob(kind: GitLabJobKind, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const secrets = new SecretRegistry();
  secrets.add(
    env.CI_JOB_TOKEN,
    env[GITLAB_TOKEN_VARIABLE],
    env[LEDGER_TOKEN_VARIABLE],
    env[KEY_VARIABLES.seal],
    env[USER_CA_KEY_VARIABLE],
  );
  const log = createGitLabLog(secrets);
  const progress = new GitLabProgress(log);
  try {
    const settings = readGitLabSettings(env);
    const job = readGitLabJob(env);
    const accessToken = env[GITLAB_TOKEN_VARIABLE] || undefined;
    // The REST API at CI_API_V4_URL; CI_SERVER_URL stays for what is the server's (git, web pages).
    const api = new GitLabApi(job.apiUrl, { jobToken: job.jobToken, accessToken }, secrets);
    const platform = jobPlatform(job, api, settings, env, secrets, log);
    const branch = settings.EXOCOMP_LEDGER_BRANCH;
    // One clock for the use cases and the ledger's commit dates.
    const now = () => new Date();
    const ledger = openGitLabLedger({ job, branch, ledgerProject: settings.EXOCOMP_LEDGER_PROJECT, env, secrets, now });
    const name = workspaceNameOf(settings);
    const stateEnv = settings.EXOCOMP_STATE === 'gitlab' ? gitlabStateEnv(job, name ?? 'default') : {};
    const face: CiJobFace = {
      platform,
      secrets,
      ledger: kind === 'sweep' ? { store: ledger.store } : ledger,
      progress,
      cwd: job.projectDir,
      env: { ...withoutTokens(env), ...stateEnv },
      tempDir: job.tempDir,
      now,
      published: async (workflow) => writeTerraformReport(kind, job.projectDir, workflow),
      bastionName: 'the bastion input (EXOCOMP_BASTION)',
    };
    if (kind === 'sweep') return await sweep(face, branch, log);
    // The apply job is the gate: it says first when the protections that make it meaningful are off.
    const warnAboutGate = () =>
      warnAboutGitLabGate(api.optional(), gateSetupTarget(settings, job), { log, secrets, now: now() });
    if (kind === 'apply' && settings.EXOCOMP_APPROVAL !== 'none') await warnAboutGate();
    const result = await runCiJob(jobSettingsOf(kind, settings, job, name), face);
    // A recorded plan awaits that gate (in this pipeline or the default branch's): the same warnings.
    if (
      kind === 'plan' &&
      result.outcome?.workflow.state === 'awaiting-approval' &&
      settings.EXOCOMP_APPROVAL !== 'none'
    )
      await warnAboutGate();
    return result.code;
  } catch (error) {
    log.error(describeError(error));
    return error instanceof ExocompError ? error.exitCode : 1;
  } finally {
    // The job's directory (readGitLabJob's projectDir): diagnostics name their files relative to it.
    if (kind === 'plan' || kind === 'apply' || kind === 'resume')
      writeCodeQualityReport(process.cwd(), progress.diagnostics, log);
  }
}

/** The jobs' `reports: codequality` file: tofu's diagnostics on their files and lines in the merge request. */
export const CODE_QUALITY_REPORT_FILE = 'exocomp-code-quality.json';

/**
 * Written by every job that may run tofu (plan, apply, resume), empty when tofu said nothing, so the report GitLab reads is this
 * job's (the templates upload it also when the job fails). A report that cannot be written is a warning.
 */
export function writeCodeQualityReport(
  projectDir: string,
  diagnostics: readonly TofuDiagnostic[],
  log: GitLabLog,
): void {
  try {
    writeFileSync(join(projectDir, CODE_QUALITY_REPORT_FILE), `${JSON.stringify(codeQualityReport(diagnostics))}\n`);
  } catch (error) {
    log.warning(`the code-quality report was not written: ${(error as Error).message}`);
  }
}

/** The platform port of this job; the merge request of a push pipeline is looked up only for the status note. */
function jobPlatform(
  job: GitLabJob,
  api: GitLabApi,
  settings: GitLabSettings,
  env: NodeJS.ProcessEnv,
  secrets: SecretRegistry,
  log: GitLabLog,
): CiPlatform {
  const allowSelfApproval = settings.EXOCOMP_ALLOW_SELF_APPROVAL;
  const mergeRequestIid = job.mergeRequestIid;
  return {
    ...gitlabPlatform({ job, api, log, secrets, env, mergeRequestIid, allowSelfApproval }),
    findChangeRequest: () => findMergeRequest(api.optional(), job.projectId, job),
    grants: { 'status-comment': STATUS_NOTE_GRANT, 'change-request-lookup': STATUS_NOTE_GRANT },
  };
}

/** What the status note needs on GitLab (the job token may not write notes). */
const STATUS_NOTE_GRANT = `${GITLAB_TOKEN_VARIABLE}, an access token with the api scope and at least the Reporter role`;

function workspaceNameOf(settings: GitLabSettings): string | undefined {
  if (settings.EXOCOMP_WORKSPACE_NAME) return parseWorkspaceName(settings.EXOCOMP_WORKSPACE_NAME);
  return settings.EXOCOMP_WORKSPACE ? defaultWorkspaceName(settings.EXOCOMP_WORKSPACE) : undefined;
}

/**
 * The job's CI/CD variables as the core's settings. The plan job starts the
 * workflow (or the apply job, when nobody approves); the apply job asks the
 * gate; configure and resume continue what the ledger holds.
 */
function jobSettingsOf(
  kind: Exclude<GitLabJobKind, 'sweep'>,
  settings: GitLabSettings,
  job: GitLabJob,
  workspaceName: string | undefined,
): JobSettingsInput {
  const starts = kind === 'plan' || (kind === 'apply' && settings.EXOCOMP_APPROVAL === 'none');
  return {
    scope: kind === 'plan' ? 'plan' : kind === 'apply' ? 'apply' : 'chain',
    ...(settings.EXOCOMP_WORKFLOW_ID ? { workflowId: settings.EXOCOMP_WORKFLOW_ID } : {}),
    ...(starts && settings.EXOCOMP_WORKSPACE
      ? {
          start: {
            workspace: settings.EXOCOMP_WORKSPACE,
            ...(workspaceName ? { workspaceName } : {}),
            ...(settings.EXOCOMP_PLAYBOOK ? { playbook: settings.EXOCOMP_PLAYBOOK } : {}),
            onboardUser: settings.EXOCOMP_ONBOARD_USER,
            sshWaitMs: parseDuration(settings.EXOCOMP_SSH_WAIT),
          },
        }
      : {}),
    approval: {
      // The plan job names the apply job's gate in its notice; configure and resume never decide.
      mode:
        kind === 'apply' || kind === 'plan'
          ? settings.EXOCOMP_APPROVAL
          : settings.EXOCOMP_APPROVAL === 'none'
            ? 'none'
            : 'elsewhere',
      ...(settings.EXOCOMP_ENVIRONMENT || job.environment
        ? { environment: settings.EXOCOMP_ENVIRONMENT ?? job.environment }
        : {}),
      selfApproval: settings.EXOCOMP_ALLOW_SELF_APPROVAL ? 'allow' : 'refuse',
      job: { name: job.jobName, startedByHand: settings.CI_JOB_MANUAL },
      ...(kind === 'plan' ? { applier: planApplierOf(settings, job) } : {}),
    },
    keys: {
      ...(settings[KEY_VARIABLES.fleet] ? { fleet: settings[KEY_VARIABLES.fleet] } : {}),
      ...(settings[KEY_VARIABLES.bootstrap] ? { bootstrap: settings[KEY_VARIABLES.bootstrap] } : {}),
      ...(settings[KEY_VARIABLES.seal] ? { seal: settings[KEY_VARIABLES.seal] } : {}),
      ...(settings[USER_CA_KEY_VARIABLE] ? { userCa: settings[USER_CA_KEY_VARIABLE] } : {}),
    },
    ...(settings.EXOCOMP_FLEET_AUTH ? { fleetAuth: settings.EXOCOMP_FLEET_AUTH } : {}),
    ...(settings.EXOCOMP_CERTIFICATE_LIFETIME
      ? { certificateLifetimeMs: parseDuration(settings.EXOCOMP_CERTIFICATE_LIFETIME) }
      : {}),
    ...(settings.EXOCOMP_TOFU_BINARY ? { tofuBinary: settings.EXOCOMP_TOFU_BINARY } : {}),
    allowLocalState: settings.EXOCOMP_ALLOW_LOCAL_STATE,
    allowDestroy: settings.EXOCOMP_ALLOW_DESTROY,
    protect: settings.EXOCOMP_PROTECT,
    ...(settings.EXOCOMP_HOST_KEYS ? { hostKeys: settings.EXOCOMP_HOST_KEYS } : {}),
    ...(settings.EXOCOMP_BASTION ? { bastion: settings.EXOCOMP_BASTION } : {}),
    ledgerBranch: settings.EXOCOMP_LEDGER_BRANCH,
    statusComment: settings.EXOCOMP_MR_NOTE,
  };
}

/**
 * What the gate's warnings check: this project's default branch (manual) or the apply job's environment, and the
 * ledger's record branches (in the ledger's project, when another). A plan.yml job names no environment:
 * provision.yml's default (`production`) is the one its default branch's apply job deploys to unless the user chose
 * another.
 */
function gateSetupTarget(settings: GitLabSettings, job: GitLabJob): GitLabSetupTarget {
  return {
    project: job.projectPath,
    approvalMode: settings.EXOCOMP_APPROVAL === 'environment' ? 'environment' : 'manual',
    environment: settings.EXOCOMP_ENVIRONMENT ?? job.environment ?? 'production',
    ledgerBranch: settings.EXOCOMP_LEDGER_BRANCH,
    ...(settings.EXOCOMP_LEDGER_PROJECT ? { ledgerProject: settings.EXOCOMP_LEDGER_PROJECT } : {}),
  };
}

/**
 * Which job applies the plan job's plan. The pipeline's jobs are not something a job can list (the job token reaches
 * no Jobs or Pipelines API), so the template says: provision.yml names its apply job, plan.yml none unless the user
 * adds one (its apply-job input). With none, the default branch's provision pipeline applies the merged change.
 */
function planApplierOf(settings: GitLabSettings, job: GitLabJob): PlanApplier {
  if (settings.EXOCOMP_APPLY_JOB) return { kind: 'job', job: settings.EXOCOMP_APPLY_JOB };
  return {
    kind: 'none',
    ...(job.defaultBranch ? { defaultBranch: job.defaultBranch } : {}),
    ...(job.mergeRequestIid ? { changeRequest: `merge request !${job.mergeRequestIid}` } : {}),
  };
}

/**
 * The sweeper (a scheduled job): every workflow whose step a GitLab job held
 * that has finished without finishing the step is continued in a new pipeline
 * (the pipeline trigger API, EXOCOMP_WORKFLOW_ID), which the resume template's
 * job runs. A live holder, or one that cannot be judged, is left alone.
 */
async function sweep(face: CiJobFace, ledgerBranch: string, log: GitLabLog): Promise<number> {
  const entries = await sweepInterrupted(jobContext(face, ledgerBranch), face.platform);
  for (const { id, step, action, target, ref } of entries) {
    if (action === 'dispatched') log.info(`${id}: ${step} was interrupted; continued in ${target} on ${ref}`);
    else log.info(`${id}: ${step} is held by a ${action === 'live' ? 'running' : 'possibly running'} job; left alone`);
  }
  if (entries.length === 0) log.info('no workflow is held by a GitLab job');
  return 0;
}

/** The plan job's `reports: terraform` file: the merge request widget shows its counts. */
export const TERRAFORM_REPORT_FILE = 'exocomp-plan.json';

/** `+1 ~0 -2` (the recorded plan summary) as GitLab's terraform report: { create, update, delete }. */
export function terraformReport(
  summary: string | undefined,
): { create: number; update: number; delete: number } | undefined {
  const match = /^\+(\d+) ~(\d+) -(\d+)$/.exec(summary ?? '');
  return match ? { create: Number(match[1]), update: Number(match[2]), delete: Number(match[3]) } : undefined;
}

/** The plan job's terraform report, beside the status. */
function writeTerraformReport(kind: GitLabJobKind, projectDir: string, workflow: Workflow): void {
  const report = terraformReport(workflow.approval.planSummary);
  if (kind === 'plan' && report) writeFileSync(join(projectDir, TERRAFORM_REPORT_FILE), `${JSON.stringify(report)}\n`);
}

/** No child process (tofu, ansible) inherits the job's API and ledger tokens. */
function withoutTokens(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const drop = new Set([
    'CI_JOB_TOKEN',
    GITLAB_TOKEN_VARIABLE,
    LEDGER_TOKEN_VARIABLE,
    ...Object.values(KEY_VARIABLES),
    USER_CA_KEY_VARIABLE,
    'CI_REGISTRY_PASSWORD',
    'CI_DEPENDENCY_PROXY_PASSWORD',
  ]);
  return Object.fromEntries(Object.entries(env).filter(([name]) => !drop.has(name)));
}
