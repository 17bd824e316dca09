/**
 * Issue 11, schedules: `schedule add --gitlab --create` against the GitLab API
 * double writes the include of templates/converge.yml and creates one pipeline
 * schedule with its variable; gitlab-ci-local then runs that schedule's pipeline
 * (the real CLI, the ledger pushed with the job token over git HTTP, real
 * ansible against the standing inventory); `schedule remove --gitlab` deletes it.
 */
import { chmod, cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProcess, type RunResult } from '../../src/adapters/process.js';
import { exocompBin, runPipeline } from '../support/gitlab-ci.js';
import { startDoubleWithProject, type GitLabDouble } from '../support/gitlab-double.js';
import { fixtureWorkspacesDir, standinPath } from '../support/tofu-standin.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const PROJECT = { id: 42, path: 'acme/infra', jobTokenPushAllowed: true };
const MAINTAINER_TOKEN = 'glpat-maintainer-api-0001';

let root: string;
let project: string;
let double: GitLabDouble;
let env: NodeJS.ProcessEnv;
let marker: string;

async function run(
  cmd: string,
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<RunResult> {
  const r = await runProcess(cmd, args, {
    cwd: options.cwd ?? project,
    env: { ...env, ...options.env },
    timeoutMs: 300_000,
  });
  if (r.code !== 0)
    throw new Error(`${cmd} ${args.join(' ')} exited ${r.code}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`);
  return r;
}

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'exocomp-gitlab-schedule-'));
  double = await startDoubleWithProject(root, PROJECT);
  double.state.tokens[MAINTAINER_TOKEN] = { kind: 'personal', username: 'maria', scopes: ['api'] };
  const bin = await exocompBin(path.join(root, 'bin'));
  env = {
    PATH: `${bin}:${process.env.PATH}`,
    HOME: path.join(root, 'home'),
    XDG_CACHE_HOME: path.join(root, 'cache'),
    LANG: 'C.UTF-8',
  };
  await mkdir(env.HOME as string);

  // The user's project: the component's converge template kept locally, a converge playbook.
  project = path.join(root, 'project');
  await mkdir(project);
  await cp(path.join(repoRoot, 'templates'), path.join(project, 'templates'), { recursive: true });
  marker = path.join(root, 'converged');
  await writeFile(
    path.join(project, 'converge.yml'),
    [
      '- name: Converge',
      '  hosts: all',
      '  gather_facts: false',
      '  tasks:',
      '    - ansible.builtin.copy:',
      `        dest: "${marker}-{{ inventory_hostname }}"`,
      '        content: "{{ inventory_hostname }}\\n"',
      '',
    ].join('\n'),
  );
  await writeFile(
    path.join(project, '.gitlab-ci.yml'),
    ['include:', '  - local: .gitlab/exocomp-nightly.yml', ''].join('\n'),
  );
  await run('git', ['init', '--quiet', '-b', 'main']);
  await run('git', ['remote', 'add', 'origin', `${double.url}/${PROJECT.path}.git`]);

  // tf:edge names one host the play reaches on the runner itself.
  const workspace = path.join(root, 'edge');
  await cp(path.join(fixtureWorkspacesDir, 'edge'), workspace, { recursive: true });
  const vars = path.join(root, 'vars.json');
  await writeFile(
    vars,
    JSON.stringify({
      ansible_inventory: {
        all: { hosts: { runner1: { ansible_connection: 'local', ansible_python_interpreter: '/usr/bin/python3' } } },
      },
    }),
  );
  await run(
    'exocomp',
    [
      'workspace',
      'apply',
      workspace,
      '--workspace-name',
      'edge',
      '--tofu-binary',
      standinPath,
      '--allow-local-state',
      '--vars-file',
      vars,
      '--ledger',
      `${double.url}/${PROJECT.path}.git`,
    ],
    { env: double.gitAuthEnv(MAINTAINER_TOKEN) },
  );
});

afterAll(async () => {
  await double?.stop();
  if (root) await rm(root, { recursive: true, force: true });
});

