/**
 * Runs an action's bundle the way the GitHub runner does (test/README.md):
 * `node <runs.main>` from its action.yml, with every declared input as
 * INPUT_<NAME> (upper-cased, dashes kept) and the defaults applied FROM
 * action.yml (bundles never apply them), GITHUB_OUTPUT / GITHUB_STATE /
 * GITHUB_STEP_SUMMARY / GITHUB_ENV / GITHUB_PATH files, a real-shaped event
 * payload at GITHUB_EVENT_PATH, and the API and git server at the double.
 * Outputs are parsed back from the GITHUB_OUTPUT file; stdout and stderr go
 * through the runner's workflow-command processing (./workflow-commands.ts).
 * Steps of one job share a RunnerJob (RUNNER_TEMP, HOME, GITHUB_ENV/PATH).
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { WorkflowCommandProcessor, type Annotation } from './workflow-commands.js';
import { condition, interpolate, type ExpressionScope } from './workflow-expressions.js';

export const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

export interface ActionMetadata {
  name: string;
  description: string;
  inputs: Record<string, { description: string; required?: boolean; default?: string }>;
  outputs: Record<string, { description: string; value?: string }>;
  runs: { using: string; main?: string; post?: string; 'post-if'?: string; steps?: CompositeStep[] };
  branding?: { icon: string; color: string };
}

/** The action.yml of an action: `provision` is the root action, the others live under actions/<name>/. */
export function actionYmlPath(action: string): string {
  return action === 'provision' ? join(repoRoot, 'action.yml') : join(repoRoot, 'actions', action, 'action.yml');
}

/** A step of a composite action (only `run:` steps with `shell: bash` here). */
export interface CompositeStep {
  id?: string;
  name?: string;
  if?: string;
  shell?: string;
  run?: string;
  uses?: string;
  env?: Record<string, string>;
}

export async function readActionMetadata(action: string): Promise<ActionMetadata> {
  return parseYaml(await readFile(actionYmlPath(action), 'utf8')) as ActionMetadata;
}

export interface RunnerRun {
  /** `owner/repo` */
  repository: string;
  runId: number;
  runAttempt: number;
  actor: string;
  triggeringActor?: string;
  /** GITHUB_WORKFLOW_REF, e.g. `acme/infra/.github/workflows/provision.yml@refs/heads/main`. */
  workflowRef: string;
  job?: string;
  sha?: string;
  ref?: string;
}

export interface RunnerEvent {
  name: string;
  payload: Record<string, unknown>;
}

export interface ActionInvocation {
  action: string;
  /** Inputs as a workflow's `with:` gives them; undeclared ones are dropped with a warning, as the runner does. */
  with?: Record<string, string>;
  run: RunnerRun;
  event: RunnerEvent;
  /** GITHUB_API_URL and GITHUB_SERVER_URL (the double). */
  githubUrl: string;
  /** The job's `github.token`, used where action.yml defaults to `${{ github.token }}`. */
  githubToken: string;
  /** GITHUB_WORKSPACE, the step's working directory. */
  workspace: string;
  /** Extra environment of the step (e.g. `env:`), over the runner's. */
  env?: NodeJS.ProcessEnv;
  /**
   * A host name that resolves to 127.0.0.1 for the step (through a private
   * /etc/hosts in its own mount namespace), for clients that treat github.com,
   * *.ghe.com and *.localhost differently from a raw IP address.
   */
  loopbackHostname?: string;
  /** More names in the step's private /etc/hosts (name → loopback address), e.g. the Sigstore double's; with `loopbackHostname`. */
  hosts?: Record<string, string>;
  /**
   * "Cancel workflow" while the step runs, once its output so far (stdout and
   * stderr, raw) satisfies this: SIGINT, 7.5 s, SIGTERM, 2.5 s, then the whole
   * process tree is killed, as the runner does.
   */
  cancelWhen?: (output: string) => boolean;
  /**
   * The step's whole process tree is killed with SIGKILL once its output so
   * far satisfies this, with no signal before it: no handler runs (the
   * runner's final kill without the step having stopped in its windows, or a
   * process lost on the runner). The job counts as cancelled.
   */
  killWhen?: (output: string) => boolean;
}

