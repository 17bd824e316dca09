/**
 * Issue 23: one scenario table, three faces. Each scenario says what a user
 * gives (in face-neutral terms) and what must come of it; each face maps the
 * scenario onto its own mechanism — the GitHub root/plan/apply actions under
 * the emulated runner (dist/ bundles), the GitLab templates under
 * gitlab-ci-local, the CLI (dist/cli.js) — and the test asserts the same
 * outcome in the ledger and the same refusal class on every face. Refusals
 * need no host: they must happen before the first ledger write and before any
 * tofu call.
 */
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProcess } from '../../src/adapters/process.js';
import { createChainFixture, type ChainFixture } from '../support/chain-fixture.js';
import { exocompBin, runPipeline } from '../support/gitlab-ci.js';
import { GitLabDouble } from '../support/gitlab-double.js';
import { ledgerFile, ledgerRefs } from '../support/ledger-git.js';
import { generateKeyPair, type KeyPair } from '../support/loopback-host.js';
import { fixtureWorkspacesDir, readStandinLog, standinPath } from '../support/tofu-standin.js';
import { repoRoot } from '../support/action-runner.js';
import { chainInputs, createActionFixture, nameWebHost, planInputs, type ActionFixture } from '../actions/helpers.js';

type FaceName = 'github' | 'gitlab' | 'cli';

/** What a user gives, in terms every face understands. */
interface Given {
  /** The configure playbook, relative to the project (default: site.yml, which exists). */
  playbook?: string;
  /** The seal key as the face passes it: the key itself, or a path. */
  sealKey?: string;
  /** The requester approves the apply themselves. */
  selfApproval?: boolean;
}

/** What one face's run came to. */
interface Observed {
  failed: boolean;
  log: string;
  /** Whether any ledger ref moved. */
  ledgerWritten: boolean;
  tofuCalls: number;
  /** The workflow record this run is about, when there is one. */
  workflow?: { state: string; approval: { state: string } };
}

/** A refusal (its class: what every face's message says), and what the ledger holds after it; no tofu call either way. */
type Expected =
  | { refused: RegExp; ledgerWritten: false }
  | { refused: RegExp; workflow: { state: string; approval: { state: string } } };

interface Scenario {
  name: string;
  given: Given;
  expect: Expected;
  /** Faces where the scenario does not exist, and why. */
  notOn?: Partial<Record<FaceName, string>>;
}

const SEAL_KEY = 'contract-seal-key-0123456789abcdef';

/** The table: every face must come to the same outcome for each row. */
const scenarios: Scenario[] = [
  {
    name: 'a missing playbook is refused before the first ledger write, with no tofu call',
    given: { playbook: 'gone.yml', sealKey: SEAL_KEY },
    expect: { refused: /the playbook "gone\.yml" does not exist/, ledgerWritten: false },
  },
  {
    name: 'a seal key that is a path to nothing is refused before any write, never used as the key',
    given: { sealKey: '/run/secrets/exocomp-seal.key' },
    expect: { refused: /looks like a file path, but no file is there/, ledgerWritten: false },
  },
  {
    name: 'the requester approving their own apply is refused: nothing applied, the approval still pending',
    given: { selfApproval: true },
    expect: {
      refused: /alice (approved a deployment they requested|requested workflow \S+ and may not approve it)/,
      workflow: { state: 'awaiting-approval', approval: { state: 'pending' } },
    },
    notOn: {
      cli: 'the CLI has no authenticated identity: `approval decide --by` records whoever the operator names',
    },
  },
];

/** One face: maps a scenario onto its own mechanism and reports what came of it. */
interface Face {
  name: FaceName;
  setUp(): Promise<void>;
  run(given: Given, serial: number): Promise<Observed>;
  tearDown(): Promise<void>;
}

type WorkflowRecord = NonNullable<Observed['workflow']>;
const parseRecord = (text: string | undefined): WorkflowRecord | undefined =>
  text === undefined ? undefined : (JSON.parse(text) as WorkflowRecord);

/** Runs `body` and observes the ledger and the tofu stand-in around it. */
async function observe(
  ledger: string,
  standinLog: string,
  workflowId: string,
  body: () => Promise<{ failed: boolean; log: string }>,
): Promise<Observed> {
  const refsBefore = await ledgerRefs(ledger);
  const callsBefore = (await readStandinLog(standinLog)).length;
  const { failed, log } = await body();
  const workflow = parseRecord(await ledgerFile(ledger, `workflows/${workflowId}.json`));
  return {
    failed,
    log,
    ledgerWritten: (await ledgerRefs(ledger)) !== refsBefore,
    tofuCalls: (await readStandinLog(standinLog)).length - callsBefore,
    ...(workflow ? { workflow } : {}),
  };
}

