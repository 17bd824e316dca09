/**
 * What every action's entry point shares: inputs read once (secrets masked
 * before anything is logged), the run context, the GitHub API, the ledger
 * through the token, the never-persisted run inputs, and the status that goes
 * to outputs, the job summary and the sticky comment.
 */
import * as core from '@actions/core';
import type { FleetAuthMode } from '../../domain/user-ca.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { describeError } from '../../domain/errors.js';
import { interruptOnSignals } from '../../adapters/signals.js';
import { viewWorkflow } from '../../domain/render.js';
import { nextStep, type Workflow } from '../../domain/workflow.js';
import type { AppContext } from '../../app/runtime/context.js';
import { parseRunSecrets } from '../../app/plays/mappings.js';
import { jobContext, publishStatus, readRunInputs } from '../../app/job/run-ci-job.js';
import { loadStandingInventory } from '../../app/hosts/inventories.js';
import type { RunInputs } from '../../app/plays/run-inputs.js';
import { SecretRegistry } from '../../app/runtime/secrets.js';
import type { ArtifactPort, CiPlatform } from '../../app/ports/ci-platform.js';
import { ACTION_INPUTS, readSettings, type ActionName, type Settings } from './inputs.js';
import { openGitHubLedger, type GitHubLedger } from './ledger.js';
import { createGitHub } from './octokit.js';
import type { GitHubPort } from './port.js';
import { githubPlatform } from './platform.js';
import { GitHubProgress } from './progress.js';
import { isChainAction, RunningStepMemo } from './running-step.js';
import { ciHolder } from './holder.js';
import { readRunContext, type RunContext } from './run-context.js';
import { statusMarkdown, type StatusOptions } from './status.js';

export interface Session<N extends ActionName> {
  settings: Settings<(typeof ACTION_INPUTS)[N]>;
  run: RunContext;
  secrets: SecretRegistry;
  github: GitHubPort;
  /** The CI-platform port the use cases see. */
  platform: CiPlatform;
  progress: GitHubProgress;
  /** A private directory under RUNNER_TEMP, removed when the action ends. */
  scratch: string;
  now: () => Date;
  /** Aborted on "Cancel workflow" (the runner's SIGINT, then SIGTERM). */
  interrupt: AbortSignal;
}

const USER_AGENT = 'exocomp-provision';
/** How long a sealed plan is kept for its apply (the artifact-retention-days default). */
const DEFAULT_RETENTION_DAYS = 7;

/**
 * Runs an action body; any failure becomes the step's failure, with secrets
 * redacted. `artifacts` is passed only by the entries that move plans, so the
 * others' bundles never carry the artifact client.
 */
export async function runAction<N extends ActionName>(
  name: N,
  body: (session: Session<N>) => Promise<void>,
  options: { artifacts?: (run: RunContext, token: string, retentionDays: number) => ArtifactPort } = {},
): Promise<void> {
  const secrets = new SecretRegistry((value) => core.setSecret(value));
  // The chain's actions tell their post step which step is running (./post-step.ts).
  const runningStep = isChainAction(name) ? new RunningStepMemo(name) : undefined;
  const progress = new GitHubProgress(runningStep ? (event) => runningStep.observe(event) : undefined);
  // The runner signals only this process, so the running tool gets the SIGINT forwarded.
  const interrupt = interruptOnSignals(
    () => 'SIGINT',
    (error) =>
      progress.emit({
        type: 'warning',
        message: `${error.message} (the run was cancelled): stopping the running step`,
      }),
  );
  let scratch: string | undefined;
  try {
    const settings = readSettings(
      ACTION_INPUTS[name],
      (input) => core.getInput(input),
      (value) => secrets.add(value),
    ) as Session<N>['settings'];
    const run = readRunContext(process.env, process.cwd());
    runningStep?.heldBy(ciHolder(run).id);
    const {
      token = '',
      'comment-author': commentAuthor,
      'artifact-retention-days': retentionDays,
    } = settings as { token?: string; 'comment-author'?: string; 'artifact-retention-days'?: number };
    const github = createGitHub({ token, baseUrl: run.apiUrl, userAgent: USER_AGENT });
    const artifacts = options.artifacts?.(run, token, retentionDays ?? DEFAULT_RETENTION_DAYS);
    const platform = githubPlatform({
      run,
      github,
      ...(commentAuthor ? { commentAuthor } : {}),
      ...(artifacts ? { artifacts } : {}),
    });
    scratch = await mkdtemp(join(run.runnerTemp, 'exocomp-'));
    await body({ settings, run, secrets, github, platform, progress, scratch, now: () => new Date(), interrupt });
  } catch (error) {
    progress.flush();
    core.setFailed(secrets.redact(describeError(error)));
  } finally {
    progress.flush();
    if (scratch) await rm(scratch, { recursive: true, force: true });
  }
}