export type CancelSignal = 'SIGINT' | 'SIGTERM' | 'SIGKILL';

export interface Cancellation {
  /** The signals the runner had to send, in order: ['SIGINT'] when the step stopped within the first window. */
  signals: CancelSignal[];
  /** Descendants of the step's process that were still running after it ended (the runner would kill them at job end). */
  leftRunning: Array<{ pid: number; command: string }>;
}

/** What one step of a job leaves: its exit, its log as the runner shows it, and the files it wrote. */
export interface StepResult {
  code: number;
  /** The raw streams, before the runner processed commands or masked anything. */
  stdout: string;
  stderr: string;
  /** The log as the runner shows it: workflow commands processed, annotations as `##[level]`, masks applied. */
  log: string;
  annotations: Annotation[];
  /** Values the step registered with add-mask. */
  masks: string[];
  /** Outputs from GITHUB_OUTPUT and from the deprecated `::set-output` command. */
  outputs: Record<string, string>;
  /** State for the post step, from GITHUB_STATE and the deprecated `::save-state`. */
  state: Record<string, string>;
  summary: string;
  /** Every file the runner gave the step, for searching (outputs, summary, state, env). */
  files: Record<string, string>;
  /** The env the step ran with (INPUT_* included). */
  env: NodeJS.ProcessEnv;
  cancellation?: Cancellation;
}

export interface ActionResult extends StepResult {
  /** The step as it was run, for its post step. */
  invocation: ActionInvocation;
}

/** A `run:` step: a bash script with the job's runner environment and the step's `env:`. */
export interface ShellInvocation extends Omit<ActionInvocation, 'action' | 'with' | 'cancelWhen'> {
  script: string;
  /** `shell: bash` given: the runner adds --noprofile --norc and pipefail; without it, `bash -e`. */
  shell?: 'bash';
}

/** Evaluates the only expression action.yml defaults use here; anything else is a harness error. */
function evaluateDefault(value: string, token: string): string {
  return value.replace(/\$\{\{\s*([^}]+?)\s*\}\}/g, (_match, expression: string) => {
    if (expression === 'github.token') return token;
    throw new Error(`the harness cannot evaluate \${{ ${expression} }} in an action.yml default`);
  });
}

/** `name<<DELIMITER\nvalue\nDELIMITER` blocks and `name=value` lines, as the runner reads GITHUB_OUTPUT. */
export function parseCommandFile(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    if (line === '') continue;
    const heredoc = /^([^=<]+)<<(.+)$/.exec(line);
    if (heredoc) {
      const [, name = '', delimiter = ''] = heredoc;
      const value: string[] = [];
      for (i++; i < lines.length && lines[i] !== delimiter; i++) value.push(lines[i] ?? '');
      if (i >= lines.length) throw new Error(`unterminated ${name} in a command file`);
      out[name] = value.join('\n');
      continue;
    }
    const eq = line.indexOf('=');
    if (eq <= 0) throw new Error(`malformed command file line ${JSON.stringify(line)}`);
    out[line.slice(0, eq)] = line.slice(eq + 1);
  }
  return out;
}

/** A step's status as the post step's `post-if` sees it. */
type JobStatus = 'success' | 'failure' | 'cancelled';

/** `always()`, `success()`, `failure()`, `cancelled()` and `||` of them: what action.yml post-if uses. */
function evaluatePostIf(expression: string, status: JobStatus): boolean {
  return expression.split('||').some((term) => {
    const fn = term.trim();
    if (fn === 'always()') return true;
    if (fn === 'success()') return status === 'success';
    if (fn === 'failure()') return status === 'failure';
    if (fn === 'cancelled()') return status === 'cancelled';
    throw new Error(`the harness cannot evaluate post-if ${JSON.stringify(expression)}`);
  });
}