/** The root/plan/apply actions as the runner runs their bundles; approval through an environment. */
function githubFace(): Face {
  let fx: ActionFixture;
  return {
    name: 'github',
    async setUp() {
      fx = await createActionFixture('edge');
      await nameWebHost(fx, '127.0.0.1');
      fx.double.state.environments['production'] = { requiredReviewers: ['alice', 'bob'] };
    },
    async run(given, serial) {
      const runId = 8000 + serial;
      const inputs = {
        ...(given.selfApproval ? planInputs() : await chainInputs(fx)),
        ...(given.playbook ? { playbook: given.playbook } : {}),
        ...(given.sealKey ? { 'seal-key': given.sealKey } : {}),
      };
      const outcome = (result: { code: number; stdout: string; stderr: string }) => ({
        failed: result.code !== 0,
        log: `${result.stdout}\n${result.stderr}`,
      });
      if (!given.selfApproval)
        return observe(fx.ledgerRepo, fx.standinLog, `edge-${runId}`, async () =>
          outcome(await fx.run('provision', { runId, actor: 'alice', with: inputs })),
        );
      const plan = await fx.run('plan', { runId, actor: 'alice', with: inputs });
      if (plan.code !== 0) throw new Error(`the plan failed:\n${plan.stdout}\n${plan.stderr}`);
      fx.double.state.approvals[runId] = [{ state: 'approved', user: 'alice', environments: ['production'] }];
      const appliesOnly = { 'tofu-binary': standinPath, 'allow-local-state': 'true' };
      return observe(fx.ledgerRepo, fx.standinLog, `edge-${runId}`, async () =>
        outcome(
          await fx.run('apply', {
            runId,
            actor: 'alice',
            job: 'apply',
            with: { 'workflow-id': `edge-${runId}`, environment: 'production', ...appliesOnly },
          }),
        ),
      );
    },
    tearDown: async () => fx?.cleanup(),
  };
}

