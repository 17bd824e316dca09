/**
 * Issue 11, provision through the GitLab templates, run by gitlab-ci-local:
 * the plan job (requester alice) → the manual apply job run by alice herself
 * (refused, nothing applied, the gate's setup warning shown) → the same job run by bob, then configure, against
 * a real loopback sshd host, real ansible, the OpenTofu stand-in, the ledger in
 * the GitLab double's git (pushed with each job's job token).
 */
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProcess, type RunResult } from '../../src/adapters/process.js';
import { exocompBin, pipelineArgs, runPipeline } from '../support/gitlab-ci.js';
import { scaled } from '../support/time.js';
import { GitLabDouble } from '../support/gitlab-double.js';
import { createLoopbackHost, generateKeyPair, type LoopbackHost } from '../support/loopback-host.js';
import { fixtureWorkspacesDir, readStandinLog, standinPath } from '../support/tofu-standin.js';
import { ledgerFile as ledgerFileOf } from '../support/ledger-git.js';
import { readWorkflow } from '../../src/ledger/records.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const PROJECT = { id: 42, path: 'acme/infra', jobTokenPushAllowed: true };
const PIPELINE = 700;
const BOT_TOKEN = 'glpat-project-bot-api-01';
const SEAL_KEY = 'loopback-only-seal-key-0123456789abcdef';
// What makes the manual gate meaningful: the default branch and the ledger's record branches, pushed by Maintainers.
const PROTECTED_MAIN = { projectId: PROJECT.id, name: 'main', push: [{ accessLevel: 40 }], allowForcePush: false };
const PROTECTED_RECORDS = { ...PROTECTED_MAIN, name: 'exocomp-ledger-records/*' };

let root: string;
let project: string;
let double: GitLabDouble;
let host: LoopbackHost;
let env: NodeJS.ProcessEnv;
let standinLog: string;
let variables: Record<string, string>;

async function run(cmd: string, args: string[], cwd = project): Promise<RunResult> {
  const r = await runProcess(cmd, args, { cwd, env, timeoutMs: 120_000 });
  if (r.code !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  return r;
}

/** One person's pass at the pipeline: their job token, their login. */
function asUser(user: string, jobId: number): Record<string, string> {
  const token = double.jobToken({
    id: jobId,
    projectId: PROJECT.id,
    name: 'job',
    stage: 'deploy',
    status: 'running',
    pipelineId: PIPELINE,
    user,
    ref: 'main',
    sha: '0'.repeat(40),
  });
  return { ...variables, CI_JOB_TOKEN: token, GITLAB_USER_LOGIN: user };
}

/** The variables of alice's job in merge request pipeline `pipeline`. */
const mergeRequestJob = (jobId: number, pipeline: number, extra: Record<string, string> = {}) => ({
  ...asUser('alice', jobId),
  CI_PIPELINE_ID: String(pipeline),
  CI_PIPELINE_SOURCE: 'merge_request_event',
  ...extra,
});

const ledgerFile = (file: string) => ledgerFileOf(path.join(root, 'git/acme/infra.git'), file);

async function until(condition: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await sleep(250);
  }
}

/** Plan files, or private directories of ours, left under the jobs' TMPDIR or in the project. */
async function leftPlans(): Promise<string[]> {
  const found = await runProcess('find', [root, '(', '-name', '*.tfplan', '-o', '-name', 'exocomp-plan-*', ')']);
  return found.stdout.split('\n').filter((line) => line !== '' && !line.endsWith('.sealed'));
}

