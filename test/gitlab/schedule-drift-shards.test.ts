/**
 * Issue 12 on GitLab: `schedule add --gitlab --kind drift` and `--gitlab --shards 3`
 * write includes of templates/drift.yml and templates/converge.yml; gitlab-ci-local
 * runs the pipelines those schedules fire (the real CLI, real ansible, the OpenTofu
 * stand-in as `tofu`, the ledger pushed with the job token, the GitLab API double):
 * a drift check that finds the hosts unconverged (exit 3, allowed: the pipeline
 * passes with a warning) opens the sticky drift issue; a converge split over three
 * `parallel` jobs and folded names every host; the next drift check is clean and
 * closes the issue with a note.
 */
import { cp, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProcess, type RunResult } from '../../src/adapters/process.js';
import { exocompBin, runPipeline } from '../support/gitlab-ci.js';
import { startDoubleWithProject, type GitLabDouble } from '../support/gitlab-double.js';
import { ledgerFile as ledgerFileOf } from '../support/ledger-git.js';
import { fixtureWorkspacesDir, standinPath } from '../support/tofu-standin.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const PROJECT = { id: 42, path: 'acme/infra', jobTokenPushAllowed: true };
const MAINTAINER_TOKEN = 'glpat-maintainer-api-0002';
const BOT_TOKEN = 'glpat-exocomp-bot-api-0003';
const HOSTS = ['runner1', 'runner2', 'runner3', 'runner4', 'runner5', 'runner6'];

let root: string;
let project: string;
let double: GitLabDouble;
let env: NodeJS.ProcessEnv;
let marker: string;
let nextJob = 1000;

async function run(cmd: string, args: string[], options: { env?: NodeJS.ProcessEnv } = {}): Promise<RunResult> {
  const r = await runProcess(cmd, args, { cwd: project, env: { ...env, ...options.env }, timeoutMs: 300_000 });
  if (r.code !== 0)
    throw new Error(`${cmd} ${args.join(' ')} exited ${r.code}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`);
  return r;
}

const ledgerFile = (file: string) => ledgerFileOf(path.join(root, 'git/acme/infra.git'), file);