/**
 * One job on one runner: every step sees the same RUNNER_TEMP and HOME, and
 * what a step writes to GITHUB_ENV / GITHUB_PATH reaches the steps after it.
 * `post` runs a step's `runs.post` with the state it saved; `close` ends the
 * job and removes its directories.
 */
export class RunnerJob {
  private readonly exported: Record<string, string> = {};
  private readonly paths: string[] = [];
  private stepCount = 0;
  private status: JobStatus = 'success';

  private constructor(
    readonly dir: string,
    private readonly basePath: string,
  ) {}

  /** `path`: the runner image's PATH (default: this machine's). */
  static async start(options: { path?: string } = {}): Promise<RunnerJob> {
    const dir = await mkdtemp(join(tmpdir(), 'exocomp-runner-'));
    await mkdir(join(dir, 'runner-temp'));
    await mkdir(join(dir, 'home'));
    return new RunnerJob(dir, options.path ?? process.env.PATH ?? '');
  }

  /** What an action that installs a tool does through GITHUB_PATH: `dir` comes first on PATH for the steps after it. */
  addPath(dir: string): void {
    this.paths.unshift(dir);
  }

  get runnerTemp(): string {
    return join(this.dir, 'runner-temp');
  }

  async step(invocation: ActionInvocation): Promise<ActionResult> {
    const metadata = await readActionMetadata(invocation.action);
    let result: ActionResult;
    if (metadata.runs.using === 'composite')
      result = { ...(await this.runComposite(invocation, metadata)), invocation };
    else if (metadata.runs.main) result = await this.runEntry(invocation, metadata, metadata.runs.main, {});
    else throw new Error(`${invocation.action} is neither a JavaScript nor a composite action`);
    this.noteStatus(result);
    return result;
  }

  /** A workflow's `run:` step, in bash as the runner runs it (ShellInvocation.shell). */
  async shell(invocation: ShellInvocation): Promise<StepResult> {
    const script = join(this.dir, `script-${this.stepCount + 1}.sh`);
    await writeFile(script, invocation.script);
    const argv =
      invocation.shell === 'bash'
        ? ['bash', '--noprofile', '--norc', '-eo', 'pipefail', script]
        : ['bash', '-e', script];
    const result = await this.runCommand({ ...invocation, action: '(run)' }, argv, {}, new WorkflowCommandProcessor());
    this.noteStatus(result);
    return result;
  }

  private noteStatus(result: StepResult): void {
    if (this.status === 'success' && result.code !== 0) this.status = result.cancellation ? 'cancelled' : 'failure';
  }

  /**
   * A composite action: its `run:` steps in order, with `${{ inputs.x }}` (given,
   * else the action.yml default) and `${{ steps.id.outputs.x }}` evaluated, as
   * the runner does; its outputs evaluated from `outputs.<name>.value`.
   */
  private async runComposite(invocation: ActionInvocation, metadata: ActionMetadata): Promise<StepResult> {
    const given = invocation.with ?? {};
    const inputs: Record<string, string> = {};
    for (const [name, declared] of Object.entries(metadata.inputs))
      inputs[name] = given[name] ?? evaluateDefault(String(declared.default ?? ''), invocation.githubToken);
    const steps: Record<string, { outputs: Record<string, string> }> = {};
    const results: StepResult[] = [];
    let status: 'success' | 'failure' = 'success';
    const scope = (): ExpressionScope => ({
      contexts: { inputs, steps, github: { token: invocation.githubToken } },
      status,
    });
    for (const step of metadata.runs.steps ?? []) {
      if (step.uses !== undefined || step.run === undefined)
        throw new Error(`the harness runs only run: steps of composite actions (${invocation.action})`);
      if (step.shell !== 'bash')
        throw new Error(
          `the harness runs composite steps with shell: bash only (${invocation.action}: ${step.name ?? step.id ?? 'a step'})`,
        );
      if (!condition(step.if, scope())) continue;
      const env = Object.fromEntries(
        Object.entries(step.env ?? {}).map(([name, value]) => [name, interpolate(String(value), scope())]),
      );
      const script = join(this.dir, `script-${this.stepCount + 1}.sh`);
      await writeFile(script, interpolate(step.run, scope()));
      const result = await this.runCommand(
        { ...invocation, env: { ...invocation.env, ...env } },
        ['bash', '--noprofile', '--norc', '-eo', 'pipefail', script],
        {},
        new WorkflowCommandProcessor(),
      );
      results.push(result);
      if (step.id) steps[step.id] = { outputs: result.outputs };
      if (result.code !== 0) {
        status = 'failure';
        break;
      }
    }
    const outputs = Object.fromEntries(
      Object.entries(metadata.outputs ?? {}).map(([name, output]) => [
        name,
        interpolate(String(output.value ?? ''), scope()),
      ]),
    );
    const joined = (pick: (r: StepResult) => string) => results.map(pick).join('');
    const last = results.at(-1);
    return {
      code: results.find((r) => r.code !== 0)?.code ?? 0,
      stdout: joined((r) => r.stdout),
      stderr: joined((r) => r.stderr),
      log: joined((r) => r.log),
      annotations: results.flatMap((r) => r.annotations),
      masks: results.flatMap((r) => r.masks),
      outputs,
      state: {},
      summary: joined((r) => r.summary),
      files: last?.files ?? {},
      env: last?.env ?? {},
    };
  }