describe('a GitLab pipeline schedule for a converge', () => {
  it('is created with its variable, fires the converge job through the template, and is removed', async () => {
    const api = { EXOCOMP_GITLAB_TOKEN: MAINTAINER_TOKEN };
    const added = await run(
      'exocomp',
      [
        'schedule',
        'add',
        'nightly',
        '--gitlab',
        '--create',
        '--gitlab-url',
        double.url,
        '--gitlab-project',
        String(PROJECT.id),
        '--gitlab-template',
        'templates/converge.yml',
        '--cron',
        '0 17 3 * * *',
        '--kind',
        'play',
        '--target',
        'tf:edge',
        '--concurrency-key',
        'edge-converge',
        '--json',
        '--',
        'converge.yml',
      ],
      { env: api },
    );
    const result = (JSON.parse(added.stdout) as { result: { path: string; state: string; schedule: { id: number } } })
      .result;
    expect(result.state).toBe('created');
    expect(double.state.schedules).toEqual([
      expect.objectContaining({
        id: result.schedule.id,
        description: 'exocomp nightly',
        cron: '17 3 * * *',
        cronTimezone: 'UTC',
        ref: 'refs/heads/main',
        active: true,
        variables: [{ key: 'EXOCOMP_SCHEDULE', value: 'nightly', variableType: 'env_var' }],
      }),
    ]);
    const file = parseYaml(await readFile(path.join(project, '.gitlab/exocomp-nightly.yml'), 'utf8')) as {
      include: [{ local: string }];
    };
    expect(file.include[0].local).toBe('templates/converge.yml');

    const listed = await run(
      'exocomp',
      ['schedule', 'list', '--gitlab', '--gitlab-url', double.url, '--gitlab-project', String(PROJECT.id), '--json'],
      { env: api },
    );
    expect(
      (JSON.parse(listed.stdout) as { result: { schedules: { name: string }[] } }).result.schedules.map((s) => s.name),
    ).toEqual(['nightly']);

    // What the schedule fires: a pipeline with its variables, run by the schedule's owner.
    await run('git', ['add', '-A']);
    await run('git', [
      '-c',
      'user.name=maria',
      '-c',
      'user.email=maria@example.invalid',
      'commit',
      '--quiet',
      '-m',
      'converge schedule',
    ]);
    const jobToken = double.jobToken({
      id: 901,
      projectId: PROJECT.id,
      name: 'exocomp-converge-nightly',
      stage: 'deploy',
      status: 'running',
      pipelineId: 900,
      user: 'maria',
      ref: 'main',
      sha: '0'.repeat(40),
    });
    // The fleet key as a GitLab runner writes a File variable: 0666 (issue 38, item 6).
    const fleetKey = path.join(root, 'EXOCOMP_FLEET_KEY');
    await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', fleetKey]);
    await chmod(fleetKey, 0o666);
    const pipeline = await runPipeline({
      cwd: project,
      env,
      variables: {
        EXOCOMP_FLEET_KEY: fleetKey,
        CI_PIPELINE_SOURCE: 'schedule',
        EXOCOMP_SCHEDULE: 'nightly',
        CI_JOB_TOKEN: jobToken,
        CI_PROJECT_ID: String(PROJECT.id),
        GITLAB_USER_LOGIN: 'maria',
      },
    });
    expect(pipeline.code, `${pipeline.stdout}\n${pipeline.stderr}`).toBe(0);
    expect(pipeline.stdout).toContain('exocomp-converge-nightly');
    expect(await readFile(`${marker}-runner1`, 'utf8')).toBe('runner1\n');
    // Issue 38: one line per task and host as the provision jobs print them, no raw ansible; no mode warning for
    // the runner's key file (the run copies it privately); the lease held by the GitLab job.
    // gitlab-ci-local shows a job's stderr (where the CLI writes its progress) on its own stderr.
    const log = `${pipeline.stdout}\n${pipeline.stderr}`;
    expect(log).toMatch(/> runner1 · ansible\.builtin\.copy ✓ changed \(1\/1\)/);
    expect(log).not.toContain('PLAY RECAP');
    expect(log).not.toMatch(/TASK \[/);
    expect(log).not.toContain('can be read by others');
    expect(log).toMatch(/holding concurrency key edge-converge as gitlab:acme\/infra:\d+:\d+$/m);
    // The lease of the concurrency key was pushed to the ledger with the job token.
    expect(
      double.gitRequests.some(
        (r) => r.service === 'git-receive-pack' && r.phase === 'rpc' && r.login === 'maria' && r.status === 200,
      ),
    ).toBe(true);
    expect(pipeline.stdout).not.toContain(jobToken);

    const removed = await run(
      'exocomp',
      [
        'schedule',
        'remove',
        'nightly',
        '--gitlab',
        '--gitlab-url',
        double.url,
        '--gitlab-project',
        String(PROJECT.id),
        '--json',
      ],
      { env: api },
    );
    expect(JSON.parse(removed.stdout)).toEqual({
      result: expect.objectContaining({ schedulesRemoved: 1, fileRemoved: true }),
    });
    expect(double.state.schedules).toEqual([]);
    expect(double.violations).toEqual([]);
  }, 600_000);
});
