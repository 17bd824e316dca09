/**
 * What `exocomp gitlab plan|apply|resume` does inside a GitLab job: read the
 * job's settings from CI/CD variables (the templates set them from their spec
 * inputs) once, build the CI-platform port and the ledger reached with the
 * job's credential (after a dry-run push), hand one request to
 * continueWorkflow, and publish the outcome: a dotenv report, the log, the
 * sticky MR note. The decisions stay in the core.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { describeError, ExocompError } from '../../domain/errors.js';
import { parseDuration } from '../../domain/duration.js';
import { defaultWorkspaceName, parseWorkspaceName, workflowIdProblem } from '../../domain/names.js';
import { renderMarkdown, viewWorkflow } from '../../domain/render.js';
import { parseSealKey } from '../../domain/seal.js';
import type { Workflow } from '../../domain/workflow.js';
import {
  continueWorkflow,
  failureOf,
  type ContinueOutcome,
  type ContinueRequest,
} from '../../app/provision/continue-workflow.js';
import type { AppContext } from '../../app/runtime/context.js';
import type { ApprovalGate } from '../../app/ports/approval-gate.js';
import type { CiPlatform } from '../../app/ports/ci-platform.js';
import { sweepInterrupted } from '../../app/provision/interrupted.js';
import { environmentGate } from '../../app/approval/gates/environment.js';
import type { RunInputs } from '../../app/plays/run-inputs.js';
import { SecretRegistry } from '../../app/runtime/secrets.js';
import { DEFAULT_LEDGER_BRANCH } from '../../ledger/git-store.js';
import { GitLabApi, GITLAB_TOKEN_VARIABLE } from './api.js';
import { readGitLabJob } from './job.js';
import { LEDGER_TOKEN_VARIABLE, openGitLabLedger } from './ledger.js';
import { createGitLabLog, type GitLabLog } from './log.js';
import { manualJobGate } from './manual-gate.js';
import { gitlabPlatform } from './platform.js';
import { GitLabProgress } from './progress.js';
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
  EXOCOMP_ALLOW_SELF_APPROVAL: flag,
  EXOCOMP_LEDGER_BRANCH: z.string().default(DEFAULT_LEDGER_BRANCH),
  EXOCOMP_LEDGER_PROJECT: z.string().optional(),
  EXOCOMP_STATE: z.enum(['local', 'gitlab']).default('local'),
  EXOCOMP_ALLOW_LOCAL_STATE: flag,
  EXOCOMP_SSH_WAIT: z.string().default('5m'),
  EXOCOMP_ONBOARD_USER: z.string().default('exocomp'),
  EXOCOMP_TOFU_BINARY: z.string().optional(),
  EXOCOMP_FLEET_KEY: z.string().optional(),
  EXOCOMP_BOOTSTRAP_KEY: z.string().optional(),
  EXOCOMP_SEAL_KEY: z.string().optional(),
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
  secrets.add(env.CI_JOB_TOKEN, env[GITLAB_TOKEN_VARIABLE], env[LEDGER_TOKEN_VARIABLE], env.EXOCOMP_SEAL_KEY);
  const log = createGitLabLog(secrets);
  try {
    const settings = readGitLabSettings(env);
    const job = readGitLabJob(env);
    const api = new GitLabApi(
      job.serverUrl,
      { jobToken: job.jobToken, accessToken: env[GITLAB_TOKEN_VARIABLE] || undefined },
      secrets,
    );
    const mergeRequestIid = settings.EXOCOMP_MR_NOTE ? await findMergeRequest(api, job.projectId, job) : undefined;
    const platform = gitlabPlatform({
      job,
      api,
      log,
      secrets,
      env,
      mergeRequestIid,
      allowSelfApproval: settings.EXOCOMP_ALLOW_SELF_APPROVAL,
    });
    const ledger = openGitLabLedger({
      job,
      branch: settings.EXOCOMP_LEDGER_BRANCH,
      ledgerProject: settings.EXOCOMP_LEDGER_PROJECT,
      env,
      secrets,
    });
    // The sweeper only reads the ledger (and starts pipelines).
    if (kind !== 'sweep') await ledger.preflight();
    const workspaceName = settings.EXOCOMP_WORKSPACE_NAME
      ? parseWorkspaceName(settings.EXOCOMP_WORKSPACE_NAME)
      : settings.EXOCOMP_WORKSPACE
        ? defaultWorkspaceName(settings.EXOCOMP_WORKSPACE)
        : undefined;
    const stateEnv = settings.EXOCOMP_STATE === 'gitlab' ? gitlabStateEnv(job, workspaceName ?? 'default') : {};
    const app: AppContext = {
      store: ledger.store,
      ledgerBranch: settings.EXOCOMP_LEDGER_BRANCH,
      now: () => new Date(),
      cwd: job.projectDir,
      env: { ...withoutTokens(env), ...stateEnv },
      progress: new GitLabProgress(log),
    };
    if (kind === 'sweep') {
      await sweep(app, platform, log);
      return 0;
    }
    const inputs = runInputs(settings, secrets);
    const workflowId =
      settings.EXOCOMP_WORKFLOW_ID ?? (workspaceName ? `${workspaceName}-${job.pipelineId}` : undefined);
    if (!workflowId)
      throw new ExocompError(
        'usage',
        'no workflow: EXOCOMP_WORKFLOW_ID is not set and there is no workspace to start one',
        {
          help: 'set the workspace input, or run with EXOCOMP_WORKFLOW_ID',
        },
      );
    const publish = async (workflow: Workflow) => {
      platform.setOutput('workflow-id', workflow.id);
      platform.setOutput('workflow-state', workflow.state);
      const report = terraformReport(workflow.approval.planSummary);
      if (kind === 'plan' && report)
        writeFileSync(join(job.projectDir, TERRAFORM_REPORT_FILE), `${JSON.stringify(report)}\n`);
      const body = secrets.redact(renderMarkdown(viewWorkflow(workflow, app.now())));
      if (mergeRequestIid === undefined) return;
      try {
        const outcome = await platform.upsertStatusComment(mergeRequestIid, workflow.id, body);
        if (outcome.kind === 'refused') log.notice(outcome.reason);
        else log.info(`${outcome.kind} the status note on !${mergeRequestIid}`);
      } catch (error) {
        log.warning(`could not update the status note on !${mergeRequestIid}: ${describeError(error)}`);
      }
    };
    const create = (): ContinueRequest['create'] => {
      if (kind !== 'plan' && !(kind === 'apply' && settings.EXOCOMP_APPROVAL === 'none')) return undefined;
      return () => {
        if (!settings.EXOCOMP_WORKSPACE || !settings.EXOCOMP_PLAYBOOK || !workspaceName) {
          throw new ExocompError('usage', 'starting a workflow needs the workspace and playbook inputs');
        }
        return {
          workspacePath: settings.EXOCOMP_WORKSPACE,
          workspaceName,
          playbook: settings.EXOCOMP_PLAYBOOK,
          requireApproval: settings.EXOCOMP_APPROVAL !== 'none',
          trigger: platform.run.trigger,
          requester: platform.run.actor,
          options: {
            sshWaitMs: parseDuration(settings.EXOCOMP_SSH_WAIT),
            onboardUser: settings.EXOCOMP_ONBOARD_USER,
            check: false,
          },
        };
      };
    };
    const gate: ApprovalGate | undefined =
      settings.EXOCOMP_APPROVAL === 'environment'
        ? environmentGate(platform, settings.EXOCOMP_ENVIRONMENT ?? job.environment)
        : settings.EXOCOMP_APPROVAL === 'manual'
          ? manualJobGate(platform, {
              startedByPerson: settings.CI_JOB_MANUAL,
              allowSelfApproval: settings.EXOCOMP_ALLOW_SELF_APPROVAL,
              jobName: job.jobName,
            })
          : undefined;
    const createRequest = create();
    const outcome: ContinueOutcome = await continueWorkflow(app, {
      workflowId,
      ...(createRequest ? { create: createRequest } : {}),
      inputs,
      ...(kind === 'apply' && gate ? { gate } : {}),
      scope: kind === 'plan' ? 'plan' : kind === 'apply' ? 'apply' : 'chain',
      ci: { platform, scratch: job.tempDir },
      publish,
    });
    if (outcome.workflow.state === 'awaiting-approval') {
      log.notice(
        `workflow ${outcome.workflow.id} is awaiting approval; nothing was applied. ${gate ? gate.howToDecide(outcome.workflow) : ''}`.trim(),
      );
    }
    const failure = failureOf(outcome);
    if (failure) throw failure;
    return 0;
  } catch (error) {
    log.error(describeError(error));
    return error instanceof ExocompError ? error.exitCode : 1;
  }
}

/**
 * The sweeper (a scheduled job): every workflow whose step a GitLab job held
 * that has finished without finishing the step is continued in a new pipeline
 * (the pipeline trigger API, EXOCOMP_WORKFLOW_ID), which the resume template's
 * job runs. A live holder, or one that cannot be judged, is left alone.
 */