/** What a pipeline schedule fires: its variable, a running job's token, the schedule owner's login, the bot token for issues. */
async function fire(schedule: string): Promise<RunResult> {
  nextJob += 1;
  const jobToken = double.jobToken({
    id: nextJob,
    projectId: PROJECT.id,
    name: `exocomp-${schedule}`,
    stage: 'deploy',
    status: 'running',
    pipelineId: nextJob,
    user: 'maria',
    ref: 'main',
    sha: '0'.repeat(40),
  });
  const result = await runPipeline({
    cwd: project,
    env,
    variables: {
      CI_PIPELINE_SOURCE: 'schedule',
      EXOCOMP_SCHEDULE: schedule,
      CI_JOB_TOKEN: jobToken,
      CI_PROJECT_ID: String(PROJECT.id),
      GITLAB_USER_LOGIN: 'maria',
      EXOCOMP_GITLAB_TOKEN: BOT_TOKEN,
    },
  });
  for (const secret of [jobToken, BOT_TOKEN]) expect(`${result.stdout}${result.stderr}`).not.toContain(secret);
  return result;
}

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'exocomp-gitlab-drift-'));
  double = await startDoubleWithProject(root, PROJECT);
  double.state.tokens[MAINTAINER_TOKEN] = { kind: 'personal', username: 'maria', scopes: ['api'] };
  double.state.tokens[BOT_TOKEN] = { kind: 'project', username: 'project_42_bot', scopes: ['api'] };

  // The image's tools: the CLI, and `tofu` (the stand-in) on PATH.
  const bin = await exocompBin(path.join(root, 'bin'));
  await symlink(standinPath, path.join(bin, 'tofu'));
  env = {
    PATH: `${bin}:${process.env.PATH}`,
    HOME: path.join(root, 'home'),
    XDG_CACHE_HOME: path.join(root, 'cache'),
    LANG: 'C.UTF-8',
  };
  await mkdir(env.HOME as string);

  project = path.join(root, 'project');
  await mkdir(project);
  await cp(path.join(repoRoot, 'templates'), path.join(project, 'templates'), { recursive: true });
  await cp(path.join(fixtureWorkspacesDir, 'edge'), path.join(project, 'edge'), { recursive: true });
  // Six hosts the play reaches on the runner itself; each converge writes its own marker file.
  const hosts = Object.fromEntries(
    HOSTS.map((h) => [h, { ansible_connection: 'local', ansible_python_interpreter: '/usr/bin/python3' }]),
  );
  await writeFile(
    path.join(project, 'edge/exocomp.auto.tfvars.json'),
    JSON.stringify({ ansible_inventory: { all: { hosts } } }),
  );
  marker = path.join(root, 'converged');
  await writeFile(
    path.join(project, 'site.yml'),
    [
      '- name: Converge',
      '  hosts: all',
      '  gather_facts: false',
      '  tasks:',
      '    - name: Write the marker',
      '      ansible.builtin.copy:',
      `        dest: "${marker}-{{ inventory_hostname }}"`,
      '        content: "{{ inventory_hostname }}\\n"',
      '',
    ].join('\n'),
  );
  await run('git', ['init', '--quiet', '-b', 'main']);
  await run('git', ['remote', 'add', 'origin', `${double.url}/${PROJECT.path}.git`]);
  // The first apply: tf:edge names the six hosts; the state stays in the workspace, committed with it.
  await run(
    'exocomp',
    [
      'workspace',
      'apply',
      'edge',
      '--workspace-name',
      'edge',
      '--allow-local-state',
      '--ledger',
      `${double.url}/${PROJECT.path}.git`,
    ],
    {
      env: double.gitAuthEnv(MAINTAINER_TOKEN),
    },
  );

  const common = ['--gitlab', '--cron', '0 0 4 * * *', '--target', 'tf:edge'];
  await run('exocomp', [
    'schedule',
    'add',
    'edge-drift',
    ...common,
    '--kind',
    'drift',
    '--workspace',
    'edge',
    '--concurrency-key',
    'edge-drift',
    '--gitlab-template',
    'templates/drift.yml',
    '--',
    'site.yml',
  ]);
  await run('exocomp', [
    'schedule',
    'add',
    'nightly',
    ...common,
    '--kind',
    'play',
    '--shards',
    '3',
    '--concurrency-key',
    'edge-converge',
    '--gitlab-template',
    'templates/converge.yml',
    '--',
    'site.yml',
  ]);
  await writeFile(
    path.join(project, '.gitlab-ci.yml'),
    ['include:', '  - local: .gitlab/exocomp-edge-drift.yml', '  - local: .gitlab/exocomp-nightly.yml', ''].join('\n'),
  );
  await run('git', ['add', '-A']);
  await run('git', [
    '-c',
    'user.name=maria',
    '-c',
    'user.email=maria@example.invalid',
    'commit',
    '--quiet',
    '-m',
    'drift and converge schedules',
  ]);
}, 300_000);

afterAll(async () => {
  await double?.stop();
  if (root) await rm(root, { recursive: true, force: true });
});

