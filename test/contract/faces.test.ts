/**
 * Issue 23: one scenario table, three faces. Each scenario says what a user
 * gives (in face-neutral terms) and what must come of it; each face maps the
 * scenario onto its own mechanism — the GitHub root/plan/apply actions under
 * the emulated runner (dist/ bundles), the GitLab templates under
 * gitlab-ci-local, the CLI (dist/cli.js) — and the test asserts the same
 * outcome in the ledger and the same refusal class on every face. Refusals
 * need no host: they must happen before the first ledger write and before any
 * tofu call. The one scenario that runs the chain shares one loopback host and
 * one pair of keys across the faces.
 */
import { chmod, cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProcess } from '../../src/adapters/process.js';
import { createChainFixture, type ChainFixture } from '../support/chain-fixture.js';
import { exocompBin, runPipeline } from '../support/gitlab-ci.js';
import { GitLabDouble } from '../support/gitlab-double.js';
import { ledgerFile, ledgerHistory, ledgerRefs } from '../support/ledger-git.js';
import { createLoopbackHost, generateKeyPair, type KeyPair, type LoopbackHost } from '../support/loopback-host.js';
import { fixtureWorkspacesDir, readStandinLog, standinPath } from '../support/tofu-standin.js';
import { repoRoot } from '../support/action-runner.js';
import { scaled } from '../support/time.js';
import { createActionFixture, planInputs, sitePlaybook, type ActionFixture } from '../actions/helpers.js';

type FaceName = 'github' | 'gitlab' | 'cli';

/** What every face shares: one host, one pair of keys (world-readable, as GitLab writes File variables). */
interface World {
  dir: string;
  host: LoopbackHost;
  fleet: KeyPair;
  bootstrap: KeyPair;
  /** A file holding SEAL_KEY. */
  sealKeyFile: string;
}

/** What a user gives, in terms every face understands. */
interface Given {
  /** The configure playbook, relative to the project (default: site.yml, which exists). */
  playbook?: string;
  /** The seal key as the face passes it: the key itself, or a path. */
  sealKey?: string;
  /**
   * The requester approves the apply themselves: of the plan the row before recorded for approval (a face keeps it),
   * else of a plan made for this row.
   */
  selfApproval?: boolean;
  /** Runs the whole chain against the world's host with the world's keys (without: refused before any host). */
  chain?: {
    /** The workspace's inventory hands the seal key to the host as a variable: a secret on its way to a record. */
    secretInOutputs: boolean;
  };
  /** Only plans, for approval (a plan job; none on the CLI). */
  planOnly?: boolean;
  /** The platform's API cannot be reached (its optional calls: the change-request lookup, the status comment). */
  apiUnreachable?: boolean;
}

/** An address nothing listens on: a call to it fails with "fetch failed". */
const UNREACHABLE_API = 'http://127.0.0.1:9';

/** What one face's run came to. */
interface Observed {
  failed: boolean;
  log: string;
  /** Whether any ledger ref moved. */
  ledgerWritten: boolean;
  tofuCalls: number;
  /** The workflow record this run is about, when there is one. */
  workflow?: { state: string; approval: { state: string } };
  /** The whole ledger history (messages and patches). */
  history: string;
}

/** A refusal (its class: what every face's message says) with no tofu call, and what the ledger holds after it; or success. */
type Expected =
  | { refused: RegExp; ledgerWritten: false }
  | { refused: RegExp; workflow: { state: string; approval: { state: string } } }
  | { succeeded: { state: string }; says?: RegExp }
  /** The secret stopped (a refusal or the guard's warning said it), and in no ledger record or commit. */
  | { guarded: RegExp; neverInLedger: string };

interface Scenario {
  name: string;
  given: (world: World) => Given;
  expect: Expected;
  /** Faces where the scenario does not exist, and why. */
  notOn?: Partial<Record<FaceName, string>>;
}

const SEAL_KEY = 'contract-seal-key-0123456789abcdef';