  /** The step's post entry, when its action.yml declares one and its post-if holds; undefined otherwise. */
  async post(main: ActionResult): Promise<ActionResult | undefined> {
    const metadata = await readActionMetadata(main.invocation.action);
    const entry = metadata.runs.post;
    if (!entry) return undefined;
    if (!evaluatePostIf(metadata.runs['post-if'] ?? 'always()', this.status)) return undefined;
    const state = Object.fromEntries(Object.entries(main.state).map(([name, value]) => [`STATE_${name}`, value]));
    const { cancelWhen: _cancel, killWhen: _kill, ...invocation } = main.invocation;
    return this.runEntry(invocation, metadata, entry, state);
  }

  async close(): Promise<void> {
    await rm(this.dir, { recursive: true, force: true });
  }

  private async runEntry(
    invocation: ActionInvocation,
    metadata: ActionMetadata,
    entry: string,
    stateEnv: Record<string, string>,
  ): Promise<ActionResult> {
    const main = resolve(dirname(actionYmlPath(invocation.action)), entry);
    const commands = new WorkflowCommandProcessor();
    const given = invocation.with ?? {};
    const undeclared = Object.keys(given).filter((name) => !(name in metadata.inputs));
    if (undeclared.length > 0) {
      commands.runnerWarning(
        `Unexpected input(s) '${undeclared.join("', '")}', valid inputs are ['${Object.keys(metadata.inputs).join("', '")}']`,
      );
    }
    const inputEnv: Record<string, string> = {};
    for (const [name, declared] of Object.entries(metadata.inputs)) {
      const value = given[name] ?? evaluateDefault(String(declared.default ?? ''), invocation.githubToken);
      inputEnv[`INPUT_${name.replace(/ /g, '_').toUpperCase()}`] = value;
    }
    return {
      ...(await this.runCommand(invocation, [process.execPath, main], { ...inputEnv, ...stateEnv }, commands)),
      invocation,
    };
  }

