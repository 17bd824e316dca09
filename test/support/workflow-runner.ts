/**
 * Runs a whole GitHub workflow file as GitHub would, on the runner emulation
 * (./action-runner.ts): jobs in `needs` order (with `if:`, matrices, job
 * outputs and reusable workflows), each job on a fresh runner with a fresh
 * workspace and a GITHUB_TOKEN holding exactly the job's `permissions:`;
 * steps with `if:`, `env:`, `with:` and `${{ }}` evaluated
 * (./workflow-expressions.ts).
 *
 * - `exocomp/provision@v1`, `exocomp/provision/actions/<name>@v1`, `./` and
 *   `./actions/<name>` run this checkout's actions (their bundles in dist/);
 *   `exocomp/provision/.github/workflows/<file>@v1` is this checkout's file.
 * - `actions/checkout` copies the repository under test into the workspace
 *   (or its `path:`); with `repository: exocomp/provision` and the `ref` the
 *   job context names (`job.workflow_sha` in a called workflow of this
 *   checkout), `./<path>/actions/<name>` are this checkout's actions;
 *   `opentofu/setup-opentofu` puts the tofu stand-in on PATH (with
 *   `tofu_wrapper: false`, which the docs ask for); any other action fails.
 * - `secrets.X` gives only the secrets the setting holds (what the docs name):
 *   reading any other one fails the run, as does an undeclared input. An
 *   environment's secrets reach only a job that names the environment (and
 *   win over a repository secret of the same name); in a called workflow, only
 *   those the caller passed, by `secrets: inherit` or by name — one not passed
 *   reads as '' (https://docs.github.com/en/actions/how-tos/reuse-automations/reuse-workflows,
 *   "Using inputs and secrets in a reusable workflow").
 * - `job.workflow_repository`, `job.workflow_sha`, `job.workflow_ref` and
 *   `job.workflow_file_path` name the file that defines the job: in a called
 *   `exocomp/provision/…@v1` workflow, this checkout (HEAD's commit), not the
 *   caller (https://docs.github.com/en/actions/reference/workflows-and-actions/contexts#job-context).
 * - A job naming an environment with required reviewers (in the double) runs
 *   once the reviewer approved the run's deployment (an approval the double
 *   then reports); the job says it waited (`JobRun.waitedForReview`).
 */
import { cp, mkdir, readdir, readFile, symlink } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { runProcess } from '../../src/adapters/process.js';
import { repoRoot, RunnerJob, type RunnerEvent, type StepResult } from './action-runner.js';
import type { Access, GitHubDouble, TokenScope } from './github-double.js';
import type { ResultsDouble } from './results-double.js';
import {
  condition,
  interpolate,
  type Context,
  type ExpressionScope,
  type ExpressionValue,
} from './workflow-expressions.js';

export interface RunnerSetting {
  double: GitHubDouble;
  results: ResultsDouble;
  /** The host name the steps reach the doubles by (resolves to 127.0.0.1 inside each step). */
  hostname: string;
  repository: string;
  /** The repository under test as a checkout gives it. */
  repositoryDir: string;
  /** The repository's secrets: only these (and the environments') can be read. */
  secrets: Record<string, string>;
  /** Each environment's secrets, by environment name. */
  environmentSecrets?: Record<string, Record<string, string>>;
  /** The runner image's PATH. */
  path: string;
  /** What opentofu/setup-opentofu installs as `tofu`. */
  tofu: string;
  /** Extra environment of every step (test knobs such as the stand-in's log). */
  env?: NodeJS.ProcessEnv;
  /** Who approves a job's environment deployment. */
  reviewer: string;
}

export interface WorkflowTrigger {
  event: RunnerEvent;
  actor: string;
  runId: number;
  /** workflow_dispatch inputs. */
  inputs?: Record<string, string>;
  /** Jobs (by JobRun name) whose runner is lost before they start: they fail with no step run. */
  lostJobs?: string[];
}

export interface StepRun {
  name: string;
  result?: StepResult;
  skipped?: boolean;
}

