/**
 * Runs an action's bundle the way the GitHub runner does (DESIGN.md §8, §9):
 * `node <runs.main>` from its action.yml, with every declared input as
 * INPUT_<NAME> (upper-cased, dashes kept) and the defaults applied FROM
 * action.yml (bundles never apply them), GITHUB_OUTPUT / GITHUB_STATE /
 * GITHUB_STEP_SUMMARY / GITHUB_ENV / GITHUB_PATH files, a real-shaped event
 * payload at GITHUB_EVENT_PATH, and the API and git server at the double.
 * Outputs are parsed back from the GITHUB_OUTPUT file.
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';

export const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

export interface ActionMetadata {
  name: string;
  description: string;
  inputs: Record<string, { description: string; required?: boolean; default?: string }>;
  outputs: Record<string, { description: string; value?: string }>;
  runs: { using: string; main?: string; steps?: unknown[] };
  branding?: { icon: string; color: string };
}

/** The action.yml of an action: `provision` is the root action, the others live under actions/<name>/. */
export function actionYmlPath(action: string): string {
  return action === 'provision' ? join(repoRoot, 'action.yml') : join(repoRoot, 'actions', action, 'action.yml');
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
  /** Inputs as a workflow's `with:` gives them; undeclared inputs are refused. */
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
}

export interface ActionResult {
  code: number;
  stdout: string;
  stderr: string;
  outputs: Record<string, string>;
  summary: string;
  /** Every file the runner gave the step, for searching (outputs, summary, state, env). */
  files: Record<string, string>;
  /** The env the step ran with (INPUT_* included). */
  env: NodeJS.ProcessEnv;
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

export async function runActionBundle(invocation: ActionInvocation): Promise<ActionResult> {
  const metadata = await readActionMetadata(invocation.action);
  if (!metadata.runs.main) throw new Error(`${invocation.action} is not a JavaScript action`);
  const main = resolve(dirname(actionYmlPath(invocation.action)), metadata.runs.main);
  const given = invocation.with ?? {};
  for (const name of Object.keys(given)) {
    if (!(name in metadata.inputs)) throw new Error(`input ${name} is not declared in ${invocation.action}'s action.yml`);
  }
  const inputEnv: Record<string, string> = {};
  for (const [name, declared] of Object.entries(metadata.inputs)) {
    const value = given[name] ?? evaluateDefault(String(declared.default ?? ''), invocation.githubToken);
    inputEnv[`INPUT_${name.replace(/ /g, '_').toUpperCase()}`] = value;
  }

  const dir = await mkdtemp(join(tmpdir(), 'exocomp-runner-'));
  try {
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
    const runnerTemp = join(dir, 'runner-temp');
    const home = join(dir, 'home');
    await mkdir(runnerTemp);
    await mkdir(home);
    const run = invocation.run;
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      LANG: 'C.UTF-8',
      HOME: home,
      CI: 'true',
      GITHUB_ACTIONS: 'true',
      RUNNER_OS: 'Linux',
      RUNNER_ARCH: 'X64',
      RUNNER_TEMP: runnerTemp,
      RUNNER_TOOL_CACHE: join(dir, 'tool-cache'),
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
      ...files,
      ...inputEnv,
      ...invocation.env,
    };
    let command = [process.execPath, main];
    if (invocation.loopbackHostname) {
      const hosts = join(dir, 'hosts');
      await writeFile(hosts, `${await readFile('/etc/hosts', 'utf8')}\n127.0.0.1 ${invocation.loopbackHostname}\n`);
      // unshare -m makes mounts private: the bind mount is seen by this step only and ends with it. No shell in
      // between: shells drop environment variables whose names hold dashes (INPUT_SSH-WAIT).
      const launcher = [
        "const { execFileSync, spawnSync } = require('node:child_process');",
        "execFileSync('mount', ['--bind', process.argv[1], '/etc/hosts']);",
        "const run = spawnSync(process.execPath, [process.argv[2]], { stdio: 'inherit' });",
        'process.exit(run.status ?? 1);',
      ].join('\n');
      command = ['unshare', '-m', '--', process.execPath, '-e', launcher, hosts, main];
    }
    const { code, stdout, stderr } = await new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
      const child = spawn(command[0]!, command.slice(1), { cwd: invocation.workspace, env, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
      child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
      child.on('close', (exit, signal) => done({ code: exit ?? (signal ? 128 : 1), stdout: out, stderr: err }));
    });
    const contents: Record<string, string> = {};
    for (const [name, file] of Object.entries(files)) contents[name] = await readFile(file, 'utf8');
    return {
      code,
      stdout,
      stderr,
      outputs: parseCommandFile(contents.GITHUB_OUTPUT ?? ''),
      summary: contents.GITHUB_STEP_SUMMARY ?? '',
      files: contents,
      env,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Real-shaped event payloads (the fields GitHub sends that matter here, and then some). */
export const events = {
  pullRequest(repository: string, number: number, actor: string, options: { fork?: boolean; headRef?: string } = {}): RunnerEvent {
    const [owner = ''] = repository.split('/');
    const repo = { id: 4242, name: repository.split('/')[1], full_name: repository, owner: { login: owner }, default_branch: 'main', private: false };
    const headRepo = options.fork ? { ...repo, id: 9999, full_name: `${actor}/${repo.name}`, owner: { login: actor }, fork: true } : repo;
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
        repository: { name: repository.split('/')[1], full_name: repository, owner: { login: repository.split('/')[0] }, default_branch: 'main' },
        pusher: { name: actor },
        sender: { login: actor, type: 'User' },
        head_commit: { id: '0123456789abcdef0123456789abcdef01234567', message: 'Add edge hosts' },
      },
    };
  },
  workflowDispatch(repository: string, actor: string, inputs: Record<string, string>, ref = 'refs/heads/main'): RunnerEvent {
    return {
      name: 'workflow_dispatch',
      payload: {
        inputs,
        ref,
        repository: { name: repository.split('/')[1], full_name: repository, owner: { login: repository.split('/')[0] }, default_branch: 'main' },
        sender: { login: actor, type: 'User' },
        workflow: '.github/workflows/exocomp-approve.yml',
      },
    };
  },
  schedule(repository: string, cron = '17 3 * * *'): RunnerEvent {
    return {
      name: 'schedule',
      payload: { schedule: cron, repository: { name: repository.split('/')[1], full_name: repository, owner: { login: repository.split('/')[0] }, default_branch: 'main' } },
    };
  },
};