  /** Runs one process as a step of this job: the runner's files and environment, workflow commands processed. */
  private async runCommand(
    invocation: ActionInvocation,
    argv: string[],
    stepEnv: Record<string, string>,
    commands: WorkflowCommandProcessor,
  ): Promise<StepResult> {
    const dir = join(this.dir, `step-${++this.stepCount}`);
    await mkdir(dir);
    const files = {
      GITHUB_OUTPUT: join(dir, 'output'),
      GITHUB_STATE: join(dir, 'state'),
      GITHUB_STEP_SUMMARY: join(dir, 'summary'),
      GITHUB_ENV: join(dir, 'env'),
      GITHUB_PATH: join(dir, 'path'),
    };
    for (const file of Object.values(files)) await writeFile(file, '');
    const eventPath = join(dir, 'event.json');
    await writeFile(eventPath, JSON.stringify(invocation.event.payload, null, 2));
    const run = invocation.run;
    const env: NodeJS.ProcessEnv = {
      PATH: [...this.paths, this.basePath].join(':'),
      LANG: 'C.UTF-8',
      HOME: join(this.dir, 'home'),
      CI: 'true',
      GITHUB_ACTIONS: 'true',
      RUNNER_OS: 'Linux',
      RUNNER_ARCH: 'X64',
      RUNNER_TEMP: this.runnerTemp,
      RUNNER_TOOL_CACHE: join(this.dir, 'tool-cache'),
      GITHUB_WORKSPACE: invocation.workspace,
      GITHUB_REPOSITORY: run.repository,
      GITHUB_REPOSITORY_OWNER: run.repository.split('/')[0],
      GITHUB_RUN_ID: String(run.runId),
      GITHUB_RUN_NUMBER: '1',
      GITHUB_RUN_ATTEMPT: String(run.runAttempt),
      GITHUB_ACTOR: run.actor,
      GITHUB_TRIGGERING_ACTOR: run.triggeringActor ?? run.actor,
      GITHUB_EVENT_NAME: invocation.event.name,
      GITHUB_EVENT_PATH: eventPath,
      GITHUB_SHA: run.sha ?? '0123456789abcdef0123456789abcdef01234567',
      GITHUB_REF: run.ref ?? 'refs/heads/main',
      GITHUB_REF_NAME: (run.ref ?? 'refs/heads/main').replace(/^refs\/(heads|tags)\//, ''),
      GITHUB_WORKFLOW_REF: run.workflowRef,
      GITHUB_WORKFLOW: 'provision',
      GITHUB_JOB: run.job ?? 'provision',
      GITHUB_API_URL: invocation.githubUrl,
      GITHUB_SERVER_URL: invocation.githubUrl,
      GITHUB_GRAPHQL_URL: `${invocation.githubUrl}/graphql`,
      ...this.exported,
      ...files,
      ...stepEnv,
      ...invocation.env,
    };
    let command = argv;
    if (invocation.loopbackHostname) {
      if (invocation.cancelWhen || invocation.killWhen)
        throw new Error(
          'the harness cannot cancel a step run behind a loopback host name (the launcher does not forward signals)',
        );
      const hosts = join(dir, 'hosts');
      const names = Object.entries({ [invocation.loopbackHostname]: '127.0.0.1', ...invocation.hosts });
      const lines = names.map(([name, address]) => `${address} ${name}\n`).join('');
      await writeFile(hosts, `${await readFile('/etc/hosts', 'utf8')}\n${lines}`);
      // unshare -m makes mounts private: the bind mount is seen by this step only and ends with it. No shell in
      // between: shells drop environment variables whose names hold dashes (INPUT_SSH-WAIT).
      const launcher = [
        "const { execFileSync, spawnSync } = require('node:child_process');",
        "execFileSync('mount', ['--bind', process.argv[1], '/etc/hosts']);",
        "const run = spawnSync(process.argv[2], process.argv.slice(3), { stdio: 'inherit' });",
        'process.exit(run.status ?? 1);',
      ].join('\n');
      command = ['unshare', '-m', '--', process.execPath, '-e', launcher, hosts, ...argv];
    }
    const { code, stdout, stderr, cancellation } = await spawnStep(command, invocation, env, commands);
    commands.end();
    const contents: Record<string, string> = {};
    for (const [name, file] of Object.entries(files)) contents[name] = await readFile(file, 'utf8');
    Object.assign(this.exported, parseCommandFile(contents.GITHUB_ENV ?? ''));
    this.paths.unshift(
      ...(contents.GITHUB_PATH ?? '')
        .split('\n')
        .filter((line) => line !== '')
        .reverse(),
    );
    return {
      code,
      stdout,
      stderr,
      log: commands.log,
      annotations: commands.annotations,
      masks: commands.masks,
      outputs: { ...commands.outputs, ...parseCommandFile(contents.GITHUB_OUTPUT ?? '') },
      state: { ...commands.state, ...parseCommandFile(contents.GITHUB_STATE ?? '') },
      summary: contents.GITHUB_STEP_SUMMARY ?? '',
      files: contents,
      env,
      ...(cancellation ? { cancellation } : {}),
    };
  }
}

/** The runner's windows after "Cancel workflow" (ProcessInvoker: SIGINT, then SIGTERM, then the tree is killed). */
export const CANCEL_SIGINT_WINDOW_MS = 7_500;
export const CANCEL_SIGTERM_WINDOW_MS = 2_500;

async function spawnStep(
  command: string[],
  invocation: ActionInvocation,
  env: NodeJS.ProcessEnv,
  commands: WorkflowCommandProcessor,
): Promise<{ code: number; stdout: string; stderr: string; cancellation?: Cancellation }> {
  const child = spawn(command[0]!, command.slice(1), {
    cwd: invocation.workspace,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<{ exit: number | null; signal: NodeJS.Signals | null }>((done) =>
    child.on('close', (exit, signal) => done({ exit, signal })),
  );
  let out = '';
  let err = '';
  let cancelled: Promise<CancelSignal[]> | undefined;
  const seen = new Map<number, ProcessIdentity>();
  let watcher: NodeJS.Timeout | undefined;
  if (invocation.cancelWhen || invocation.killWhen) {
    // Every descendant ever seen, so the test can tell which ones outlived the step.
    watcher = setInterval(() => void collectDescendants(child.pid!, seen), 100);
  }
  const check = () => {
    if (cancelled) return;
    if (invocation.killWhen?.(out + err)) {
      cancelled = (async () => {
        await collectDescendants(child.pid!, seen);
        for (const pid of [child.pid!, ...seen.keys()]) killQuietly(pid);
        return ['SIGKILL'] satisfies CancelSignal[];
      })();
      return;
    }
    if (!invocation.cancelWhen?.(out + err)) return;
    cancelled = (async () => {
      await collectDescendants(child.pid!, seen);
      const signals: CancelSignal[] = ['SIGINT'];
      child.kill('SIGINT');
      if (await settlesWithin(exited, CANCEL_SIGINT_WINDOW_MS)) return signals;
      signals.push('SIGTERM');
      child.kill('SIGTERM');
      if (await settlesWithin(exited, CANCEL_SIGTERM_WINDOW_MS)) return signals;
      signals.push('SIGKILL');
      await collectDescendants(child.pid!, seen);
      for (const pid of [child.pid!, ...seen.keys()]) killQuietly(pid);
      return signals;
    })();
  };
  child.stdout.on('data', (chunk: Buffer) => {
    const text = chunk.toString('utf8');
    out += text;
    commands.write('stdout', text);
    check();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    const text = chunk.toString('utf8');
    err += text;
    commands.write('stderr', text);
    check();
  });
  const { exit, signal } = await exited;
  if (watcher) clearInterval(watcher);
  const code = exit ?? (signal ? 128 : 1);
  if (!cancelled) return { code, stdout: out, stderr: err };
  const signals = await cancelled;
  const leftRunning: Cancellation['leftRunning'] = [];
  for (const [pid, identity] of seen) {
    const now = await processIdentity(pid);
    if (now && now.startTime === identity.startTime) leftRunning.push({ pid, command: identity.command });
  }
  return { code, stdout: out, stderr: err, cancellation: { signals, leftRunning } };
}

function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  return new Promise((done) => {
    const timer = setTimeout(() => done(false), ms);
    void promise.then(() => {
      clearTimeout(timer);
      done(true);
    });
  });
}

function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    /* already gone */
  }
}