/** The provision template (approval: manual) under gitlab-ci-local, the GitLab API and git served by the double. */
function gitlabFace(): Face {
  const PROJECT = { id: 42, path: 'acme/infra', jobTokenPushAllowed: true };
  let root: string;
  let project: string;
  let ledger: string;
  let double: GitLabDouble;
  let env: NodeJS.ProcessEnv;
  let standinLog: string;
  let keys: { fleet: KeyPair; bootstrap: KeyPair };

  const pipelineFile = async (playbook: string, serial: number): Promise<string> => {
    const file = `provision-${serial}.yml`;
    const lines = ['stages: [build, deploy]', 'include:', '  - local: templates/provision.yml', '    inputs:'];
    const inputs = ['workspace: edge', `playbook: ${playbook}`, 'approval: manual', 'allow-local-state: true'];
    await writeFile(path.join(project, file), [...lines, ...inputs.map((i) => `      ${i}`), ''].join('\n'));
    await git(['add', file]);
    await git(['-c', 'user.name=a', '-c', 'user.email=a@example.invalid', 'commit', '--quiet', '-m', file]);
    return file;
  };
  const git = async (args: string[]) => {
    const r = await runProcess('git', args, { cwd: project, env });
    if (r.code !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr}`);
  };
  const asUser = (user: string, pipelineId: number, jobId: number, given: Given): Record<string, string> => ({
    CI_JOB_TOKEN: double.jobToken({
      id: jobId,
      projectId: PROJECT.id,
      name: 'job',
      stage: 'deploy',
      status: 'running',
      pipelineId,
      user,
      ref: 'main',
      sha: '0'.repeat(40),
    }),
    GITLAB_USER_LOGIN: user,
    CI_PROJECT_ID: String(PROJECT.id),
    CI_PIPELINE_ID: String(pipelineId),
    CI_COMMIT_REF_PROTECTED: 'true',
    EXOCOMP_TOFU_BINARY: standinPath,
    EXOCOMP_TOFU_STANDIN_LOG: standinLog,
    EXOCOMP_FLEET_KEY: keys.fleet.privateKeyPath,
    EXOCOMP_BOOTSTRAP_KEY: keys.bootstrap.privateKeyPath,
    EXOCOMP_SSH_WAIT: '60s',
    ...(given.sealKey ? { EXOCOMP_SEAL_KEY: given.sealKey } : {}),
  });

  return {
    name: 'gitlab',
    async setUp() {
      root = await mkdtemp(path.join(tmpdir(), 'exocomp-contract-gitlab-'));
      const gitRoot = path.join(root, 'git');
      ledger = path.join(gitRoot, `${PROJECT.path}.git`);
      await mkdir(path.dirname(ledger), { recursive: true });
      await runProcess('git', ['init', '--quiet', '--bare', ledger]);
      double = new GitLabDouble({ gitRoot });
      await double.start();
      double.state.projects.push({ ...PROJECT });
      keys = {
        fleet: await generateKeyPair(root, 'fleet'),
        bootstrap: await generateKeyPair(root, 'bootstrap'),
      };
      const bin = await exocompBin(path.join(root, 'bin'));
      env = {
        PATH: `${bin}:${process.env.PATH}`,
        HOME: path.join(root, 'home'),
        XDG_CACHE_HOME: path.join(root, 'cache'),
        LANG: 'C.UTF-8',
        TMPDIR: path.join(root, 'tmp'),
      };
      await mkdir(env.HOME as string);
      await mkdir(env.TMPDIR as string);
      standinLog = path.join(root, 'tofu.log');
      project = path.join(root, 'project');
      await mkdir(project);
      await cp(path.join(repoRoot, 'templates'), path.join(project, 'templates'), { recursive: true });
      await cp(path.join(fixtureWorkspacesDir, 'edge'), path.join(project, 'edge'), { recursive: true });
      await cp(path.join(repoRoot, 'test/fixtures/playbooks/site.yml'), path.join(project, 'site.yml'));
      await writeFile(
        path.join(project, 'edge/exocomp.auto.tfvars.json'),
        JSON.stringify({ ansible_inventory: { all: { hosts: { web: { ansible_host: '127.0.0.1' } } } } }),
      );
      await git(['init', '--quiet', '-b', 'main']);
      await git(['remote', 'add', 'origin', `${double.url}/${PROJECT.path}.git`]);
      await git(['add', '-A']);
      await git(['-c', 'user.name=a', '-c', 'user.email=a@example.invalid', 'commit', '--quiet', '-m', 'infra']);
    },
    async run(given, serial) {
      const pipelineId = 900 + serial;
      const file = await pipelineFile(given.playbook ?? 'site.yml', serial);
      const job = (user: string, jobId: number, name: string, manual: boolean) =>
        runPipeline({
          cwd: project,
          env,
          file,
          variables: { ...asUser(user, pipelineId, jobId, given), ...(manual ? { CI_JOB_MANUAL: 'true' } : {}) },
          jobs: [name],
          ...(manual ? { manual: [name] } : {}),
        });
      // gitlab-ci-local 4.65 reports a failed manual job as a warning (exit 0): the job's own mark counts.
      const outcome = (result: { code: number; stdout: string; stderr: string }, name: string) => ({
        failed: result.code !== 0 || new RegExp(`(WARN|FAIL)\\s+${name}\\s`).test(result.stdout),
        log: `${result.stdout}\n${result.stderr}`,
      });
      const workflowId = `edge-${pipelineId}`;
      if (!given.selfApproval)
        return observe(ledger, standinLog, workflowId, async () =>
          outcome(await job('alice', pipelineId * 10, 'exocomp-plan', false), 'exocomp-plan'),
        );
      const plan = await job('alice', pipelineId * 10, 'exocomp-plan', false);
      if (plan.code !== 0) throw new Error(`the plan job failed:\n${plan.stdout}\n${plan.stderr}`);
      return observe(ledger, standinLog, workflowId, async () =>
        outcome(await job('alice', pipelineId * 10 + 1, 'exocomp-apply', true), 'exocomp-apply'),
      );
    },
    async tearDown() {
      await double?.stop();
      if (root) await rm(root, { recursive: true, force: true });
    },
  };
}

/** `exocomp provision run` as a process, on a workstation. */
function cliFace(): Face {
  let fx: ChainFixture;
  return {
    name: 'cli',
    async setUp() {
      fx = await createChainFixture('edge');
      await fx.setInventory({ all: { hosts: { web: { ansible_host: '127.0.0.1' } } } });
      await cp(path.join(repoRoot, 'test/fixtures/playbooks/site.yml'), path.join(fx.dir, 'site.yml'));
    },
    async run(given, serial) {
      const workflowId = `edge-cli-${serial}`;
      const args = ['provision', 'run', fx.workspace, given.playbook ?? 'site.yml', ...fx.keys, '--allow-local-state'];
      if (given.sealKey) args.push('--seal-key', given.sealKey);
      args.push('--id', workflowId, '--ssh-wait', '60s');
      return observe(fx.ledger, fx.standinLog, workflowId, async () => {
        const result = await fx.cli(args);
        return { failed: result.code !== 0, log: `${result.stdout}\n${result.stderr}` };
      });
    },
    tearDown: async () => fx?.cleanup(),
  };
}

const faces: Face[] = [githubFace(), gitlabFace(), cliFace()];

describe('one scenario table, three faces', () => {
  beforeAll(async () => {
    await Promise.all(faces.map((face) => face.setUp()));
  }, 120_000);
  afterAll(async () => {
    await Promise.all(faces.map((face) => face.tearDown()));
  });

  describe.each(scenarios.map((scenario, index) => ({ scenario, index })))('$scenario.name', ({ scenario, index }) => {
    it.each(faces.filter((face) => scenario.notOn?.[face.name] === undefined))(
      'on $name',
      async (face) => {
        const observed = await face.run(scenario.given, index + 1);
        const expected = scenario.expect;
        expect(observed.failed, observed.log).toBe(true);
        expect(observed.log).toMatch(expected.refused);
        expect(observed.tofuCalls).toBe(0);
        if ('ledgerWritten' in expected) expect(observed.ledgerWritten).toBe(false);
        else expect(observed.workflow).toMatchObject(expected.workflow);
      },
      300_000,
    );
  });
});
