/**
 * The CI-platform port on GitLab CI: CI variables for inputs, the tool's own
 * redaction for masking (GitLab has no masking command), log sections, a dotenv
 * report for outputs, the sticky MR note, deployment approvals, the pipeline
 * trigger for continuations, job liveness from the Jobs API, and plan artifacts
 * through the job's `artifacts:` paths (the apply job `needs:` the plan job).
 */
import { copyFile, mkdir } from 'node:fs/promises';
import { appendFileSync, existsSync } from 'node:fs';
import { basename, join } from 'node:path';
import { ExocompError } from '../../domain/errors.js';
import type { Workflow } from '../../domain/workflow.js';
import type { SecretRegistry } from '../../app/runtime/secrets.js';
import { isSelfApproval } from '../../app/approval/gates/approver.js';
import type { ArtifactPort, CiPlatform, CiRun, GateApproval } from '../../app/ports/ci-platform.js';
import { GitLabApi, GITLAB_TOKEN_VARIABLE } from './api.js';
import { gitlabHolder, gitlabHolderProbe } from './holder.js';
import { gitlabTrigger, readGitLabJob, type GitLabJob } from './job.js';
import type { GitLabLog } from './log.js';
import { upsertStatusNote } from './status-note.js';

/** Where a job keeps files for later jobs; the templates list it under `artifacts: paths`. */
export const ARTIFACTS_DIR = '.exocomp/artifacts';
/** The dotenv report the templates declare (`artifacts: reports: dotenv`). */
export const DOTENV_FILE = 'exocomp.env';

export interface GitLabPlatformOptions {
  job: GitLabJob;
  api: GitLabApi;
  log: GitLabLog;
  secrets: SecretRegistry;
  env: NodeJS.ProcessEnv;
  /** The merge request this job reports to (found before the platform is built). */
  mergeRequestIid: number | undefined;
  /** Approvals by the deployment's own triggerer count only when this is true. */
  allowSelfApproval: boolean;
}

export function gitlabPlatform(options: GitLabPlatformOptions): CiPlatform {
  const { job, api, log, secrets } = options;
  return {
    name: 'gitlab',
    run: gitlabRun(job, options.mergeRequestIid),
    log,
    input: (name) => options.env[`EXOCOMP_${name.toUpperCase().replace(/-/g, '_')}`] ?? '',
    maskSecret: (value) => secrets.add(value),
    setOutput: (name, value) => {
      // A dotenv value is one line; later jobs get it as EXOCOMP_<NAME>.
      const line = `EXOCOMP_${name.toUpperCase().replace(/-/g, '_')}=${value.replace(/[\r\n]+/g, ' ')}\n`;
      appendFileSync(join(job.projectDir, DOTENV_FILE), line);
    },
    writeSummary: async (markdown) => {
      log.startGroup('status');
      log.info(markdown);
      log.endGroup();
    },
    upsertStatusComment: async (changeRequest, key, body) => {
      const outcome = await upsertStatusNote(api.optional(), job.projectId, changeRequest, key, body);
      return outcome.kind === 'refused' ? outcome : { kind: outcome.kind, id: outcome.id };
    },
    artifacts: pipelineArtifacts(job),
    gatedJobApproval: (environment) =>
      deploymentApproval(api, job, environment ?? job.environment, options.allowSelfApproval),
    mayDecide: async (actor) => {
      // Who may run a manual job on a protected branch is GitLab's own rule (merge/push access to the branch).
      const protectedRef = options.env.CI_COMMIT_REF_PROTECTED === 'true';
      return protectedRef
        ? { allowed: true, reason: `${actor} ran a job on the protected branch ${job.refName}` }
        : {
            allowed: false,
            reason: `${job.refName} is not a protected branch, so anyone with the Developer role could run this job`,
          };
    },
    // A continuation is a new pipeline of this project on this job's ref: there is always one to start.
    continuationTarget: () => ({ target: 'a new pipeline', ref: job.refName }),
    dispatchContinuation: async (workflow: Workflow) => {
      const ref = job.refName;
      const started = await api.triggerPipeline(job.projectId, ref, { EXOCOMP_WORKFLOW_ID: workflow.id }, job.jobToken);
      return { target: `pipeline ${started.id}`, ref, run: { id: started.id, url: started.webUrl } };
    },
    holder: () => gitlabHolder(job),
    probeHolder: gitlabHolderProbe(api),
  };
}

function gitlabRun(job: GitLabJob, mergeRequestIid: number | undefined): CiRun {
  return {
    id: job.pipelineId,
    url: job.pipelineUrl,
    actor: job.userLogin,
    changeRequest: mergeRequestIid,
    trigger: gitlabTrigger(job),
    decisionVia: `manual job ${job.jobName} (job ${job.jobId}, pipeline ${job.pipelineId})`,
    startAgain: startNewPipeline(job),
    retryPlan: retryThePlanJob(job),
  };
}