interface ProcessIdentity {
  ppid: number;
  /** Start time in clock ticks since boot: tells a pid apart from a later process that reuses it. */
  startTime: string;
  command: string;
}

async function processIdentity(pid: number): Promise<ProcessIdentity | undefined> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // The command (field 2) is in parentheses and may itself hold spaces and parentheses.
    const close = stat.lastIndexOf(')');
    const fields = stat.slice(close + 2).split(' ');
    if (fields[0] === 'Z') return undefined;
    return { ppid: Number(fields[1]), startTime: fields[19] ?? '', command: stat.slice(stat.indexOf('(') + 1, close) };
  } catch {
    return undefined;
  }
}

/** Adds every live descendant of `root` to `seen`. */
async function collectDescendants(root: number, seen: Map<number, ProcessIdentity>): Promise<void> {
  const table = new Map<number, ProcessIdentity>();
  for (const name of await readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(name)) continue;
    const identity = await processIdentity(Number(name));
    if (identity) table.set(Number(name), identity);
  }
  const parents = new Set([root, ...seen.keys()]);
  let grew = true;
  while (grew) {
    grew = false;
    for (const [pid, identity] of table) {
      if (!parents.has(pid) && parents.has(identity.ppid)) {
        parents.add(pid);
        seen.set(pid, identity);
        grew = true;
      }
    }
  }
}