describe('GitLab drift and sharded converge schedules', () => {
  it('drift opens the issue (exit 3 allowed), three parallel shards (`parallel: 3`) and a fold converge all six hosts, the next check closes the issue', async () => {
    const found = await fire('edge-drift');
    expect(found.code, `${found.stdout}\n${found.stderr}`).toBe(0);
    expect(found.stdout).toContain('exocomp-drift-edge-drift');
    // Drift is exit 3, which the job may fail with: a warning, not a failed pipeline.
    expect(found.stdout).toMatch(/WARN\s+exocomp-drift-edge-drift/);
    // Issue 38, item 1: the check-mode play prints one line per task and host (gitlab-ci-local shows the job's
    // stderr on its own), as the provision jobs do; no raw ansible.
    const driftLog = `${found.stdout}\n${found.stderr}`;
    expect(driftLog).toMatch(/exocomp-drift-edge-drift +> \S+ · .+ \(\d+\/\d+\) [\d.]+m?s$/m);
    expect(driftLog).not.toContain('PLAY RECAP');
    expect(driftLog).not.toMatch(/TASK \[/);
    expect(found.stdout).not.toContain('exocomp-converge-nightly');
    expect(double.state.issues).toHaveLength(1);
    const issue = double.state.issues[0];
    expect(issue).toMatchObject({
      title: 'Drift in tf:edge',
      state: 'opened',
      labels: ['exocomp-drift'],
      author: 'project_42_bot',
    });
    for (const host of HOSTS) expect(issue?.description).toContain(host);
    expect(issue?.description).toContain('Write the marker');
    // The report is also the job's artifact.
    expect(await readFile(path.join(project, 'exocomp-drift.md'), 'utf8')).toContain('Write the marker');
    // Check mode changed nothing; the run and its schedule tick are in the ledger.
    for (const host of HOSTS) await expect(readFile(`${marker}-${host}`, 'utf8')).rejects.toThrow(/ENOENT/);
    const history = JSON.parse((await ledgerFile('drift/edge.json')) ?? '{}') as { runs: Array<{ verdict: string }> };
    expect(history.runs.map((r) => r.verdict)).toEqual(['drift']);
    expect(JSON.parse((await ledgerFile('schedules/edge-drift.json')) ?? '{}')).toMatchObject({ cron: '0 4 * * *' });

    const converged = await fire('nightly');
    expect(converged.code, `${converged.stdout}\n${converged.stderr}`).toBe(0);
    for (const job of [
      'exocomp-converge-nightly-shard: [1/3]',
      'exocomp-converge-nightly-shard: [2/3]',
      'exocomp-converge-nightly-shard: [3/3]',
      'exocomp-converge-nightly-fold',
    ]) {
      expect(converged.stdout).toMatch(new RegExp(`PASS\\s+${job.replace(/[[\]/]/g, '\\$&')}`));
    }
    // The unsharded job of the template is not in this pipeline.
    expect(converged.stdout).not.toMatch(/exocomp-converge-nightly\s+starting/);
    expect(converged.stdout).toContain('converged tf:edge: 6 host(s) over 3 shard(s)');
    for (const host of HOSTS) expect(await readFile(`${marker}-${host}`, 'utf8')).toBe(`${host}\n`);
    const converges = JSON.parse((await ledgerFile('converges/edge/history.json')) ?? '{}') as {
      runs: Array<{ ok: boolean; shards: number; hosts: Array<{ host: string }> }>;
    };
    expect(converges.runs).toHaveLength(1);
    expect(converges.runs[0]).toMatchObject({ ok: true, shards: 3 });
    expect(converges.runs[0]?.hosts.map((h) => h.host).sort()).toEqual(HOSTS);
    // The fold recorded the schedule's fire, once for the three shards.
    expect(JSON.parse((await ledgerFile('schedules/nightly.json')) ?? '{}')).toMatchObject({
      cron: '0 4 * * *',
      fires: [expect.any(String)],
    });

    const clean = await fire('edge-drift');
    expect(clean.code, `${clean.stdout}\n${clean.stderr}`).toBe(0);
    expect(clean.stdout).toMatch(/PASS\s+exocomp-drift-edge-drift/);
    expect(double.state.issues).toHaveLength(1);
    expect(double.state.issues[0]).toMatchObject({
      state: 'closed',
      notes: [{ author: 'project_42_bot', body: expect.stringContaining('No drift any more') }],
    });
    expect(double.violations).toEqual([]);
  }, 600_000);
});
