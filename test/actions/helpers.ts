/**
 * The setting of the action tests: the GitHub API double serving the
 * repository's git over smart HTTP (the ledger branch lives there), a
 * checked-out workspace with a fixture OpenTofu workspace driven by the
 * stand-in, SSH key pairs, and a way to run any action's bundle as the runner
 * would, in a given run attempt and event.
 */
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LEDGER_BRANCH, ledgerFile, ledgerHistory } from '../support/ledger-git.js';
import {
  events,
  runActionBundle,
  type ActionInvocation,
  type ActionResult,
  type RunnerEvent,
  type RunnerJob,
  type RunnerRun,
} from '../support/action-runner.js';
import { GitHubDouble, PERMISSIVE_TOKEN } from '../support/github-double.js';
import { createLoopbackHost, generateKeyPair, type KeyPair, type LoopbackHost } from '../support/loopback-host.js';
import { fixtureWorkspacesDir, invocationsOf, readStandinLog, standinPath } from '../support/tofu-standin.js';

export const REPOSITORY = 'acme/infra';
export const BOT = 'github-actions[bot]';
/** The job's GITHUB_TOKEN with the permissive default. */
export const WRITE_TOKEN = 'ghs_writeTokenForTheJob0123456789';
/** A GITHUB_TOKEN with `contents: read` only (the default for many repositories, and for forks). */
export const READ_TOKEN = 'ghs_readOnlyTokenForTheJob98765432';
export const WORKSPACE_DIR = 'infra/edge';
export const sitePlaybook = new URL('../fixtures/playbooks/site.yml', import.meta.url).pathname;

export interface ActionFixture {
  dir: string;
  double: GitHubDouble;
  /** The checked-out repository (GITHUB_WORKSPACE). */
  checkout: string;
  /** The OpenTofu workspace inside the checkout. */
  workspace: string;
  ledgerRepo: string;
  standinLog: string;
  bootstrap: KeyPair;
  fleet: KeyPair;
  run(action: string, options: RunOptions): Promise<ActionResult>;
  /** Everything ever committed to the ledger branch: messages and full patches. */
  ledgerHistory(branch?: string): Promise<string>;
  ledgerFile(path: string, branch?: string): Promise<string | undefined>;
  applyCount(): Promise<number>;
  cleanup(): Promise<void>;
}

export interface RunOptions {
  with?: Record<string, string>;
  runId?: number;
  runAttempt?: number;
  actor?: string;
  /** Who started this attempt (GITHUB_TRIGGERING_ACTOR; a re-run by someone else); default: the actor. */
  triggeringActor?: string;
  event?: RunnerEvent;
  token?: string;
  /** The ref the run is on (GITHUB_REF, and the workflow file's ref); default refs/heads/main. */
  ref?: string;
  workflowFile?: string;
  job?: string;
  env?: NodeJS.ProcessEnv;
  /** Reach the double as this host name (resolving to 127.0.0.1 in the step's own mount namespace). */
  loopbackHostname?: string;
  /** More names the step resolves, with `loopbackHostname` (ActionInvocation.hosts). */
  hosts?: Record<string, string>;
  /** Run as a step of this job (shared RUNNER_TEMP); default: a job of its own. */
  runnerJob?: RunnerJob;
  /** Cancel the workflow once the step's output satisfies this (see ActionInvocation.cancelWhen). */
  cancelWhen?: (output: string) => boolean;
  /** Kill the step's process tree outright (SIGKILL) once its output satisfies this (see ActionInvocation.killWhen). */
  killWhen?: (output: string) => boolean;
}