/** The ledger reached through the token; `preflight` proves the token may push. */
export function githubLedger(session: Session<ActionName>, settings: LedgerInputs): GitHubLedger {
  return openGitHubLedger({
    run: session.run,
    token: settings.token,
    branch: settings['ledger-branch'],
    ledgerRepository: settings['ledger-repository'],
    ...(settings['ledger-retry-for'] === undefined ? {} : { retryForMs: settings['ledger-retry-for'] }),
    secrets: session.secrets,
    now: session.now,
  });
}

interface LedgerInputs {
  token: string;
  'ledger-branch': string;
  'ledger-repository': string | undefined;
  'ledger-retry-for'?: number;
}

/**
 * The use-case context with the ledger reached through the token (the core's
 * context: always behind the secret guard). With `provePushAccess`, first
 * proves the token may push: a missing `contents: write` fails here, before
 * any side effect. Jobs that write only now and then (the post step, the
 * sweeper) go without it: their writes fail or warn on their own.
 */
export async function openLedger(
  session: Session<ActionName>,
  settings: LedgerInputs,
  options: { provePushAccess: boolean },
): Promise<AppContext> {
  const ledger = githubLedger(session, settings);
  if (options.provePushAccess) await ledger.preflight();
  return jobContext({ ...sessionFace(session), ledger }, settings['ledger-branch']);
}

function sessionFace(session: Session<ActionName>) {
  return {
    secrets: session.secrets,
    progress: session.progress,
    now: session.now,
    cwd: session.run.workspace,
    env: childEnvironment(process.env),
    interrupt: session.interrupt,
  };
}

/** The runner's own credentials for its artifact and cache services; no child process needs them. */
const RUNNER_SERVICE_VARIABLES = new Set([
  'ACTIONS_RUNTIME_TOKEN',
  'ACTIONS_RESULTS_URL',
  'ACTIONS_CACHE_URL',
  'ACTIONS_RUNTIME_URL',
]);

/**
 * Inputs (secrets among them) reach the action as INPUT_* variables; no child
 * process (tofu, ansible) may inherit them. OIDC request variables stay: cloud
 * providers use them to authenticate tofu.
 */
export function childEnvironment(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(env).filter(([name]) => !name.startsWith('INPUT_') && !RUNNER_SERVICE_VARIABLES.has(name)),
  );
}

export interface RunInputSettings {
  'seal-key'?: string | undefined;
  'fleet-private-key'?: string | undefined;
  'user-ca-key'?: string | undefined;
  'fleet-auth'?: FleetAuthMode | undefined;
  'certificate-lifetime'?: number | undefined;
  'bootstrap-private-key'?: string | undefined;
  'run-secrets'?: string | undefined;
  'tofu-binary'?: string | undefined;
  bastion?: string | undefined;
}