/** Runs one step as a job of its own. */
export async function runActionBundle(invocation: ActionInvocation): Promise<ActionResult> {
  const job = await RunnerJob.start();
  try {
    return await job.step(invocation);
  } finally {
    await job.close();
  }
}

/** Real-shaped event payloads (the fields GitHub sends that matter here, and then some). */
export const events = {
  pullRequest(
    repository: string,
    number: number,
    actor: string,
    options: { fork?: boolean; headRef?: string } = {},
  ): RunnerEvent {
    const [owner = ''] = repository.split('/');
    const repo = {
      id: 4242,
      name: repository.split('/')[1],
      full_name: repository,
      owner: { login: owner },
      default_branch: 'main',
      private: false,
    };
    const headRepo = options.fork
      ? { ...repo, id: 9999, full_name: `${actor}/${repo.name}`, owner: { login: actor }, fork: true }
      : repo;
    return {
      name: 'pull_request',
      payload: {
        action: 'synchronize',
        number,
        pull_request: {
          id: 100000 + number,
          number,
          state: 'open',
          title: 'Add edge hosts',
          user: { login: actor, type: 'User' },
          head: { ref: options.headRef ?? 'feature', sha: 'fedcba9876543210fedcba9876543210fedcba98', repo: headRepo },
          base: { ref: 'main', sha: '0123456789abcdef0123456789abcdef01234567', repo },
          html_url: `https://github.com/${repository}/pull/${number}`,
        },
        repository: repo,
        sender: { login: actor, type: 'User' },
      },
    };
  },
  push(repository: string, actor: string, ref = 'refs/heads/main'): RunnerEvent {
    return {
      name: 'push',
      payload: {
        ref,
        before: '0000000000000000000000000000000000000000',
        after: '0123456789abcdef0123456789abcdef01234567',
        repository: {
          name: repository.split('/')[1],
          full_name: repository,
          owner: { login: repository.split('/')[0] },
          default_branch: 'main',
        },
        pusher: { name: actor },
        sender: { login: actor, type: 'User' },
        head_commit: { id: '0123456789abcdef0123456789abcdef01234567', message: 'Add edge hosts' },
      },
    };
  },
  workflowDispatch(
    repository: string,
    actor: string,
    inputs: Record<string, string>,
    ref = 'refs/heads/main',
  ): RunnerEvent {
    return {
      name: 'workflow_dispatch',
      payload: {
        inputs,
        ref,
        repository: {
          name: repository.split('/')[1],
          full_name: repository,
          owner: { login: repository.split('/')[0] },
          default_branch: 'main',
        },
        sender: { login: actor, type: 'User' },
        workflow: '.github/workflows/exocomp-approve.yml',
      },
    };
  },
  schedule(repository: string, cron = '17 3 * * *'): RunnerEvent {
    return {
      name: 'schedule',
      payload: {
        schedule: cron,
        repository: {
          name: repository.split('/')[1],
          full_name: repository,
          owner: { login: repository.split('/')[0] },
          default_branch: 'main',
        },
      },
    };
  },
};