const applies = async () => (await readStandinLog(standinLog)).filter((i) => i.argv[0] === 'apply').length;

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'exocomp-gitlab-provision-'));
  const gitRoot = path.join(root, 'git');
  await mkdir(path.join(gitRoot, 'acme'), { recursive: true });
  await runProcess('git', ['init', '--quiet', '--bare', path.join(gitRoot, 'acme/infra.git')]);
  double = new GitLabDouble({ gitRoot });
  await double.start();
  double.state.projects.push({ ...PROJECT });

  const keys = path.join(root, 'keys');
  await mkdir(keys);
  const bootstrap = await generateKeyPair(keys, 'bootstrap');
  const fleet = await generateKeyPair(keys, 'fleet');
  host = await createLoopbackHost({ rootAuthorizedKey: bootstrap.publicKey });
  await host.start();

  const bin = await exocompBin(path.join(root, 'bin'));
  env = {
    PATH: `${bin}:${process.env.PATH}`,
    HOME: path.join(root, 'home'),
    XDG_CACHE_HOME: path.join(root, 'cache'),
    LANG: 'C.UTF-8',
    // The jobs' temporary files, so the test sees what they leave behind.
    TMPDIR: path.join(root, 'tmp'),
  };
  await mkdir(env.HOME as string);
  await mkdir(env.TMPDIR as string);
  standinLog = path.join(root, 'tofu.log');

  project = path.join(root, 'project');
  await mkdir(project);
  await cp(path.join(repoRoot, 'templates'), path.join(project, 'templates'), { recursive: true });
  await cp(path.join(fixtureWorkspacesDir, 'edge'), path.join(project, 'edge'), { recursive: true });
  await writeFile(
    path.join(project, 'edge/exocomp.auto.tfvars.json'),
    JSON.stringify({
      ansible_inventory: {
        all: { hosts: { web1: { ansible_host: host.address, ansible_port: host.port, ansible_user: 'root' } } },
      },
    }),
  );
  await writeFile(
    path.join(project, 'site.yml'),
    [
      '- name: Configure',
      '  hosts: all',
      '  become: true',
      '  gather_facts: false',
      '  tasks:',
      '    - ansible.builtin.copy: { dest: /etc/exocomp-configure-started, content: "started\\n", mode: "0644" }',
      // The first configure job is killed while it waits here; the test lets the resumed one through.
      '    - ansible.builtin.wait_for: { path: /etc/exocomp-go, timeout: 300 }',
      '    - ansible.builtin.copy: { dest: /etc/exocomp-configured, content: "{{ inventory_hostname }}\\n", mode: "0644" }',
      '',
    ].join('\n'),
  );
  await writeFile(
    path.join(project, '.gitlab-ci.yml'),
    [
      'stages: [build, deploy]',
      'include:',
      '  - local: templates/provision.yml',
      '    inputs:',
      '      workspace: edge',
      '      playbook: site.yml',
      '      approval: manual',
      // The fixture keeps its state locally; gitlab-ci-local sets CI=true, so a job refuses that unless told.
      '      allow-local-state: true',
      '  - local: templates/resume.yml',
      '    inputs:',
      '      allow-local-state: true',
      '',
    ].join('\n'),
  );
  await writeFile(
    path.join(project, 'environment-mode.yml'),
    [
      'stages: [build, deploy]',
      'include:',
      '  - local: templates/provision.yml',
      '    inputs:',
      '      workspace: edge',
      '      playbook: site.yml',
      '      approval: environment',
      '      apply-when: on_success',
      '      environment: production',
      '      allow-local-state: true',
      '',
    ].join('\n'),
  );
  await writeFile(
    path.join(project, 'merge-request.yml'),
    [
      'include:',
      '  - local: templates/plan.yml',
      '    inputs:',
      '      workspace: edge',
      '      playbook: site.yml',
      '      allow-local-state: true',
      '',
    ].join('\n'),
  );
  await writeFile(
    path.join(project, 'merge-request-remote-state-only.yml'),
    [
      'include:',
      '  - local: templates/plan.yml',
      '    inputs:',
      '      workspace: edge',
      '      playbook: site.yml',
      '',
    ].join('\n'),
  );
  await run('git', ['init', '--quiet', '-b', 'main']);
  await run('git', ['remote', 'add', 'origin', `${double.url}/${PROJECT.path}.git`]);
  await run('git', ['add', '-A']);
  await run('git', [
    '-c',
    'user.name=alice',
    '-c',
    'user.email=alice@example.invalid',
    'commit',
    '--quiet',
    '-m',
    'infra',
  ]);

  // An open merge request whose head is the pipeline's commit, with someone's review note on it.
  const sha = (await run('git', ['rev-parse', 'HEAD'])).stdout.trim();
  double.state.mergeRequests.push({
    projectId: PROJECT.id,
    iid: 5,
    sha,
    sourceBranch: 'main',
    targetBranch: 'production',
    author: 'alice',
  });
  double.state.notes.push({
    id: 1,
    projectId: PROJECT.id,
    mergeRequestIid: 5,
    body: 'looks fine',
    author: 'carol',
    system: false,
    createdAt: '',
    updatedAt: '',
  });
  double.state.tokens[BOT_TOKEN] = { kind: 'project', username: 'project_42_bot', scopes: ['api'] };

  variables = {
    EXOCOMP_GITLAB_TOKEN: BOT_TOKEN,
    CI_PROJECT_ID: String(PROJECT.id),
    CI_PIPELINE_ID: String(PIPELINE),
    CI_COMMIT_REF_PROTECTED: 'true',
    EXOCOMP_TOFU_BINARY: standinPath,
    EXOCOMP_TOFU_STANDIN_LOG: standinLog,
    EXOCOMP_FLEET_KEY: fleet.privateKeyPath,
    EXOCOMP_BOOTSTRAP_KEY: bootstrap.privateKeyPath,
    EXOCOMP_SSH_WAIT: '60s',
    EXOCOMP_SEAL_KEY: SEAL_KEY,
  };
});