export interface JobRun {
  /** The job id, with the matrix values for a matrix job (`converge (1)`). */
  name: string;
  conclusion: 'success' | 'failure' | 'skipped';
  steps: StepRun[];
  outputs: Record<string, string>;
  /** The deployment's `environment.url`, evaluated when the job ends (so it may use step outputs), as the runner does. */
  environmentUrl?: string;
  /** The job was held for its environment's required reviewers. */
  waitedForReview?: boolean;
}

export interface WorkflowRun {
  conclusion: 'success' | 'failure';
  jobs: JobRun[];
  outputs: Record<string, string>;
}

interface Workflow {
  on: Record<
    string,
    {
      inputs?: Record<string, { default?: unknown }>;
      secrets?: Record<string, unknown>;
      outputs?: Record<string, { value: string }>;
    } | null
  >;
  permissions?: Permissions;
  jobs: Record<string, JobSpec>;
}

type Permissions = 'read-all' | 'write-all' | Record<string, string>;

interface JobSpec {
  needs?: string | string[];
  if?: string | boolean;
  permissions?: Permissions;
  environment?: string | { name: string; url?: string };
  strategy?: { matrix?: Record<string, unknown[]> };
  outputs?: Record<string, string>;
  steps?: StepSpec[];
  uses?: string;
  with?: Record<string, unknown>;
  secrets?: 'inherit' | Record<string, string>;
}

interface StepSpec {
  id?: string;
  name?: string;
  if?: string | boolean;
  uses?: string;
  run?: string;
  shell?: string;
  with?: Record<string, unknown>;
  env?: Record<string, unknown>;
}

const SCOPES: TokenScope[] = ['actions', 'contents', 'issues', 'pull-requests'];

/** This repository as GitHub names it for `uses:` and `job.workflow_repository`. */
const THIS_REPOSITORY = 'exocomp/provision';

/** The commit `exocomp/provision/…@v1` resolves to here: this checkout's HEAD. */
const thisCommit = (async () => {
  const { stdout } = await runProcess('git', ['rev-parse', 'HEAD'], { cwd: repoRoot });
  return stdout.trim();
})();

/** The workflow file that defines a job (the `job.workflow_*` context). */
interface WorkflowSource {
  repository: string;
  sha: string;
  path: string;
  ref: string;
}

/** A job's token permissions: its own block, else the workflow's, else the permissive default; capped by a calling job's. */
function tokenPermissions(
  declared: Permissions | undefined,
  cap: Partial<Record<TokenScope, Access>> | undefined,
): Partial<Record<TokenScope, Access>> {
  const rank: Record<Access, number> = { none: 0, read: 1, write: 2 };
  const granted: Partial<Record<TokenScope, Access>> = {};
  for (const scope of SCOPES) {
    let access: Access;
    if (declared === undefined || declared === 'write-all') access = 'write';
    else if (declared === 'read-all') access = 'read';
    else access = (declared[scope] as Access | undefined) ?? 'none';
    const limit = cap?.[scope] ?? 'write';
    granted[scope] = rank[access] <= rank[limit] ? access : limit;
  }
  return granted;
}