/** The table: every face must come to the same outcome for each row. */
const scenarios: Scenario[] = [
  {
    // The seal key is read and checked before the playbook: this refusal also shows the value was accepted.
    name: 'the seal key given as a value is accepted; a missing playbook is refused before any ledger write or tofu call',
    given: () => ({ playbook: 'gone.yml', sealKey: SEAL_KEY }),
    expect: { refused: /the playbook "gone\.yml" does not exist/, ledgerWritten: false },
  },
  {
    name: 'a seal key that is a path to nothing is refused before any write, never used as the key',
    given: () => ({ sealKey: '/run/secrets/exocomp-seal.key' }),
    expect: { refused: /looks like a file path, but no file is there/, ledgerWritten: false },
  },
  {
    name: 'an unreachable optional API (the change-request lookup) is a notice: the plan is recorded for approval',
    given: () => ({ planOnly: true, apiUnreachable: true }),
    expect: {
      succeeded: { state: 'awaiting-approval' },
      // GitHub's client says fetch failed; GitLab's names the API's URL and the cause (issue 38).
      says: /\(optional, the job goes on\): .*(fetch failed|GitLab's API at \S+ gave no answer \(.+\))/,
    },
    notOn: { cli: 'the CLI calls no platform API' },
  },
  {
    name: 'the requester approving their own apply is refused: nothing applied, the approval still pending',
    given: () => ({ selfApproval: true }),
    expect: {
      refused: /alice (approved a deployment they requested|requested workflow \S+ and may not approve it)/,
      workflow: { state: 'awaiting-approval', approval: { state: 'pending' } },
    },
    notOn: {
      cli: 'the CLI has no authenticated identity: `approval decide --by` records whoever the operator names',
    },
  },
  {
    name: 'key files given 0666 and the seal key as a file: the chain runs, the host is provisioned',
    given: (world) => ({ sealKey: world.sealKeyFile, chain: { secretInOutputs: false } }),
    expect: { succeeded: { state: 'provisioned' } },
  },
  {
    name: 'a secret on its way to a record is refused at the capture: named by where it sits, in no record or commit',
    given: () => ({ sealKey: SEAL_KEY, chain: { secretInOutputs: true } }),
    expect: {
      guarded: /the ansible_inventory output carries a secret value at all\.hosts\.web\.exocomp_note/,
      neverInLedger: SEAL_KEY,
    },
  },
];

/** One face: maps a scenario onto its own mechanism and reports what came of it. */
interface Face {
  name: FaceName;
  setUp(world: World): Promise<void>;
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
    history: await ledgerHistory(ledger),
    ledgerWritten: (await ledgerRefs(ledger)) !== refsBefore,
    tofuCalls: (await readStandinLog(standinLog)).length - callsBefore,
    ...(workflow ? { workflow } : {}),
  };
}

/** The workspace's tfvars: the world's host as `web` (as root), the seal key among its variables when asked; else a host never reached. */
function inventoryTfvars(world: World, given: Given): string {
  const web = given.chain
    ? {
        ansible_host: world.host.address,
        ansible_port: world.host.port,
        ansible_user: 'root',
        ...(given.chain.secretInOutputs ? { exocomp_note: SEAL_KEY } : {}),
      }
    : { ansible_host: '127.0.0.1' };
  return JSON.stringify({ ansible_inventory: { all: { hosts: { web } } } });
}

const outcomeOf = (result: { code: number; stdout: string; stderr: string }) => ({
  failed: result.code !== 0,
  log: `${result.stdout}\n${result.stderr}`,
});

