/**
 * Issue 13, item 7: every workflow the docs present runs as written. The
 * README's workflow, each file in examples/github/ (the reusable workflow
 * through its caller) and each shape `exocomp schedule add` writes (converge,
 * drift, shards) run whole — jobs, `needs`, outputs, `if:`, matrices,
 * permissions — on the runner emulation (test/support/workflow-runner.ts),
 * with `exocomp/provision…@v1` mapped to this checkout, against a loopback
 * host, the tofu stand-in (state in an http backend, as docs/state.md asks in
 * CI) and the GitHub doubles. The repository holds only the secrets
 * docs/github.md names: a workflow reading any other fails, as does one that
 * needs a permission it does not grant or a tool its steps do not install.
 * This repository's own e2e.yml runs too, on a checkout of this repository,
 * its host the container it starts (test/support/docker-standin.ts) and its
 * state local, as the workflow allows with its reason.
 */
import { randomBytes } from 'node:crypto';
import { cp, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProcess } from '../../src/adapters/process.js';
import { events, repoRoot, type RunnerEvent } from '../support/action-runner.js';
import { DockerStandin } from '../support/docker-standin.js';
import { HttpStateServer } from '../support/http-state.js';
import type { LoopbackHost } from '../support/loopback-host.js';
import { ResultsDouble } from '../support/results-double.js';
import { scaled } from '../support/time.js';
import { standinPath } from '../support/tofu-standin.js';
import {
  runnerPathWithoutTofu,
  WorkflowRunner,
  type JobRun,
  type RunnerSetting,
  type WorkflowRun,
} from '../support/workflow-runner.js';
import { BOT, createActionFixture, REPOSITORY, startWebHost, type ActionFixture } from './helpers.js';

const HOSTNAME = 'github.localhost';
const TIMEOUT = scaled(240_000);

/** The secret names docs/github.md's "Secrets" table gives. */
async function documentedSecretNames(): Promise<string[]> {
  const text = await readFile(join(repoRoot, 'docs/github.md'), 'utf8');
  const section = text.split('\n## Secrets\n')[1]?.split('\n## ')[0] ?? '';
  return [...section.matchAll(/^\| `([A-Z][A-Z0-9_]*)` \|/gm)].map((m) => m[1]!);
}

/** The YAML blocks of a markdown file that are whole workflows (they have `on:` and `jobs:`). */
async function workflowBlocks(file: string): Promise<string[]> {
  const text = await readFile(join(repoRoot, file), 'utf8');
  return [...text.matchAll(/```ya?ml\n([\s\S]*?)```/g)]
    .map((m) => m[1]!)
    .filter((block) => /^on:/m.test(block) && /^jobs:/m.test(block));
}

/** One line per job and failed step, with the failed step's log, for assertion messages. */
function describeWorkflow(run: WorkflowRun): string {
  return run.jobs
    .map((job) => {
      const failed = job.steps.find((s) => s.result && s.result.code !== 0);
      return `${job.name}: ${job.conclusion}${failed ? ` at "${failed.name}"\n${failed.result!.log}` : ''}`;
    })
    .join('\n');
}

function stepOutput(job: JobRun | undefined, name: string): string | undefined {
  return job?.steps.map((s) => s.result?.outputs[name]).find((v) => v !== undefined && v !== '');
}