function asText(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

/** A context that refuses names outside `known`, saying what the workflow asked for. */
function strict(what: string, known: Record<string, string>, allowAlso: string[] = []): (name: string) => string {
  return (name: string) => {
    if (name in known) return known[name]!;
    if (allowAlso.includes(name)) return '';
    throw new Error(
      `the workflow reads ${what}.${name}, which ${what === 'secrets' ? 'the docs do not name' : 'it does not declare'}`,
    );
  };
}

/** The runner image's PATH: this machine's, without tofu or terraform (GitHub's Ubuntu images ship neither). */
export async function runnerPathWithoutTofu(dir: string): Promise<string> {
  const parts: string[] = [];
  for (const entry of (process.env.PATH ?? '').split(':').filter(Boolean)) {
    const names = await readdir(entry).catch(() => [] as string[]);
    if (!names.includes('tofu') && !names.includes('terraform')) {
      parts.push(entry);
      continue;
    }
    const copy = join(dir, `path-${parts.length}`);
    await mkdir(copy, { recursive: true });
    for (const name of names.filter((n) => n !== 'tofu' && n !== 'terraform'))
      await symlink(join(entry, name), join(copy, name));
    parts.push(copy);
  }
  return parts.join(':');
}

/** An environment's secret as a job naming that environment reads it; undefined when it does not reach the job. */
type EnvironmentSecret = (environment: string, name: string) => string | undefined;

export class WorkflowRunner {
  private tokenCount = 0;

  constructor(private readonly setting: RunnerSetting) {}

  /** Runs `text` (the workflow at `path` in the repository, e.g. `.github/workflows/provision.yml`) for one trigger. */
  async run(path: string, text: string, trigger: WorkflowTrigger): Promise<WorkflowRun> {
    const workflow = parseYaml(text) as Workflow;
    // `on: push` and `on: [push, …]` are short for a mapping.
    const rawOn = workflow.on as unknown;
    const on: Workflow['on'] =
      typeof rawOn === 'string'
        ? { [rawOn]: null }
        : Array.isArray(rawOn)
          ? Object.fromEntries(rawOn.map((name: string) => [name, null]))
          : (workflow.on ?? {});
    if (!(trigger.event.name in on)) throw new Error(`${path} has no ${trigger.event.name} trigger`);
    const declared = trigger.event.name === 'workflow_dispatch' ? (on.workflow_dispatch?.inputs ?? {}) : {};
    for (const name of Object.keys(trigger.inputs ?? {})) {
      if (!(name in declared))
        throw new Error(`${path}: workflow_dispatch input ${name} is not declared (GitHub answers 422)`);
    }
    const dispatchInputs = Object.fromEntries(
      Object.entries(declared).map(([name, spec]) => [name, trigger.inputs?.[name] ?? asText(spec?.default)]),
    );
    // Inputs a workflow declares for dispatch read as '' when another event started it.
    const inputs = strict('inputs', dispatchInputs, Object.keys(on.workflow_dispatch?.inputs ?? {}));
    const workflowPath = path;
    this.setting.double.state.runs[trigger.runId] = {
      status: 'in_progress',
      workflowPath,
      event: trigger.event.name,
      actor: trigger.actor,
      headBranch: 'main',
    };
    const result = await this.runJobs(workflow, {
      trigger,
      workflowPath,
      // The caller's own file: its commit is the pushed one, which the emulation does not model.
      source: { repository: this.setting.repository, sha: 'c'.repeat(40), path: workflowPath, ref: 'refs/heads/main' },
      inputs,
      secrets: strict('secrets', this.setting.secrets, ['GITHUB_TOKEN', ...this.environmentSecretNames()]),
      environmentSecret: (environment, name) => this.setting.environmentSecrets?.[environment]?.[name],
    });
    this.setting.double.state.runs[trigger.runId] = {
      status: 'completed',
      conclusion: result.conclusion,
      workflowPath,
      event: trigger.event.name,
      actor: trigger.actor,
      headBranch: 'main',
    };
    return { ...result, outputs: {} };
  }

  private async runJobs(
    workflow: Workflow,
    frame: {
      trigger: WorkflowTrigger;
      workflowPath: string;
      source: WorkflowSource;
      inputs: Context;
      secrets: (name: string) => string;
      environmentSecret: EnvironmentSecret;
      cap?: Partial<Record<TokenScope, Access>>;
      prefix?: string;
    },
  ): Promise<{
    conclusion: 'success' | 'failure';
    jobs: JobRun[];
    byId: Record<string, { result: string; outputs: Record<string, string> }>;
  }> {
    const byId: Record<string, { result: string; outputs: Record<string, string> }> = {};
    const jobs: JobRun[] = [];
    const pending = new Set(Object.keys(workflow.jobs));
    while (pending.size > 0) {
      const ready = [...pending].find((id) => [workflow.jobs[id]!.needs ?? []].flat().every((need) => need in byId));
      if (!ready) throw new Error(`jobs ${[...pending].join(', ')} need jobs that do not exist or need each other`);
      pending.delete(ready);
      const spec = workflow.jobs[ready]!;
      const needs = Object.fromEntries([spec.needs ?? []].flat().map((need) => [need, byId[need]!] as const));
      const needsOk = Object.values(needs).every((n) => n.result === 'success');
      const scope = (
        extra: Record<string, Context> = {},
        status: 'success' | 'failure' = needsOk ? 'success' : 'failure',
      ): ExpressionScope => ({
        contexts: {
          github: this.githubContext(frame.trigger),
          inputs: frame.inputs,
          secrets: frame.secrets,
          needs: needs,
          ...extra,
        },
        status,
      });
      if (!condition(spec.if, scope())) {
        byId[ready] = { result: 'skipped', outputs: {} };
        jobs.push({ name: `${frame.prefix ?? ''}${ready}`, conclusion: 'skipped', steps: [], outputs: {} });
        continue;
      }
      if (spec.uses) {
        const called = await this.runCalled(spec, scope(), frame, `${frame.prefix ?? ''}${ready} / `);
        jobs.push(...called.jobs);
        byId[ready] = { result: called.conclusion, outputs: called.outputs };
        continue;
      }
      const matrix = spec.strategy?.matrix;
      const combinations: Array<Record<string, ExpressionValue>> = [{}];
      for (const [key, values] of Object.entries(matrix ?? {})) {
        if (!Array.isArray(values)) throw new Error(`the emulation expands matrix lists only (matrix.${key})`);
        combinations.splice(
          0,
          combinations.length,
          ...combinations.flatMap((c) => values.map((v) => ({ ...c, [key]: v as ExpressionValue }))),
        );
      }
      let result = 'success';
      let outputs: Record<string, string> = {};
      for (const values of combinations) {
        const label = matrix ? `${ready} (${Object.values(values).map(asText).join(', ')})` : ready;
        const run = await this.runJob(`${frame.prefix ?? ''}${label}`, ready, spec, workflow, frame, (extra, status) =>
          scope({ matrix: values, ...extra }, status),
        );
        jobs.push(run);
        if (run.conclusion === 'failure') result = 'failure';
        outputs = { ...outputs, ...run.outputs };
      }
      byId[ready] = { result, outputs };
    }
    const conclusion = jobs.some((j) => j.conclusion === 'failure') ? 'failure' : 'success';
    return { conclusion, jobs, byId };
  }

  /** A job that calls a reusable workflow: its inputs and secrets from `with:`/`secrets:`, checked against its `on.workflow_call`. */
  private async runCalled(
    spec: JobSpec,
    scope: ExpressionScope,
    frame: {
      trigger: WorkflowTrigger;
      workflowPath: string;
      source: WorkflowSource;
      cap?: Partial<Record<TokenScope, Access>>;
    },
    prefix: string,
  ): Promise<{ conclusion: 'success' | 'failure'; jobs: JobRun[]; outputs: Record<string, string> }> {
    const ref = spec.uses!;
    const local = /^exocomp\/provision\/(\.github\/workflows\/[^@]+)@v1$/.exec(ref)?.[1];
    let file: string;
    let source: WorkflowSource;
    if (local) {
      file = join(repoRoot, local);
      source = { repository: THIS_REPOSITORY, sha: await thisCommit, path: local, ref: 'refs/tags/v1' };
    } else if (ref.startsWith('./')) {
      file = join(this.setting.repositoryDir, ref);
      source = { ...frame.source, path: ref.slice(2) };
    } else throw new Error(`the emulation cannot call ${ref}`);
    const called = parseYaml(await readFile(file, 'utf8')) as Workflow;
    const call = called.on?.workflow_call;
    if (call === undefined) throw new Error(`${ref} has no workflow_call trigger`);
    const given = Object.fromEntries(
      Object.entries(spec.with ?? {}).map(([name, value]) => [name, interpolate(asText(value), scope)]),
    );
    for (const name of Object.keys(given))
      if (!(name in (call?.inputs ?? {})))
        throw new Error(`${ref}: input ${name} is not declared by the called workflow`);
    const inputs = Object.fromEntries(
      Object.entries(call?.inputs ?? {}).map(([name, declared]) => [name, given[name] ?? asText(declared?.default)]),
    );
    let secrets: Record<string, string>;
    /** The secret names the caller passed: an environment secret of one of them reaches a job naming its environment. */
    let passed: Set<string>;
    if (spec.secrets === 'inherit') {
      secrets = { ...this.setting.secrets };
      passed = new Set([...Object.keys(secrets), ...this.environmentSecretNames()]);
    } else {
      secrets = Object.fromEntries(
        Object.entries(spec.secrets ?? {}).map(([name, value]) => [name, interpolate(asText(value), scope)]),
      );
      for (const name of Object.keys(secrets))
        if (!(name in (call?.secrets ?? {})))
          throw new Error(`${ref}: secret ${name} is not declared by the called workflow`);
      passed = new Set(Object.keys(secrets));
    }
    for (const [name, declared] of Object.entries(call?.secrets ?? {})) {
      if ((declared as { required?: boolean } | null)?.required && !secrets[name])
        throw new Error(`${ref}: required secret ${name} was not passed`);
    }
    const cap = tokenPermissions(spec.permissions, frame.cap);
    const result = await this.runJobs(called, {
      trigger: frame.trigger,
      // Inside a called workflow GITHUB_WORKFLOW_REF still names the caller's file.
      workflowPath: frame.workflowPath,
      source,
      inputs: strict('inputs', inputs),
      secrets: strict('secrets', secrets, Object.keys(call?.secrets ?? {})),
      environmentSecret: (environment, name) =>
        passed.has(name) ? this.setting.environmentSecrets?.[environment]?.[name] : undefined,
      cap,
      prefix,
    });
    const jobsContext = result.byId as unknown as ExpressionValue;
    const outputs = Object.fromEntries(
      Object.entries(call?.outputs ?? {}).map(([name, output]) => [
        name,
        interpolate(output.value, { contexts: { jobs: jobsContext }, status: 'success' }),
      ]),
    );
    return { conclusion: result.conclusion, jobs: result.jobs, outputs };
  }

  private environmentSecretNames(): string[] {
    return Object.values(this.setting.environmentSecrets ?? {}).flatMap((secrets) => Object.keys(secrets));
  }

  private githubContext(trigger: WorkflowTrigger): Context {
    return {
      event_name: trigger.event.name,
      event: trigger.event.payload as ExpressionValue,
      repository: this.setting.repository,
      actor: trigger.actor,
      run_id: String(trigger.runId),
      ref: 'refs/heads/main',
      // The steps' GITHUB_SERVER_URL (the double).
      server_url: this.setting.double.url,
    };
  }

  private async runJob(
    name: string,
    id: string,
    spec: JobSpec,
    workflow: Workflow,
    frame: {
      trigger: WorkflowTrigger;
      workflowPath: string;
      source: WorkflowSource;
      secrets: (name: string) => string;
      environmentSecret: EnvironmentSecret;
      cap?: Partial<Record<TokenScope, Access>>;
    },
    scopeOf: (extra: Record<string, Context>, status: 'success' | 'failure') => ExpressionScope,
  ): Promise<JobRun> {
    const { double, results, hostname } = this.setting;
    if (frame.trigger.lostJobs?.includes(name)) return { name, conclusion: 'failure', steps: [], outputs: {} };
    const token = `ghs_emulatedJobToken${frame.trigger.runId}x${++this.tokenCount}`;
    double.state.tokens[token] = {
      login: 'github-actions[bot]',
      permissions: tokenPermissions(spec.permissions ?? workflow.permissions, frame.cap),
      repositories: [this.setting.repository],
    };
    const environment = typeof spec.environment === 'object' ? spec.environment.name : spec.environment;
    // An expression that gives '' names no environment.
    const envName = environment === undefined ? '' : interpolate(environment, scopeOf({}, 'success'));
    const waitedForReview = (double.state.environments[envName]?.requiredReviewers ?? []).length > 0;
    if (waitedForReview) {
      // GitHub holds the job until a required reviewer approves; here the reviewer approves at once.
      (double.state.approvals[frame.trigger.runId] ??= []).push({
        state: 'approved',
        user: this.setting.reviewer,
        environments: [envName],
      });
    }
    const secrets: Context =
      envName === '' ? frame.secrets : (name) => frame.environmentSecret(envName, name) ?? frame.secrets(name);
    const job = await RunnerJob.start({ path: this.setting.path });
    const workspace = join(job.dir, 'workspace');
    await mkdir(workspace);
    const steps: Record<string, { outputs: Record<string, string>; outcome: string }> = {};
    const runs: StepRun[] = [];
    const { source } = frame;
    const jobContext: Context = {
      workflow_repository: source.repository,
      workflow_sha: source.sha,
      workflow_ref: `${source.repository}/${source.path}@${source.ref}`,
      workflow_file_path: source.path,
    };
    /** Workspace paths holding a checkout of this repository (`./<path>/actions/<name>`). */
    const ownCheckouts = new Set<string>();
    const mains: Array<{ result: Awaited<ReturnType<RunnerJob['step']>> }> = [];
    let status: 'success' | 'failure' = 'success';
    try {
      for (const [index, step] of (spec.steps ?? []).entries()) {
        const label = step.name ?? step.id ?? step.uses ?? `run ${index + 1}`;
        const scope = scopeOf(
          {
            steps: steps,
            job: jobContext,
            github: { ...(this.githubContext(frame.trigger) as object), token },
            // The runner context's `temp` is RUNNER_TEMP (https://docs.github.com/en/actions/reference/workflows-and-actions/contexts#runner-context).
            runner: { temp: job.runnerTemp },
            secrets,
          },
          status,
        );
        if (!condition(step.if, scope)) {
          runs.push({ name: label, skipped: true });
          continue;
        }
        const env = {
          ...this.setting.env,
          ...Object.fromEntries(Object.entries(step.env ?? {}).map(([k, v]) => [k, interpolate(asText(v), scope)])),
        };
        const withInputs = Object.fromEntries(
          Object.entries(step.with ?? {}).map(([k, v]) => [k, interpolate(asText(v), scope)]),
        );
        const base = {
          run: {
            repository: this.setting.repository,
            runId: frame.trigger.runId,
            runAttempt: 1,
            actor: frame.trigger.actor,
            workflowRef: `${this.setting.repository}/${frame.workflowPath}@refs/heads/main`,
            job: id,
          },
          event: frame.trigger.event,
          githubUrl: double.url.replace('127.0.0.1', hostname),
          loopbackHostname: hostname,
          githubToken: token,
          workspace,
          env: {
            ...env,
            ACTIONS_RESULTS_URL: results.url,
            ACTIONS_RUNTIME_TOKEN: results.runtimeToken(frame.trigger.runId, id),
          },
        };
        let result: StepResult;
        if (step.run !== undefined) {
          if (step.shell !== undefined && step.shell !== 'bash')
            throw new Error(`the emulation runs run: steps in bash only (${label})`);
          result = await job.shell({
            ...base,
            script: interpolate(step.run, scope),
            ...(step.shell === 'bash' ? { shell: 'bash' as const } : {}),
          });
        } else if (step.uses !== undefined) {
          const action = this.exocompAction(step.uses, ownCheckouts);
          if (action !== undefined) {
            const main = await job.step({ ...base, action, with: withInputs });
            mains.push({ result: main });
            result = main;
          } else result = await this.thirdParty(step.uses, withInputs, workspace, job, base, ownCheckouts);
        } else throw new Error(`step ${label} has neither run nor uses`);
        runs.push({ name: label, result });
        if (step.id) steps[step.id] = { outputs: result.outputs, outcome: result.code === 0 ? 'success' : 'failure' };
        if (result.code !== 0) status = 'failure';
      }
      // Post steps run in reverse order at the end of the job.
      for (const { result } of mains.reverse()) {
        const post = await job.post(result);
        if (post) runs.push({ name: `post ${result.invocation.action}`, result: post });
      }
    } finally {
      await job.close();
    }
    const scope = scopeOf({ steps: steps }, status);
    const outputs = Object.fromEntries(Object.entries(spec.outputs ?? {}).map(([k, v]) => [k, interpolate(v, scope)]));
    const url = typeof spec.environment === 'object' ? spec.environment.url : undefined;
    const environmentUrl =
      url === undefined
        ? undefined
        : interpolate(url, scopeOf({ steps: steps, github: this.githubContext(frame.trigger) }, status));
    return {
      name,
      conclusion: status,
      steps: runs,
      outputs,
      ...(environmentUrl ? { environmentUrl } : {}),
      ...(waitedForReview ? { waitedForReview } : {}),
    };
  }

  /** This checkout's action for a `uses:`, or undefined for anyone else's. */
  private exocompAction(uses: string, ownCheckouts: Set<string>): string | undefined {
    if (uses === 'exocomp/provision@v1' || uses === './') return 'provision';
    const checkedOut = /^\.\/(.+)\/actions\/([a-z-]+)$/.exec(uses);
    if (checkedOut && ownCheckouts.has(checkedOut[1]!)) return checkedOut[2];
    return /^exocomp\/provision\/actions\/([a-z-]+)@v1$/.exec(uses)?.[1] ?? /^\.\/actions\/([a-z-]+)$/.exec(uses)?.[1];
  }

  /** The third-party actions the documented workflows use, as far as a step after them can tell. */
  private async thirdParty(
    uses: string,
    inputs: Record<string, string>,
    workspace: string,
    job: RunnerJob,
    base: { env: NodeJS.ProcessEnv },
    ownCheckouts: Set<string>,
  ): Promise<StepResult> {
    const done = (log: string): StepResult => ({
      code: 0,
      stdout: log,
      stderr: '',
      log,
      annotations: [],
      masks: [],
      outputs: {},
      state: {},
      summary: '',
      files: {},
      env: base.env,
    });
    if (/^actions\/checkout@(v\d+|[0-9a-f]{40})$/.test(uses)) {
      const into = join(workspace, inputs.path ?? '');
      const repository = inputs.repository || this.setting.repository;
      if (repository === this.setting.repository) {
        await cp(this.setting.repositoryDir, into, { recursive: true });
        return done(`checked out ${repository}\n`);
      }
      // The only commit of this repository the emulation has is this checkout's.
      if (repository !== THIS_REPOSITORY || inputs.ref !== (await thisCommit) || !inputs.path)
        throw new Error(
          `the emulation checks out ${THIS_REPOSITORY} only at this checkout's commit (${await thisCommit}) into a path, not ${repository}@${inputs.ref ?? ''} into ${inputs.path ?? 'the workspace'}`,
        );
      await mkdir(into, { recursive: true });
      ownCheckouts.add(inputs.path.replace(/^\.\//, '').replace(/\/+$/, ''));
      return done(`checked out ${repository} at ${inputs.ref} into ${inputs.path}\n`);
    }
    if (/^opentofu\/setup-opentofu@(v\d+|[0-9a-f]{40})$/.test(uses)) {
      if (inputs.tofu_wrapper !== 'false')
        throw new Error(
          'opentofu/setup-opentofu without tofu_wrapper: false wraps tofu in a script the emulation does not model (the docs ask for false)',
        );
      const bin = join(job.dir, 'tofu-bin');
      await mkdir(bin, { recursive: true });
      await symlink(resolve(this.setting.tofu), join(bin, 'tofu'));
      job.addPath(bin);
      return done(`installed tofu in ${bin}\n`);
    }
    throw new Error(`the emulation has no model of ${uses}`);
  }
}