/** The root/plan/apply actions as the runner runs their bundles; approval through an environment. */
function githubFace(): Face {
  let fx: ActionFixture;
  let world: World;
  /** The run whose plan awaits approval (a plan-only row's), for the next self-approval row. */
  let awaitingRun: number | undefined;
  return {
    name: 'github',
    async setUp(shared) {
      world = shared;
      fx = await createActionFixture('edge');
      fx.double.state.environments['production'] = { requiredReviewers: ['alice', 'bob'] };
    },
    async run(given, serial) {
      const planned = given.selfApproval ? awaitingRun : undefined;
      awaitingRun = undefined;
      const runId = 8000 + (planned ?? serial);
      await writeFile(path.join(fx.workspace, 'exocomp.auto.tfvars.json'), inventoryTfvars(world, given));
      const inputs = {
        ...planInputs(),
        ...(given.playbook ? { playbook: given.playbook } : {}),
        ...(given.sealKey ? { 'seal-key': given.sealKey } : {}),
      };
      const env = given.apiUnreachable ? { GITHUB_API_URL: UNREACHABLE_API } : {};
      if (given.planOnly) {
        const observed = await observe(fx.ledgerRepo, fx.standinLog, `edge-${runId}`, async () =>
          outcomeOf(await fx.run('plan', { runId, actor: 'alice', with: inputs, env })),
        );
        if (observed.workflow?.state === 'awaiting-approval') awaitingRun = serial;
        return observed;
      }
      if (!given.selfApproval) {
        // The keys as files (a secret a workflow step wrote out), world-readable.
        const keys = {
          'fleet-private-key': world.fleet.privateKeyPath,
          'bootstrap-private-key': world.bootstrap.privateKeyPath,
          'ssh-wait': '60s',
        };
        return observe(fx.ledgerRepo, fx.standinLog, `edge-${runId}`, async () =>
          outcomeOf(await fx.run('provision', { runId, actor: 'alice', with: { ...inputs, ...keys }, env })),
        );
      }
      if (planned === undefined) {
        const plan = await fx.run('plan', { runId, actor: 'alice', with: inputs });
        if (plan.code !== 0) throw new Error(`the plan failed:\n${plan.stdout}\n${plan.stderr}`);
      }
      fx.double.state.approvals[runId] = [{ state: 'approved', user: 'alice', environments: ['production'] }];
      const appliesOnly = { 'tofu-binary': standinPath, 'allow-local-state': 'true' };
      return observe(fx.ledgerRepo, fx.standinLog, `edge-${runId}`, async () =>
        outcomeOf(
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

/** The provision template under gitlab-ci-local, the GitLab API and git served by the double; keys as File variables. */
function gitlabFace(): Face {
  const PROJECT = { id: 42, path: 'acme/infra', jobTokenPushAllowed: true };
  let world: World;
  let root: string;
  let project: string;
  let ledger: string;
  let double: GitLabDouble;
  let env: NodeJS.ProcessEnv;
  let standinLog: string;
  /** The serial and pipeline file of a plan-only row whose plan awaits approval, for the next self-approval row. */
  let awaiting: { serial: number; file: string } | undefined;

  const git = async (args: string[]) => {
    const r = await runProcess('git', args, { cwd: project, env });
    if (r.code !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr}`);
  };
  const commit = async (message: string) => {
    await git(['add', '-A']);
    await git(['-c', 'user.name=a', '-c', 'user.email=a@example.invalid', 'commit', '--quiet', '-m', message]);
  };
  /** The project's pipeline for this run: approval manual (a person runs the apply job), none for a whole chain. */
  const pipelineFile = async (given: Given, serial: number): Promise<string> => {
    const file = `provision-${serial}.yml`;
    const approval = given.chain ? ['approval: none', 'apply-when: on_success'] : ['approval: manual'];
    const inputs = [
      'workspace: edge',
      `playbook: ${given.playbook ?? 'site.yml'}`,
      ...approval,
      'allow-local-state: true',
    ];
    const lines = ['stages: [build, deploy]', 'include:', '  - local: templates/provision.yml', '    inputs:'];
    await writeFile(path.join(project, file), [...lines, ...inputs.map((i) => `      ${i}`), ''].join('\n'));
    await writeFile(path.join(project, 'edge/exocomp.auto.tfvars.json'), inventoryTfvars(world, given));
    await commit(file);
    return file;
  };
  const variables = (user: string, pipelineId: number, jobId: number, given: Given): Record<string, string> => ({
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
    EXOCOMP_FLEET_KEY: world.fleet.privateKeyPath,
    EXOCOMP_BOOTSTRAP_KEY: world.bootstrap.privateKeyPath,
    EXOCOMP_SSH_WAIT: '60s',
    ...(given.sealKey ? { EXOCOMP_SEAL_KEY: given.sealKey } : {}),
    // The REST API root only: the ledger's git stays on CI_SERVER_URL, the double.
    ...(given.apiUnreachable ? { CI_API_V4_URL: `${UNREACHABLE_API}/api/v4` } : {}),
  });

  return {
    name: 'gitlab',
    async setUp(shared) {
      world = shared;
      root = await mkdtemp(path.join(tmpdir(), 'exocomp-contract-gitlab-'));
      const gitRoot = path.join(root, 'git');
      ledger = path.join(gitRoot, `${PROJECT.path}.git`);
      await mkdir(path.dirname(ledger), { recursive: true });
      await runProcess('git', ['init', '--quiet', '--bare', ledger]);
      double = new GitLabDouble({ gitRoot });
      await double.start();
      double.state.projects.push({ ...PROJECT });
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
      await cp(sitePlaybook, path.join(project, 'site.yml'));
      await git(['init', '--quiet', '-b', 'main']);
      await git(['remote', 'add', 'origin', `${double.url}/${PROJECT.path}.git`]);
      await commit('infra');
    },
    async run(given, runSerial) {
      const planned = given.selfApproval ? awaiting : undefined;
      awaiting = undefined;
      const serial = planned?.serial ?? runSerial;
      const pipelineId = 900 + serial;
      const file = planned?.file ?? (await pipelineFile(given, serial));
      const workflowId = `edge-${pipelineId}`;
      const pipeline = (user: string, jobId: number, job: string | undefined) =>
        runPipeline({
          cwd: project,
          env,
          file,
          variables: {
            ...variables(user, pipelineId, jobId, given),
            ...(job === 'exocomp-apply' ? { CI_JOB_MANUAL: 'true' } : {}),
          },
          ...(job ? { jobs: [job] } : {}),
          ...(job === 'exocomp-apply' ? { manual: [job] } : {}),
        });
      // gitlab-ci-local 4.65 reports a failed manual job as a warning (exit 0): the job's own mark counts.
      const outcome = (result: { code: number; stdout: string; stderr: string }) => ({
        ...outcomeOf(result),
        ...(/(WARN|FAIL)\s+exocomp-/.test(result.stdout) ? { failed: true } : {}),
      });
      if (given.chain)
        return observe(ledger, standinLog, workflowId, async () =>
          outcome(await pipeline('alice', pipelineId * 10, undefined)),
        );
      if (!given.selfApproval) {
        const observed = await observe(ledger, standinLog, workflowId, async () =>
          outcome(await pipeline('alice', pipelineId * 10, 'exocomp-plan')),
        );
        if (given.planOnly && observed.workflow?.state === 'awaiting-approval') awaiting = { serial, file };
        return observed;
      }
      if (planned === undefined) {
        const plan = await pipeline('alice', pipelineId * 10, 'exocomp-plan');
        if (plan.code !== 0) throw new Error(`the plan job failed:\n${plan.stdout}\n${plan.stderr}`);
      }
      return observe(ledger, standinLog, workflowId, async () =>
        outcome(await pipeline('alice', pipelineId * 10 + 1, 'exocomp-apply')),
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
  let world: World;
  return {
    name: 'cli',
    async setUp(shared) {
      world = shared;
      fx = await createChainFixture('edge');
      await cp(sitePlaybook, path.join(fx.dir, 'site.yml'));
    },
    async run(given, serial) {
      const workflowId = `edge-cli-${serial}`;
      await writeFile(path.join(fx.workspace, 'exocomp.auto.tfvars.json'), inventoryTfvars(world, given));
      const keys = ['--fleet-key', world.fleet.privateKeyPath, '--bootstrap-key', world.bootstrap.privateKeyPath];
      const args = ['provision', 'run', fx.workspace, given.playbook ?? 'site.yml', ...fx.common, ...keys];
      if (given.sealKey) args.push('--seal-key', given.sealKey);
      args.push('--allow-local-state', '--id', workflowId, '--ssh-wait', '60s');
      return observe(fx.ledger, fx.standinLog, workflowId, async () => outcomeOf(await fx.cli(args)));
    },
    tearDown: async () => fx?.cleanup(),
  };
}

const faces: Face[] = [githubFace(), gitlabFace(), cliFace()];

describe('one scenario table, three faces', () => {
  let world: World;
  beforeAll(async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'exocomp-contract-'));
    const bootstrap = await generateKeyPair(dir, 'bootstrap');
    const fleet = await generateKeyPair(dir, 'fleet');
    // As a GitLab runner writes File variables: readable by everyone; ssh would refuse these as they are.
    await chmod(fleet.privateKeyPath, 0o666);
    await chmod(bootstrap.privateKeyPath, 0o666);
    const sealKeyFile = path.join(dir, 'seal.key');
    await writeFile(sealKeyFile, `${SEAL_KEY}\n`, { mode: 0o666 });
    const host = await createLoopbackHost({ rootAuthorizedKey: bootstrap.publicKey });
    world = { dir, host, fleet, bootstrap, sealKeyFile };
    await Promise.all([host.start(), ...faces.map((face) => face.setUp(world))]);
  }, scaled(180_000));
  afterAll(async () => {
    await Promise.all([world?.host.destroy(), ...faces.map((face) => face.tearDown())]);
    if (world) await rm(world.dir, { recursive: true, force: true });
  });

  describe.each(scenarios.map((scenario, index) => ({ scenario, index })))('$scenario.name', ({ scenario, index }) => {
    it.each(faces.filter((face) => scenario.notOn?.[face.name] === undefined))(
      'on $name',
      async (face) => {
        const observed = await face.run(scenario.given(world), index + 1);
        const expected = scenario.expect;
        if ('succeeded' in expected) {
          expect(observed.failed, observed.log).toBe(false);
          expect(observed.workflow).toMatchObject(expected.succeeded);
          if (expected.says) expect(observed.log).toMatch(expected.says);
          return;
        }
        if ('guarded' in expected) {
          expect(observed.log).toMatch(expected.guarded);
          expect(observed.history).not.toBe('');
          expect(observed.history).not.toContain(expected.neverInLedger);
          return;
        }
        expect(observed.failed, observed.log).toBe(true);
        expect(observed.log).toMatch(expected.refused);
        expect(observed.tofuCalls).toBe(0);
        if ('ledgerWritten' in expected) expect(observed.ledgerWritten).toBe(false);
        else expect(observed.workflow).toMatchObject(expected.workflow);
      },
      scaled(600_000),
    );
  });
});