export async function createActionFixture(workspaceFixture = 'edge'): Promise<ActionFixture> {
  const dir = await mkdtemp(join(tmpdir(), 'exocomp-actions-'));
  const gitRoot = join(dir, 'git');
  await mkdir(gitRoot);
  const double = await GitHubDouble.start({ repository: REPOSITORY, gitRoot });
  const ledgerRepo = await double.createBareRepository();
  double.state.tokens[WRITE_TOKEN] = { login: BOT, permissions: { ...PERMISSIVE_TOKEN }, repositories: [REPOSITORY] };
  double.state.tokens[READ_TOKEN] = {
    login: BOT,
    permissions: { contents: 'read', 'pull-requests': 'read', issues: 'read', actions: 'read' },
    repositories: [REPOSITORY],
  };
  const checkout = join(dir, 'checkout');
  const workspace = join(checkout, WORKSPACE_DIR);
  await mkdir(join(checkout, 'infra'), { recursive: true });
  await cp(join(fixtureWorkspacesDir, workspaceFixture), workspace, { recursive: true });
  await cp(sitePlaybook, join(checkout, 'site.yml'));
  const bootstrap = await generateKeyPair(dir, 'bootstrap');
  const fleet = await generateKeyPair(dir, 'fleet');
  const standinLog = join(dir, 'tofu.log');

  return {
    dir,
    double,
    checkout,
    workspace,
    ledgerRepo,
    standinLog,
    bootstrap,
    fleet,
    run(action, options) {
      const actor = options.actor ?? 'alice';
      const run: RunnerRun = {
        repository: REPOSITORY,
        runId: options.runId ?? 5001,
        runAttempt: options.runAttempt ?? 1,
        actor,
        ...(options.triggeringActor ? { triggeringActor: options.triggeringActor } : {}),
        ...(options.ref ? { ref: options.ref } : {}),
        workflowRef: `${REPOSITORY}/.github/workflows/${options.workflowFile ?? 'provision.yml'}@${options.ref ?? 'refs/heads/main'}`,
        job: options.job ?? action,
      };
      const invocation: ActionInvocation = {
        action,
        with: options.with ?? {},
        run,
        event: options.event ?? events.push(REPOSITORY, actor),
        githubUrl: options.loopbackHostname ? double.url.replace('127.0.0.1', options.loopbackHostname) : double.url,
        ...(options.loopbackHostname ? { loopbackHostname: options.loopbackHostname } : {}),
        ...(options.hosts ? { hosts: options.hosts } : {}),
        githubToken: options.token ?? WRITE_TOKEN,
        workspace: checkout,
        env: { EXOCOMP_TOFU_STANDIN_LOG: standinLog, ...options.env },
        ...(options.cancelWhen ? { cancelWhen: options.cancelWhen } : {}),
        ...(options.killWhen ? { killWhen: options.killWhen } : {}),
      };
      return options.runnerJob ? options.runnerJob.step(invocation) : runActionBundle(invocation);
    },
    ledgerHistory: (branch = LEDGER_BRANCH) => ledgerHistory(ledgerRepo, branch),
    ledgerFile: (path, branch = LEDGER_BRANCH) => ledgerFile(ledgerRepo, path, branch),
    async applyCount() {
      return invocationsOf(await readStandinLog(standinLog), 'apply').length;
    },
    async cleanup() {
      await double.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Names `web` at address:port, as root, as the workspace's only host (the fixture's tofu input). */
export async function nameWebHost(fx: ActionFixture, address: string, port = 2222): Promise<void> {
  const web = { ansible_host: address, ansible_port: port, ansible_user: 'root' };
  await writeFile(
    join(fx.workspace, 'exocomp.auto.tfvars.json'),
    JSON.stringify({ ansible_inventory: { all: { hosts: { web } } } }),
  );
}

/** A started loopback host taking the bootstrap key for root, named `web` in the workspace. */
export async function startWebHost(fx: ActionFixture): Promise<LoopbackHost> {
  const host = await createLoopbackHost({ rootAuthorizedKey: fx.bootstrap.publicKey, port: 2222 });
  await host.start();
  await nameWebHost(fx, host.address, host.port);
  return host;
}

/** The inputs every chain run in these tests shares (keys as the secrets a workflow passes). */
export async function chainInputs(
  fx: ActionFixture,
  extra: Record<string, string> = {},
): Promise<Record<string, string>> {
  return {
    workspace: WORKSPACE_DIR,
    playbook: 'site.yml',
    'workspace-name': 'edge',
    'tofu-binary': standinPath,
    // The fixture workspace keeps its state locally, as the stand-in only can.
    'allow-local-state': 'true',
    'fleet-private-key': await readFile(fx.fleet.privateKeyPath, 'utf8'),
    'bootstrap-private-key': await readFile(fx.bootstrap.privateKeyPath, 'utf8'),
    ...extra,
  };
}

/** The inputs of a plan step (no keys: planning needs none). */
export function planInputs(extra: Record<string, string> = {}): Record<string, string> {
  return {
    workspace: WORKSPACE_DIR,
    playbook: 'site.yml',
    'workspace-name': 'edge',
    'tofu-binary': standinPath,
    'allow-local-state': 'true',
    ...extra,
  };
}

/** Lines printed to stdout/stderr other than the runner's mask commands. */
export function logWithoutMaskCommands(result: ActionResult): string {
  return `${result.stdout}\n${result.stderr}`
    .split('\n')
    .filter((line) => !line.startsWith('::add-mask::'))
    .join('\n');
}

export function describeRun(result: ActionResult): string {
  return `exit ${result.code}\n--- stdout\n${result.stdout}\n--- stderr\n${result.stderr}`;
}