/**
 * What a CLI play run inside a GitLab job (the converge template's `playbook run --gitlab-job`) holds its lease
 * as: the job (`gitlab:<project>:<pipeline>:<job>`), judged gone once the Jobs API says it finished.
 */
export function gitlabJobLease(
  env: NodeJS.ProcessEnv,
  secrets: SecretRegistry,
): Pick<CiPlatform, 'run' | 'holder' | 'probeHolder'> {
  const job = readGitLabJob(env);
  const accessToken = env[GITLAB_TOKEN_VARIABLE] || undefined;
  const api = new GitLabApi(job.apiUrl, { jobToken: job.jobToken, accessToken }, secrets).optional();
  return {
    run: gitlabRun(job, job.mergeRequestIid),
    holder: () => gitlabHolder(job),
    probeHolder: gitlabHolderProbe(api),
  };
}

/** Plans travel inside one pipeline: the plan job's `artifacts:` paths reach the jobs that `needs:` it. */
function pipelineArtifacts(job: GitLabJob): ArtifactPort {
  const dir = join(job.projectDir, ARTIFACTS_DIR);
  return {
    upload: async (file) => {
      await mkdir(dir, { recursive: true });
      await copyFile(file, join(dir, basename(file)));
    },
    download: async (name, runId, into) => {
      const source = join(dir, name);
      if (runId !== job.pipelineId || !existsSync(source)) return undefined;
      await mkdir(into, { recursive: true });
      const target = join(into, name);
      await copyFile(source, target);
      return target;
    },
  };
}

/**
 * Environment mode: GitLab held this job until its deployment was approved
 * (a protected environment with deployment approvals, Premium). The approvals
 * are read back from the Deployments API; none, or only the triggerer's own,
 * is a refusal naming what to configure.
 */
async function deploymentApproval(
  api: GitLabApi,
  job: GitLabJob,
  environment: string | undefined,
  allowSelfApproval: boolean,
): Promise<GateApproval> {
  if (!environment) {
    throw new ExocompError('approval', 'environment approval mode, but this job deploys to no environment', {
      help: 'give the apply job `environment: <name>` (the template sets it from the environment input) and protect that environment with deployment approvals',
    });
  }
  const deployment = await api.deploymentOfJob(job.projectId, environment, job.jobId);
  if (!deployment) {
    throw new ExocompError('approval', `no deployment of job ${job.jobId} to environment ${environment} was found`, {
      help: `protect environment ${environment} (Settings → CI/CD → Protected environments) with required approvals; the apply job must deploy to it`,
    });
  }
  // The self-approval rule (src/app/approval/gates/approver.ts), applied to the deployment's triggerer.
  const approved = deployment.approvals.filter(
    (a) => a.status === 'approved' && (allowSelfApproval || !isSelfApproval(a.user, deployment.user)),
  );
  if (approved.length === 0) {
    const self = deployment.approvals.some((a) => a.status === 'approved' && isSelfApproval(a.user, deployment.user));
    throw new ExocompError(
      'approval',
      self
        ? `the only approval of deployment ${deployment.id} is by ${deployment.user}, who triggered it`
        : `deployment ${deployment.id} to ${environment} has no approval`,
      {
        help: self
          ? 'another approver decides; set allow-self-approval only where one person runs everything'
          : `protect environment ${environment} with deployment approvals (Premium), or use approval: manual`,
      },
    );
  }
  return {
    by: approved.map((a) => a.user).join(', '),
    via: `environment ${environment} (deployment ${deployment.id}, pipeline ${job.pipelineId})`,
    comment: approved
      .map((a) => a.comment ?? '')
      .filter((c) => c !== '')
      .join('; '),
    // Self-approval was judged above, by the allow-self-approval input.
    selfReviewAllowed: false,
  };
}

/**
 * A retry of the plan job reaches the same workflow (ADR 0019) with the same commit: it helps when the cause
 * was outside the commit; a fix to the workspace is a commit, whose new pipeline plans a new workflow.
 */
function retryThePlanJob(job: Pick<GitLabJob, 'jobName' | 'jobUrl'>): string {
  return `Retry the job ${job.jobName} (${job.jobUrl}) once a cause outside the commit is fixed (credentials, a provider outage); a fix to the workspace is a new commit, whose pipeline plans afresh`;
}

/**
 * A retried job runs in the same pipeline, with its variables and artifacts (the old plan): only a new
 * pipeline plans afresh. Run pipeline (https://docs.gitlab.com/ci/pipelines/#run-a-pipeline-manually)
 * or a new commit starts one.
 */
export function startNewPipeline(job: Pick<GitLabJob, 'serverUrl' | 'projectPath' | 'refName'>): string {
  const ref = job.refName || 'the default branch';
  const newPipeline = `${job.serverUrl}/${job.projectPath}/-/pipelines/new${job.refName ? `?ref=${encodeURIComponent(job.refName)}` : ''}`;
  return `Start a new pipeline on ${ref} (not a retry of this job, which runs the old plan again): Build › Pipelines › Run pipeline, ${newPipeline}, or push a commit`;
}