describe('every workflow the docs present, run as written with only the documented secrets', () => {
  let fx: ActionFixture;
  let host: LoopbackHost;
  let results: ResultsDouble;
  let state: HttpStateServer;
  let runner: WorkflowRunner;
  let runnerSetting: RunnerSetting;
  /** The values of the documented secrets (keys made for the fixture). */
  let keyValues: Record<string, string>;
  let docker: DockerStandin;
  let secretNames: string[];
  let runId = 9000;
  const ran = new Set<string>();

  const record = async (id: string) =>
    JSON.parse((await fx.ledgerFile(`workflows/${id}.json`)) ?? 'null') as { state: string } | null;
  /** Runs a workflow the docs present (`name`) as the repository's file `.github/workflows/<file>`. */
  const run = async (
    name: string,
    file: string,
    text: string,
    trigger: { event: RunnerEvent; actor: string; inputs?: Record<string, string> },
  ) => {
    ran.add(name);
    return runner.run(`.github/workflows/${file}`, text, { ...trigger, runId: ++runId });
  };
  const example = (file: string) => readFile(join(repoRoot, 'examples/github', file), 'utf8');

  beforeAll(async () => {
    fx = await createActionFixture('edge');
    host = await startWebHost(fx);
    state = await HttpStateServer.start();
    await writeFile(join(fx.workspace, 'backend.tf.json'), JSON.stringify(state.backendBlock('edge')));
    results = await ResultsDouble.start(HOSTNAME);
    fx.double.artifacts = results;
    fx.double.state.collaborators = { alice: 'write', bob: 'write' };
    fx.double.state.environments.production = { requiredReviewers: ['bob'], preventSelfReview: true };
    // The repository's workflows, as GitHub knows them for dispatches.
    await mkdir(join(fx.checkout, '.github/workflows'), { recursive: true });
    let workflowId = 70;
    for (const file of await readdir(join(repoRoot, 'examples/github'))) {
      const text = await example(file);
      await writeFile(join(fx.checkout, '.github/workflows', file), text);
      const dispatch = (parseYaml(text) as { on: Record<string, { inputs?: Record<string, unknown> } | null> }).on
        .workflow_dispatch;
      fx.double.state.workflows[file] = {
        id: ++workflowId,
        workflowDispatch: dispatch !== undefined,
        inputs: Object.keys(dispatch?.inputs ?? {}),
      };
    }
    secretNames = await documentedSecretNames();
    const values: Record<string, string> = (keyValues = {
      EXOCOMP_FLEET_KEY: await readFile(fx.fleet.privateKeyPath, 'utf8'),
      EXOCOMP_BOOTSTRAP_KEY: await readFile(fx.bootstrap.privateKeyPath, 'utf8'),
      EXOCOMP_SEAL_KEY: randomBytes(32).toString('base64'),
      EXOCOMP_RUN_SECRETS: 'GREETING: hello from a secret\n',
    });
    runnerSetting = {
      double: fx.double,
      results,
      hostname: HOSTNAME,
      repository: REPOSITORY,
      repositoryDir: fx.checkout,
      secrets: Object.fromEntries(secretNames.map((name) => [name, values[name] ?? `value of ${name}`])),
      path: await runnerPathWithoutTofu(join(fx.dir, 'runner-path')),
      tofu: standinPath,
      env: { EXOCOMP_TOFU_STANDIN_LOG: fx.standinLog },
      reviewer: 'bob',
    };
    runner = new WorkflowRunner(runnerSetting);
  }, TIMEOUT);

  afterAll(async () => {
    await docker?.close();
    await host?.destroy();
    await state?.close();
    await results?.close();
    await fx?.cleanup();
  });

  it('docs/github.md names the secrets the workflows use', () => {
    expect(secretNames).toEqual(
      expect.arrayContaining(['EXOCOMP_FLEET_KEY', 'EXOCOMP_BOOTSTRAP_KEY', 'EXOCOMP_SEAL_KEY']),
    );
  });

  it.concurrent(
    'the README workflow: the plan job records the plan, the environment-gated job applies it and runs the chain',
    async () => {
      const [readme, ...others] = await workflowBlocks('README.md');
      expect(others).toEqual([]);
      const result = await run('README.md', 'provision.yml', readme!, {
        event: events.push(REPOSITORY, 'alice'),
        actor: 'alice',
      });
      expect(result.conclusion, describeWorkflow(result)).toBe('success');
      const id = result.jobs.find((j) => j.name === 'plan')?.outputs['workflow-id'];
      expect(await record(id!)).toMatchObject({ state: 'provisioned' });
      expect(await host.readFile('/tmp/exocomp-configured-web')).toContain('user=exocomp');
      // The state lives in the backend, not on the runner.
      expect(state.states.get('/state/edge')).toContain('"lineage"');
    },
    TIMEOUT,
  );

  // Its own host, checkout, ledger branch and runner: it runs beside the README chain, not after it.
  it.concurrent(
    "this repository's e2e.yml, on a checkout of this repository with no secrets: the chain on the container it starts",
    async () => {
      // A checkout of this repository: its tracked files as the working tree has them.
      const checkout = join(fx.dir, 'exocomp-checkout');
      const tracked = await runProcess('git', ['ls-files', '-z'], { cwd: repoRoot });
      for (const file of tracked.stdout.split('\0').filter(Boolean)) {
        await mkdir(dirname(join(checkout, file)), { recursive: true });
        await cp(join(repoRoot, file), join(checkout, file));
      }
      docker = await DockerStandin.start(fx.dir);
      const own = new WorkflowRunner({
        double: fx.double,
        results,
        hostname: HOSTNAME,
        repository: REPOSITORY,
        repositoryDir: checkout,
        // e2e.yml makes its keys in the job: it reads no secret.
        secrets: {},
        path: `${docker.binDir}:${await runnerPathWithoutTofu(join(fx.dir, 'runner-path-e2e'))}`,
        tofu: standinPath,
        env: { EXOCOMP_TOFU_STANDIN_LOG: fx.standinLog },
        reviewer: 'bob',
      });
      const text = await readFile(join(repoRoot, '.github/workflows/e2e.yml'), 'utf8');
      ran.add('.github/workflows/e2e.yml');
      const result = await own.run('.github/workflows/e2e.yml', text, {
        event: events.push(REPOSITORY, 'alice'),
        actor: 'alice',
        runId: ++runId,
      });
      expect(result.conclusion, describeWorkflow(result)).toBe('success');
      const id = stepOutput(result.jobs[0], 'workflow-id')!;
      expect(JSON.parse((await fx.ledgerFile(`workflows/${id}.json`, 'exocomp-ledger-e2e')) ?? 'null')).toMatchObject({
        state: 'provisioned',
      });
      const edge = docker.containers.get('edge')!.host!;
      expect(await edge.readFile('/tmp/exocomp-configured-edge')).toContain('greeting=hello from e2e');
    },
    TIMEOUT,
  );

  it(
    'provision.yml (dispatch approval) → exocomp-approve.yml by someone else → the dispatched provision.yml continues',
    async () => {
      const provision = await example('provision.yml');
      const first = await run('examples/github/provision.yml', 'provision.yml', provision, {
        event: events.push(REPOSITORY, 'alice'),
        actor: 'alice',
      });
      expect(first.conclusion, describeWorkflow(first)).toBe('success');
      const id = stepOutput(first.jobs[0], 'workflow-id')!;
      expect(await record(id)).toMatchObject({ state: 'awaiting-approval' });

      const decision = { 'workflow-id': id, decision: 'approve', reason: 'looks right' };
      const approve = await run(
        'examples/github/exocomp-approve.yml',
        'exocomp-approve.yml',
        await example('exocomp-approve.yml'),
        {
          event: events.workflowDispatch(REPOSITORY, 'bob', decision),
          actor: 'bob',
          inputs: decision,
        },
      );
      expect(approve.conclusion, describeWorkflow(approve)).toBe('success');
      const dispatch = fx.double.state.dispatches.at(-1)!;
      expect(dispatch).toMatchObject({ workflow: 'provision.yml', inputs: { 'workflow-id': id } });

      const inputs = dispatch.inputs as Record<string, string>;
      const continued = await run('examples/github/provision.yml', 'provision.yml', provision, {
        event: events.workflowDispatch(REPOSITORY, BOT, inputs),
        actor: BOT,
        inputs,
      });
      expect(continued.conclusion, describeWorkflow(continued)).toBe('success');
      expect(await record(id)).toMatchObject({ state: 'provisioned' });
    },
    TIMEOUT,
  );

  // Issue 39: the keys only in the environment's secrets (none in the repository), passed by `secrets: inherit`.
  it(
    'provision-reusable-caller.yml, the keys only in the environment: refused without them; five jobs, only apply reviewed; a resume after a lost onboard runner waits for no reviewer',
    async () => {
      const environmentSecrets: Record<string, Record<string, string>> = {};
      const reusable = new WorkflowRunner({ ...runnerSetting, secrets: {}, environmentSecrets });
      const caller = await example('provision-reusable-caller.yml');
      const push = async (lostJobs: string[] = []) => {
        ran.add('examples/github/provision-reusable-caller.yml');
        return reusable.run('.github/workflows/provision-reusable-caller.yml', caller, {
          event: events.push(REPOSITORY, 'alice'),
          actor: 'alice',
          runId: ++runId,
          lostJobs,
        });
      };

      // No keys anywhere: the first job fails naming each and where it goes, before anything is recorded.
      const bare = await push();
      expect(bare.conclusion).toBe('failure');
      const refused = bare.jobs[0]!.steps.find((step) => step.result && step.result.code !== 0);
      expect(refused?.name).toBe('The keys are here');
      const annotation = refused!.result!.annotations.map((a) => a.message).join('\n');
      for (const name of [
        'EXOCOMP_FLEET_KEY',
        'EXOCOMP_BOOTSTRAP_KEY',
        'EXOCOMP_SEAL_KEY',
        "environment 'exocomp-keys'",
      ])
        expect(annotation).toContain(name);
      expect(bare.jobs.slice(1).map((j) => j.conclusion)).toEqual(['skipped', 'skipped', 'skipped', 'skipped']);
      expect(await record(`edge-${runId}`)).toBeNull();

      environmentSecrets['exocomp-keys'] = {
        EXOCOMP_FLEET_KEY: keyValues.EXOCOMP_FLEET_KEY!,
        EXOCOMP_BOOTSTRAP_KEY: keyValues.EXOCOMP_BOOTSTRAP_KEY!,
        EXOCOMP_SEAL_KEY: keyValues.EXOCOMP_SEAL_KEY!,
        EXOCOMP_RUN_SECRETS: keyValues.EXOCOMP_RUN_SECRETS!,
      };
      environmentSecrets.production = { EXOCOMP_SEAL_KEY: keyValues.EXOCOMP_SEAL_KEY! };
      // The onboard job's runner is lost before it starts: configure is skipped, the workflow stops at onboard.
      const first = await push(['provision / onboard']);
      expect(first.jobs.map((j) => [j.name, j.conclusion])).toEqual([
        ['provision / plan', 'success'],
        ['provision / apply', 'success'],
        ['provision / ssh-wait', 'success'],
        ['provision / onboard', 'failure'],
        ['provision / configure', 'skipped'],
      ]);
      // Only the apply job names the reviewed environment; the keys' jobs wait for nobody.
      expect(first.jobs.filter((j) => j.waitedForReview).map((j) => j.name)).toEqual(['provision / apply']);
      // The environment's deployment links to the status the plan job published: no pull request on this
      // push, so the plan's run attempt summary (the steps reach the double as HOSTNAME).
      expect(first.jobs[1]!.environmentUrl).toBe(
        `${fx.double.url.replace('127.0.0.1', HOSTNAME)}/${REPOSITORY}/actions/runs/${runId}/attempts/1`,
      );
      const id = first.jobs[0]!.outputs['workflow-id']!;
      expect(await record(id)).toMatchObject({ state: 'provisioning' });

      // The continuation the resume sweeper dispatches: past its apply, so the gated job is skipped.
      const inputs = { 'workflow-id': id };
      ran.add('examples/github/provision-reusable-caller.yml');
      const resumed = await reusable.run('.github/workflows/provision-reusable-caller.yml', caller, {
        event: events.workflowDispatch(REPOSITORY, BOT, inputs),
        actor: BOT,
        runId: ++runId,
        inputs,
      });
      expect(resumed.conclusion, describeWorkflow(resumed)).toBe('success');
      expect(resumed.jobs.map((j) => [j.name, j.conclusion])).toEqual([
        ['provision / plan', 'success'],
        ['provision / apply', 'skipped'],
        ['provision / ssh-wait', 'success'],
        ['provision / onboard', 'success'],
        ['provision / configure', 'success'],
      ]);
      expect(resumed.jobs.filter((j) => j.waitedForReview)).toEqual([]);
      expect(await record(id)).toMatchObject({ state: 'provisioned' });
    },
    TIMEOUT,
  );

  it(
    'plan-pull-request.yml: a plan preview on a pull request',
    async () => {
      const result = await run(
        'examples/github/plan-pull-request.yml',
        'plan-pull-request.yml',
        await example('plan-pull-request.yml'),
        {
          event: events.pullRequest(REPOSITORY, 12, 'carol'),
          actor: 'carol',
        },
      );
      expect(result.conclusion, describeWorkflow(result)).toBe('success');
    },
    TIMEOUT,
  );

  it(
    'converge-nightly.yml and resume-sweeper.yml on their schedules',
    async () => {
      for (const file of ['converge-nightly.yml', 'resume-sweeper.yml']) {
        const result = await run(`examples/github/${file}`, file, await example(file), {
          event: events.schedule(REPOSITORY),
          actor: 'alice',
        });
        expect(result.conclusion, `${file}\n${describeWorkflow(result)}`).toBe('success');
      }
    },
    TIMEOUT,
  );

  it.each([
    [
      'converge',
      [
        'nightly',
        '--kind',
        'play',
        '--concurrency-key',
        'edge-converge',
        '--',
        'site.yml',
        '--check',
        '--limit',
        'web',
      ],
    ],
    [
      'drift',
      [
        'edge-drift',
        '--kind',
        'drift',
        '--workspace',
        'infra/edge',
        '--concurrency-key',
        'edge-drift',
        '--',
        'site.yml',
      ],
    ],
    ['shards', ['sharded', '--kind', 'play', '--concurrency-key', 'edge-shards', '--shards', '2', '--', 'site.yml']],
  ])(
    'schedule add (%s) writes a workflow that runs on its schedule',
    async (_shape, args) => {
      const generated = await runProcess(
        process.execPath,
        [
          join(repoRoot, 'dist/cli.js'),
          'schedule',
          'add',
          ...args.slice(0, 1),
          '--cron',
          '0 17 3 * * *',
          '--target',
          'tf:edge',
          ...args.slice(1),
        ],
        {
          cwd: fx.checkout,
        },
      );
      expect(generated.code, generated.stderr).toBe(0);
      const file = `exocomp-${args[0]}.yml`;
      const result = await run(
        `schedule add ${args[0]}`,
        file,
        await readFile(join(fx.checkout, '.github/workflows', file), 'utf8'),
        {
          event: events.schedule(REPOSITORY),
          actor: 'alice',
        },
      );
      expect(result.conclusion, describeWorkflow(result)).toBe('success');
      expect(result.jobs.every((j) => j.conclusion === 'success')).toBe(true);
    },
    TIMEOUT,
  );

  it('ran every example workflow in examples/github/ and in the README', async () => {
    const examples = (await readdir(join(repoRoot, 'examples/github'))).map((f) => `examples/github/${f}`);
    expect([...ran].filter((name) => name.startsWith('examples/')).sort()).toEqual(examples.sort());
    expect(ran.has('README.md')).toBe(true);
    expect(ran.has('.github/workflows/e2e.yml')).toBe(true);
    for (const doc of (await readdir(join(repoRoot, 'docs'))).filter((f) => f.endsWith('.md')))
      expect(await workflowBlocks(`docs/${doc}`), doc).toEqual([]);
  });
});