afterAll(async () => {
  await host?.destroy();
  await double?.stop();
  if (root) await rm(root, { recursive: true, force: true });
});

describe('provision through templates/provision.yml, approval: manual', () => {
  const workflowId = `edge-${PIPELINE}`;

  it('a job token the project does not let push fails the plan job naming the setting: no ledger write, no tofu', async () => {
    (double.state.projects[0] as { jobTokenPushAllowed: boolean }).jobTokenPushAllowed = false;
    try {
      const plan = await runPipeline({ cwd: project, env, variables: asUser('alice', 800), jobs: ['exocomp-plan'] });
      expect(plan.code).not.toBe(0);
      expect(plan.stdout).toContain('Allow Git push requests to the repository');
      expect(await ledgerFile(`workflows/${workflowId}.json`)).toBeUndefined();
      expect(await readStandinLog(standinLog)).toEqual([]);
    } finally {
      (double.state.projects[0] as { jobTokenPushAllowed: boolean }).jobTokenPushAllowed = true;
    }
  }, 300_000);

  it('plans in the plan job and waits for someone to run the manual apply job', async () => {
    // The default branch is protected, the ledger's record branches are not (issue 27, Deliver 4).
    double.state.protectedBranches = [PROTECTED_MAIN];
    const plan = await runPipeline({ cwd: project, env, variables: asUser('alice', 801), jobs: ['exocomp-plan'] });
    double.state.protectedBranches = [];
    expect(plan.code, `${plan.stdout}\n${plan.stderr}`).toBe(0);
    // The protection that is off is a warning naming the setting; the one that is on is not.
    expect(plan.stdout).toMatch(
      /warning: The approval gate is weaker than it looks \(missing\) — ledger records \(exocomp-ledger-records\/.*protect `exocomp-ledger-records\/\*`/,
    );
    expect(plan.stdout).not.toContain('— manual apply gate');
    const record = JSON.parse((await ledgerFile(`workflows/${workflowId}.json`)) ?? '{}') as {
      state?: string;
      requester?: string;
    };
    expect(record).toMatchObject({ state: 'awaiting-approval', requester: 'alice' });
    expect(await applies()).toBe(0);
    expect(plan.stdout).toContain('awaiting approval');
    // The notice names the job to run: the apply job, not the plan job it is printed by.
    expect(plan.stdout).toContain('runs the manual job exocomp-apply of pipeline');
  }, 300_000);

  it('refuses the requester running the apply job: nothing applied', async () => {
    const apply = await runPipeline({
      cwd: project,
      env,
      variables: { ...asUser('alice', 802), CI_JOB_MANUAL: 'true' },
      jobs: ['exocomp-apply'],
      manual: ['exocomp-apply'],
    });
    // gitlab-ci-local 4.65 reports a failed manual job as a warning (exit 0) despite `allow_failure: false`;
    // the job's own failure is what counts.
    expect(apply.stdout).toMatch(/(WARN|FAIL)\s+exocomp-apply\s/);
    expect(apply.stdout).toMatch(/alice requested workflow .* may not approve it/);
    // The apply job is the gate: it warns that nothing protects the branch it runs on (issue 27, Deliver 4).
    expect(apply.stdout).toContain('warning: The approval gate is weaker than it looks (missing) — manual apply gate');
    expect(await applies()).toBe(0);
    const record = JSON.parse((await ledgerFile(`workflows/${workflowId}.json`)) ?? '{}') as {
      state?: string;
      approval?: { state?: string };
    };
    expect(record).toMatchObject({ state: 'awaiting-approval', approval: { state: 'pending' } });
  }, 300_000);

  it(
    'applies when another person runs it; a configure job killed mid-play is continued by the resume template',
    async () => {
      const bob = { ...asUser('bob', 803), CI_JOB_MANUAL: 'true' };
      const apply = await runPipeline({
        cwd: project,
        env,
        variables: bob,
        jobs: ['exocomp-apply'],
        manual: ['exocomp-apply'],
      });
      expect(apply.code, `${apply.stdout}\n${apply.stderr}`).toBe(0);
      expect(await applies()).toBe(1);
      // The plan the approver saw travelled from the plan job sealed, through the pipeline's artifacts.
      expect(apply.stdout).toContain(
        `applying the approved plan from the plan job (sealed artifact) of run ${PIPELINE}`,
      );
      expect(apply.stdout).not.toContain(SEAL_KEY);
      // Neither the plan job's saved plan nor the apply job's unsealed one outlived its job (issue 24, item 1).
      expect(await leftPlans()).toEqual([]);

      // The configure job dies with its whole process group while the play runs (a lost runner).
      const configure = spawn(
        path.join(repoRoot, 'node_modules/.bin/gitlab-ci-local'),
        pipelineArgs({ ...asUser('bob', 805), CI_JOB_ID: '805' }, ['exocomp-configure']),
        {
          cwd: project,
          env,
          stdio: 'ignore',
          detached: true,
        },
      );
      const exited = new Promise((resolve) => configure.on('exit', resolve));
      await until(async () => (await host.readFile('/etc/exocomp-configure-started')) !== undefined, scaled(120_000));
      const pid = (await runProcess('pgrep', ['-f', 'cli.js gitlab configure'])).stdout.trim().split('\n')[0];
      const pgid = Number((await runProcess('ps', ['-o', 'pgid=', '-p', pid ?? ''])).stdout.trim());
      expect(pgid).toBeGreaterThan(1);
      process.kill(-pgid, 'SIGKILL');
      if (pgid !== configure.pid) process.kill(-(configure.pid as number), 'SIGKILL');
      await exited;
      (double.state.jobs[805] as { status: string }).status = 'canceled';
      const interrupted = JSON.parse((await ledgerFile(`workflows/${workflowId}.json`)) ?? '{}') as {
        steps?: { name: string; state: string; lease?: { holder: string } }[];
      };
      expect(interrupted.steps?.find((step) => step.state === 'running')?.lease?.holder).toBe(
        `gitlab:${PROJECT.path}:${PIPELINE}:805`,
      );

      // The scheduled sweeper finds the interrupted workflow and starts its continuation pipeline.
      const sweep = await runPipeline({
        cwd: project,
        env,
        variables: { ...asUser('bob', 807), CI_PIPELINE_SOURCE: 'schedule', EXOCOMP_SWEEP: 'true' },
        jobs: ['exocomp-sweep'],
      });
      expect(sweep.code, `${sweep.stdout}\n${sweep.stderr}`).toBe(0);
      expect(double.state.triggered).toEqual([
        expect.objectContaining({ ref: 'main', variables: { EXOCOMP_WORKFLOW_ID: workflowId }, username: 'bob' }),
      ]);

      await host.exec('touch /etc/exocomp-go');
      const resume = await runPipeline({
        cwd: project,
        env,
        variables: { ...asUser('bob', 806), EXOCOMP_WORKFLOW_ID: workflowId },
        jobs: ['exocomp-resume'],
      });
      expect(resume.code, `${resume.stdout}\n${resume.stderr}`).toBe(0);
      // The configure play's progress, one line per task and host (three tasks, one host), as the CLI prints it.
      expect(resume.stdout.split('\n').filter((line) => / web1 · .* (✓|✓ changed) \(\d\/3\)/.test(line))).toHaveLength(
        3,
      );
      expect(await applies()).toBe(1);
      expect(await host.readFile('/etc/exocomp-configured')).toBe('web1\n');
      const record = JSON.parse((await ledgerFile(`workflows/${workflowId}.json`)) ?? '{}') as {
        state?: string;
        approval?: { by?: string; via?: string };
      };
      expect(record).toMatchObject({
        state: 'provisioned',
        approval: { by: 'bob', via: expect.stringContaining('manual job exocomp-apply') },
      });
      // One status note, created by the plan job and edited in place by every job after it; carol's note untouched.
      const notes = double.state.notes.filter((n) => n.mergeRequestIid === 5);
      expect(notes.map((n) => n.author)).toEqual(['carol', 'project_42_bot']);
      expect(notes[0]?.body).toBe('looks fine');
      expect(notes[1]?.body).toContain(`<!-- exocomp:status:${workflowId} -->`);
      expect(notes[1]?.body).toMatch(/provisioned/);
      expect(double.requestsTo('create-mr-note')).toHaveLength(1);
      expect(double.requestsTo('edit-mr-note').length).toBeGreaterThanOrEqual(2);
      expect(double.violations).toEqual([]);
    },
    scaled(600_000),
  );
});

describe('provision through templates/provision.yml, approval: environment', () => {
  const pipeline = 710;
  const workflowId = `edge-${pipeline}`;
  const file = 'environment-mode.yml';
  const CAROL_TOKEN = 'glpat-carol-approver-01';

  it('applies only after a deployment approval the API recorded, by someone other than the triggerer', async () => {
    const before = await applies();
    const alice = (jobId: number) => ({
      ...asUser('alice', jobId),
      CI_PIPELINE_ID: String(pipeline),
      CI_JOB_ID: String(jobId),
    });
    const plan = await runPipeline({ cwd: project, env, file, variables: alice(810), jobs: ['exocomp-plan'] });
    expect(plan.code, `${plan.stdout}\n${plan.stderr}`).toBe(0);

    // GitLab blocked the apply job's deployment to the protected environment until it is approved.
    double.state.deployments.push({
      id: 31,
      projectId: PROJECT.id,
      environment: 'production',
      jobId: 811,
      status: 'blocked',
      user: 'alice',
      requiredApprovals: 1,
      approvals: [],
    });
    const early = await runPipeline({ cwd: project, env, file, variables: alice(811), jobs: ['exocomp-apply'] });
    expect(early.stdout).toMatch(/deployment 31 to production has no approval/);
    expect(await applies()).toBe(before);

    double.state.tokens[CAROL_TOKEN] = { kind: 'personal', username: 'carol', scopes: ['api'] };
    const approval = await fetch(`${double.apiUrl}/projects/${PROJECT.id}/deployments/31/approval`, {
      method: 'POST',
      headers: { 'PRIVATE-TOKEN': CAROL_TOKEN, 'content-type': 'application/json' },
      body: JSON.stringify({ status: 'approved', comment: 'go' }),
    });
    expect(approval.status).toBe(201);
    const apply = await runPipeline({ cwd: project, env, file, variables: alice(811), jobs: ['exocomp-apply'] });
    expect(apply.code, `${apply.stdout}\n${apply.stderr}`).toBe(0);
    expect(await applies()).toBe(before + 1);
    const record = JSON.parse((await ledgerFile(`workflows/${workflowId}.json`)) ?? '{}') as {
      approval?: { by?: string; via?: string; comment?: string };
    };
    expect(record.approval).toMatchObject({
      by: 'carol',
      via: 'environment production (deployment 31, pipeline 710)',
      comment: 'go',
    });
    expect(double.violations).toEqual([]);
  }, 300_000);
});

describe('templates/plan.yml in a merge request pipeline', () => {
  it('records the plan awaiting approval (GITLAB_CI=true, local state allowed by its input), writes the terraform report for the MR widget and the status note', async () => {
    const pipeline = 720;
    double.state.protectedBranches = [PROTECTED_MAIN, PROTECTED_RECORDS];
    const plan = await runPipeline({
      cwd: project,
      env,
      file: 'merge-request.yml',
      // GITLAB_CI=true as on a GitLab runner: the allow-local-state input lets the workspace plan (issue 13, item 1).
      variables: mergeRequestJob(820, pipeline, { CI_MERGE_REQUEST_IID: '5', GITLAB_CI: 'true' }),
    });
    double.state.protectedBranches = [];
    expect(plan.code, `${plan.stdout}\n${plan.stderr}`).toBe(0);
    expect(plan.stdout).not.toMatch(/keeps its OpenTofu state on this runner/);
    expect(plan.stdout).toContain('exocomp-plan');
    // This pipeline has no apply job: the notice names the one that applies the merged change (issue 24, Deliver 2).
    expect(plan.stdout).toContain('has no apply job, so no job applies this plan');
    expect(plan.stdout).toContain('once merge request !5 is merged into main, the provision pipeline of main plans it');
    expect(plan.stdout).not.toContain('exocomp-apply');
    // A protected project: no setup warning (issue 27, Deliver 4).
    expect(plan.stdout).not.toContain('weaker than it looks');
    expect(plan.stdout).not.toContain('Setup check');
    const record = JSON.parse((await ledgerFile(`workflows/edge-${pipeline}.json`)) ?? '{}') as {
      state?: string;
      trigger?: { pullRequest?: number };
    };
    expect(record).toMatchObject({ state: 'awaiting-approval', trigger: { pullRequest: 5 } });
    const report =
      (await runProcess('find', [path.join(project, '.gitlab-ci-local'), '-name', 'exocomp-plan.json'])).stdout
        .trim()
        .split('\n')[0] ?? '';
    expect(JSON.parse(await readFile(report, 'utf8'))).toEqual({ create: 1, update: 0, delete: 0 });
    expect(
      double.state.notes.some(
        (n) => n.author === 'project_42_bot' && n.body.includes(`<!-- exocomp:status:edge-${pipeline} -->`),
      ),
    ).toBe(true);
    expect(double.violations).toEqual([]);
  }, 300_000);
});

describe('templates/plan.yml whose plan fails (issue 24, Deliver 2)', () => {
  it('records the failure on its workflow: status says failed at apply (plan), nothing awaits approval', async () => {
    const pipeline = 740;
    const plan = await runPipeline({
      cwd: project,
      env,
      file: 'merge-request.yml',
      variables: mergeRequestJob(840, pipeline, { EXOCOMP_TOFU_STANDIN_FAIL: 'plan' }),
    });
    expect(plan.code, `${plan.stdout}\n${plan.stderr}`).not.toBe(0);
    expect(plan.stdout).toContain('Simulated failure');
    const file = `workflows/edge-${pipeline}.json`;
    const text = await ledgerFile(file);
    const workflow = readWorkflow(
      { revision: 'test', read: (p) => (p === file ? text : undefined), list: () => [] },
      `edge-${pipeline}`,
    );
    // Retryable (ADR 0019): back to created, no plan to approve; the sweeper continues only provisioning workflows
    // and approved ones (test/unit/continue-workflow.test.ts proves it leaves this one alone).
    expect(workflow).toMatchObject({
      state: 'created',
      approval: { state: 'pending' },
      failure: { step: 'apply', kind: 'plan' },
    });
    expect(workflow?.approval.planFingerprint).toBeUndefined();
    // Issue 38, item 4: tofu's own error line in the record (no dangling `:`), and the job to retry named.
    expect(workflow?.failure?.summary).toMatch(/^tofu plan failed with exit code 1: Simulated failure$/);
    expect(workflow?.failure?.retry).toMatch(/^Retry the job exocomp-plan \(http.*\/-\/jobs\/\d+\) /);
    expect(plan.stdout).toMatch(/→ fix the workspace or its inputs .*\. Retry the job exocomp-plan /);
    // What `provision status` shows, as a list and for the one workflow: plan-failed, not created.
    const ledger = path.join(root, 'git/acme/infra.git');
    const list = await run('exocomp', ['provision', 'status', '--ledger', ledger]);
    expect(list.stdout).toMatch(new RegExp(`^edge-${pipeline} +plan-failed `, 'm'));
    const one = await run('exocomp', ['provision', 'status', `edge-${pipeline}`, '--ledger', ledger]);
    expect(one.stdout).toMatch(/failed at apply \(plan\) .*: tofu plan failed with exit code 1: Simulated failure$/m);
    expect(one.stdout).toMatch(/^retry: Retry the job exocomp-plan /m);
    expect(double.violations).toEqual([]);
  }, 300_000);
});

describe('templates/plan.yml with a workspace that keeps its state on the runner (issue 13, item 1; issue 24, item 4)', () => {
  // gitlab-ci-local says CI=true and GITLAB_CI=false: CI=true alone makes it CI, as on any runner.

  it.each([
    ['CI=true (gitlab-ci-local’s own, GITLAB_CI=false)', 730, {}],
    ['GITLAB_CI=true', 732, { GITLAB_CI: 'true' }],
  ])(
    'refuses it by default under %s, showing a remote backend block, and records nothing',
    async (_way, pipeline, extra) => {
      const plan = await runPipeline({
        cwd: project,
        env,
        file: 'merge-request-remote-state-only.yml',
        variables: mergeRequestJob(830, pipeline, extra),
      });
      expect(plan.code, `${plan.stdout}\n${plan.stderr}`).not.toBe(0);
      expect(plan.stdout).toMatch(/keeps its OpenTofu state on this runner/);
      expect(plan.stdout).toContain('backend "http"');
      expect(plan.stdout).toContain('allow-local-state: true');
      expect(await ledgerFile(`workflows/edge-${pipeline}.json`)).toBeUndefined();
    },
    300_000,
  );

  // Planned with the allow-local-state input under GITLAB_CI=true: the merge request pipeline's test above.
});

describe('the whole provision pipeline in one gitlab-ci-local invocation (issue 24), beside a second pipeline on the same runner, with a seal key (issue 24, item 1)', () => {
  /** A job token of `pipeline` for `user` (a job's CI_JOB_TOKEN: GitLab makes one per job). */
  const tokenFor = (user: string, jobId: number, pipeline: number) =>
    double.jobToken({
      id: jobId,
      projectId: PROJECT.id,
      name: 'job',
      stage: 'deploy',
      status: 'running',
      pipelineId: pipeline,
      user,
      ref: 'main',
      sha: '0'.repeat(40),
    });
  /**
   * Who runs each job is per job on GitLab (the manual job's GITLAB_USER_LOGIN is whoever pressed "run"); one
   * gitlab-ci-local invocation takes --variable for every job alike, so the project's file sets them per job.
   */
  const wholePipeline = (pipeline: number, jobs: { plan: number; apply: number; configure: number }) =>
    [
      'stages: [build, deploy]',
      'include:',
      '  - local: templates/provision.yml',
      '    inputs: { workspace: edge, playbook: site.yml, approval: manual, allow-local-state: true }',
      'exocomp-plan:',
      `  variables: { GITLAB_USER_LOGIN: alice, CI_JOB_ID: '${jobs.plan}', CI_JOB_TOKEN: ${tokenFor('alice', jobs.plan, pipeline)} }`,
      'exocomp-apply:',
      `  variables: { GITLAB_USER_LOGIN: bob, CI_JOB_ID: '${jobs.apply}', CI_JOB_TOKEN: ${tokenFor('bob', jobs.apply, pipeline)}, CI_JOB_MANUAL: 'true' }`,
      'exocomp-configure:',
      `  variables: { GITLAB_USER_LOGIN: bob, CI_JOB_ID: '${jobs.configure}', CI_JOB_TOKEN: ${tokenFor('bob', jobs.configure, pipeline)} }`,
      '',
    ].join('\n');

  it(
    'plan by alice → the manual apply job started by bob → configure: provisioned; each pipeline applies the plan its own plan job made; no plan file outlives its job',
    async () => {
      // The configure play of this file's site.yml waits for this file (the killed-configure test above sets it too).
      await host.exec('touch /etc/exocomp-go');
      // A second checkout of the project: gitlab-ci-local keeps its state in the project directory, as a runner
      // keeps one build directory per concurrent job. TMPDIR is shared, as on one shell-executor machine.
      const other = path.join(root, 'project-b');
      await cp(project, other, { recursive: true, filter: (src) => !src.includes('.gitlab-ci-local') });
      const pipelines = [
        { cwd: project, pipeline: 701, jobs: { plan: 901, apply: 902, configure: 903 } },
        // The second pipeline stops after its apply (its configure is not run): one chain's play is enough.
        { cwd: other, pipeline: 751, jobs: { plan: 851, apply: 852, configure: 853 } },
      ];
      for (const p of pipelines)
        await writeFile(path.join(p.cwd, 'whole-pipeline.yml'), wholePipeline(p.pipeline, p.jobs));
      const before = await applies();
      // Both pipelines at once: their plan jobs start together, then their apply jobs.
      const [whole, second] = (await Promise.all(
        pipelines.map((p, i) =>
          runPipeline({
            cwd: p.cwd,
            env,
            file: 'whole-pipeline.yml',
            variables: { ...variables, CI_PIPELINE_ID: String(p.pipeline) },
            ...(i === 0 ? {} : { jobs: ['exocomp-plan', 'exocomp-apply'] }),
            manual: ['exocomp-apply'],
          }),
        ),
      )) as [RunResult, RunResult];
      const log = `${whole.stdout}\n${whole.stderr}`;
      expect(whole.code, log).toBe(0);
      expect(second.code, `${second.stdout}\n${second.stderr}`).toBe(0);
      // All three jobs ran in this one invocation, in the pipeline's order.
      const order = ['exocomp-plan', 'exocomp-apply', 'exocomp-configure'].map((job) =>
        whole.stdout.search(new RegExp(`${job}\\s+starting`)),
      );
      expect(
        order.every((at) => at >= 0),
        log,
      ).toBe(true);
      expect([...order].sort((a, b) => a - b)).toEqual(order);
      // The configure job's own log: one line per task and host (three tasks, one host), as the CLI prints it.
      const configureLines = whole.stdout.split('\n').filter((line) => /^exocomp-configure\s.*>/.test(line));
      expect(
        configureLines.filter((line) => / web1 · .* (✓|✓ changed) \(\d\/3\)/.test(line)),
        log,
      ).toHaveLength(3);
      pipelines.forEach((p, i) => {
        const run = i === 0 ? whole : second;
        expect(run.stdout).toContain(
          `applying the approved plan from the plan job (sealed artifact) of run ${p.pipeline}`,
        );
        expect(run.stdout).not.toContain(SEAL_KEY);
      });
      expect(await applies()).toBe(before + 2);
      // Each apply read its plan from a directory of its own.
      const applied = (await readStandinLog(standinLog)).filter((i) => i.argv[0] === 'apply').slice(-2);
      const planDirs = applied.map((i) => path.dirname(i.argv[i.argv.length - 1] ?? ''));
      expect(new Set(planDirs).size).toBe(2);
      for (const dir of planDirs) expect(path.basename(dir)).toMatch(/^exocomp-plan-\d+\.[0-9a-z]+-/);
      expect(await leftPlans()).toEqual([]);
      const record = JSON.parse((await ledgerFile('workflows/edge-701.json')) ?? '{}') as {
        state?: string;
        requester?: string;
        approval?: { by?: string };
      };
      expect(record).toMatchObject({ state: 'provisioned', requester: 'alice', approval: { by: 'bob' } });
      expect(JSON.parse((await ledgerFile('workflows/edge-751.json')) ?? '{}')).toMatchObject({
        approval: { state: 'approved', by: 'bob' },
      });
    },
    scaled(600_000),
  );
});