async function sweep(app: AppContext, platform: CiPlatform, log: GitLabLog): Promise<void> {
  const entries = await sweepInterrupted(app, platform);
  for (const { id, step, action, target, ref } of entries) {
    if (action === 'dispatched') log.info(`${id}: ${step} was interrupted; continued in ${target} on ${ref}`);
    else log.info(`${id}: ${step} is held by a ${action === 'live' ? 'running' : 'possibly running'} job; left alone`);
  }
  if (entries.length === 0) log.info('no workflow is held by a GitLab job');
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

function runInputs(settings: GitLabSettings, secrets: SecretRegistry): RunInputs {
  const sealKey = settings.EXOCOMP_SEAL_KEY === undefined ? undefined : parseSealKey(settings.EXOCOMP_SEAL_KEY);
  secrets.add(sealKey);
  return {
    ...(settings.EXOCOMP_TOFU_BINARY ? { tofuBinary: settings.EXOCOMP_TOFU_BINARY } : {}),
    ...(settings.EXOCOMP_ALLOW_LOCAL_STATE ? { allowLocalState: true } : {}),
    // File variables: GitLab writes the key to a file and the variable holds its path.
    ...(settings.EXOCOMP_FLEET_KEY ? { fleetKeyPath: settings.EXOCOMP_FLEET_KEY } : {}),
    ...(settings.EXOCOMP_BOOTSTRAP_KEY ? { bootstrapKeyPath: settings.EXOCOMP_BOOTSTRAP_KEY } : {}),
    ...(sealKey ? { sealKey } : {}),
    runSecrets: {},
    rotateHostKeys: [],
    secrets,
  };
}

/** No child process (tofu, ansible) inherits the job's API and ledger tokens. */
function withoutTokens(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const drop = new Set([
    'CI_JOB_TOKEN',
    GITLAB_TOKEN_VARIABLE,
    LEDGER_TOKEN_VARIABLE,
    'EXOCOMP_SEAL_KEY',
    'CI_REGISTRY_PASSWORD',
    'CI_DEPENDENCY_PROXY_PASSWORD',
  ]);
  return Object.fromEntries(Object.entries(env).filter(([name]) => !drop.has(name)));
}