/** The key, run-secret and tofu inputs as the core's run-input settings: one mapping for every GitHub job. */
export function runInputSettings(s: RunInputSettings) {
  return {
    keys: {
      ...(s['fleet-private-key'] ? { fleet: s['fleet-private-key'] } : {}),
      ...(s['bootstrap-private-key'] ? { bootstrap: s['bootstrap-private-key'] } : {}),
      ...(s['seal-key'] ? { seal: s['seal-key'] } : {}),
      ...(s['user-ca-key'] ? { userCa: s['user-ca-key'] } : {}),
    },
    ...(s['fleet-auth'] ? { fleetAuth: s['fleet-auth'] } : {}),
    ...(s['certificate-lifetime'] ? { certificateLifetimeMs: s['certificate-lifetime'] } : {}),
    ...(s['run-secrets'] ? { runSecrets: parseRunSecrets(s['run-secrets'], 'the run-secrets input') } : {}),
    ...(s['tofu-binary'] ? { tofuBinary: s['tofu-binary'] } : {}),
    ...(s.bastion ? { bastion: s.bastion } : {}),
  };
}

/** The run inputs of a job that is not a chain job (converge, drift), through the core's one reader. */
export function githubRunInputs(session: Session<ActionName>, settings: RunInputSettings): Promise<RunInputs> {
  return readRunInputs(runInputSettings(settings), {
    cwd: session.run.workspace,
    secrets: session.secrets,
    privateDir: session.scratch,
    keyNames: KEY_INPUTS,
    bastionName: BASTION_INPUT,
  });
}

export const BASTION_INPUT = 'the bastion input';

/** Where each key comes from on GitHub, for messages. */
export const KEY_INPUTS = {
  fleet: 'the fleet-private-key input',
  bootstrap: 'the bootstrap-private-key input',
  seal: 'the seal-key input',
  userCa: 'the user-ca-key input',
};

/**
 * How a play started from an action reports: every line redacted, the play's
 * output (hosts' output in it) as text, never a workflow command, warnings as
 * annotations, and stopped when the run is cancelled.
 */
export function playReporting(session: Session<ActionName>): {
  secrets: SecretRegistry;
  info(message: string): void;
  warn(message: string): void;
  onOutput(line: string): void;
  signal: AbortSignal;
} {
  const info = (message: string) => session.progress.emit({ type: 'info', message: session.secrets.redact(message) });
  return {
    secrets: session.secrets,
    info,
    warn: (message) => session.progress.emit({ type: 'warning', message: session.secrets.redact(message) }),
    onOutput: (line) => info(line.trimEnd()),
    signal: session.interrupt,
  };
}

export type PublishOptions = Omit<StatusOptions, 'run' | 'now'> & { comment: boolean };

/**
 * The status of an action that only shows one (approve, status, the post step), published as every job publishes
 * it (the core's publishStatus): outputs, the job summary, the sticky comment of its pull request (optional).
 */
export async function publishWorkflow(
  session: Session<ActionName>,
  app: AppContext,
  workflow: Workflow,
  { comment, ...options }: PublishOptions,
): Promise<void> {
  await publishStatus(
    {
      platform: session.platform,
      secrets: session.secrets,
      statusMarkdown: (shown, now, planView) => statusMarkdown(shown, { ...options, planView, run: session.run, now }),
      published: (shown, shownApp) => publishedOutputs(session, shownApp, shown),
    },
    app,
    workflow,
    { comment },
  );
}

/** The step outputs a workflow's status gives on GitHub besides its id. */
export async function publishedOutputs(session: Session<ActionName>, app: AppContext, workflow: Workflow) {
  const { platform } = session;
  const view = viewWorkflow(workflow, session.now());
  platform.setOutput('state', workflow.state);
  platform.setOutput('steps', JSON.stringify(view.steps));
  // The reusable workflow skips its environment-gated apply job once the workflow is past its apply.
  platform.setOutput('next-step', nextStep(workflow)?.name ?? '');
  platform.setOutput('inventory', `tf:${workflow.workspace.name}`);
  platform.setOutput('hosts', JSON.stringify(await hostsOf(app, workflow.workspace.name)));
}

/** The hosts tf:<name> names now (empty when it is not materialized yet). */
async function hostsOf(app: AppContext, name: string): Promise<Array<{ name: string; address: string; port: number }>> {
  try {
    return loadStandingInventory(await app.store.read(), name).hosts.map((host) => ({
      name: host.name,
      address: host.address,
      port: host.port,
    }));
  } catch {
    return [];
  }
}
