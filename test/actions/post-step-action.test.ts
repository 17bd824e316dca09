/**
 * The post step of the chain's actions (issue 10 item 1): the root action's
 * main step is killed outright during `tofu apply` (SIGKILL of its process
 * tree, no handler runs), so the ledger keeps apply `running` under this run's
 * lease. The post step, run by the runner in the same job, records apply as
 * interrupted with its failure context, releases the lease and publishes the
 * status; `exocomp provision resume` then finishes with exactly one more
 * apply. A post step after a main step that recorded its steps is in
 * chain-action.test.ts.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProcess } from '../../src/adapters/process.js';
import { events, RunnerJob, type ActionResult } from '../support/action-runner.js';
import { cliPath } from '../support/chain-fixture.js';
import type { LoopbackHost } from '../support/loopback-host.js';
import { invocationsOf, readStandinLog, standinPath } from '../support/tofu-standin.js';
import {
  chainInputs,
  createActionFixture,
  describeRun,
  REPOSITORY,
  startWebHost,
  type ActionFixture,
} from './helpers.js';

const RUN_ID = 7400;
const ID = `edge-${RUN_ID}`;
const PR = 45;

interface WorkflowRecord {
  state: string;
  failure?: { step: string; kind: string; summary: string };
  steps: Array<{ name: string; state: string; lease?: { holder: string } }>;
}

describe('the post step after the root action was killed outright during tofu apply', () => {
  let fx: ActionFixture;
  let host: LoopbackHost;
  let job: RunnerJob;
  let killed: ActionResult;
  let post: ActionResult | undefined;
  let afterKill: WorkflowRecord;
  let afterPost: WorkflowRecord;
  let requestsBeforePost: number;
  let resumed: { code: number; stdout: string; stderr: string };
  let appliesBeforeResume: number;

  beforeAll(async () => {
    fx = await createActionFixture('edge');
    host = await startWebHost(fx);
    fx.double.state.issues[PR] = { pullRequest: true };
    job = await RunnerJob.start();
    killed = await fx.run('provision', {
      runId: RUN_ID,
      event: events.pullRequest(REPOSITORY, PR, 'alice'),
      with: await chainInputs(fx, { 'ssh-wait': '30s' }),
      env: { EXOCOMP_TOFU_STANDIN_APPLY_DELAY_MS: '600000' },
      killWhen: (output) => output.includes('Creating...'),
      runnerJob: job,
    });
    afterKill = JSON.parse((await fx.ledgerFile(`workflows/${ID}.json`))!) as WorkflowRecord;
    requestsBeforePost = fx.double.requests.length;
    post = await job.post(killed);
    afterPost = JSON.parse((await fx.ledgerFile(`workflows/${ID}.json`))!) as WorkflowRecord;
    appliesBeforeResume = await fx.applyCount();
    // A person resumes from a workstation: the CLI against the same ledger repository.
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      EXOCOMP_TOFU_STANDIN_LOG: fx.standinLog,
      XDG_CACHE_HOME: join(fx.dir, 'cache'),
    };
    delete env.GITHUB_ACTIONS;
    delete env.GITLAB_CI;
    const keys = ['--fleet-key', fx.fleet.privateKeyPath, '--bootstrap-key', fx.bootstrap.privateKeyPath];
    resumed = await runProcess(
      process.execPath,
      [
        cliPath,
        'provision',
        'resume',
        ID,
        '--ledger',
        fx.ledgerRepo,
        '--tofu-binary',
        standinPath,
        '--allow-local-state',
        ...keys,
      ],
      {
        cwd: fx.checkout,
        env,
      },
    );
  });

  afterAll(async () => {
    await job?.close();
    await host?.destroy();
    await fx?.cleanup();
  });

  it('was killed with no chance to record: apply stays running under this run', () => {
    expect(killed.cancellation?.signals, describeRun(killed)).toEqual(['SIGKILL']);
    expect(killed.cancellation!.leftRunning).toEqual([]);
    expect(afterKill.state).toBe('provisioning');
    const apply = afterKill.steps.find((s) => s.name === 'apply');
    expect(apply?.state).toBe('running');
    expect(apply?.lease?.holder).toMatch(new RegExp(`^github:${REPOSITORY}:${RUN_ID}:1:`));
    expect(killed.state.exocompRunningStep).toContain('"step":"apply"');
  });

  it('records apply as interrupted with its failure context and releases the lease, without failing the post step', () => {
    expect(post, 'the root action declares a post step').toBeDefined();
    expect(post!.code, describeRun(post!)).toBe(0);
    expect(afterPost.state).toBe('provision-failed');
    expect(afterPost.failure).toMatchObject({ step: 'apply', kind: 'interrupted' });
    expect(afterPost.failure!.summary).toMatch(
      new RegExp(
        `apply interrupted: the action was stopped before it could record the step \\(run ${RUN_ID} attempt 1`,
      ),
    );
    expect(afterPost.steps.find((s) => s.name === 'apply')?.state).toBe('failed');
    expect(afterPost.steps.every((s) => s.lease === undefined)).toBe(true);
  });

  it('publishes the interrupted status: an error annotation, the summary and the sticky comment', () => {
    expect(
      post!.annotations.some((a) => a.level === 'error' && /apply of edge-7400 was left running/.test(a.message)),
    ).toBe(true);
    expect(post!.summary).toMatch(/interrupted/);
    expect(fx.double.commentsOn(PR)[0]?.body).toMatch(/interrupted/);
    expect(fx.double.requests.length).toBeGreaterThan(requestsBeforePost);
    expect(fx.double.violations).toEqual([]);
  });

  it('lets provision resume finish with exactly one more apply', async () => {
    expect(resumed.code, `${resumed.stdout}\n${resumed.stderr}`).toBe(0);
    expect(appliesBeforeResume).toBe(1);
    expect(invocationsOf(await readStandinLog(fx.standinLog), 'apply')).toHaveLength(2);
    const record = JSON.parse((await fx.ledgerFile(`workflows/${ID}.json`))!) as WorkflowRecord;
    expect(record.state).toBe('provisioned');
    expect(await host.readFile('/tmp/exocomp-configured-web')).toContain('user=exocomp');
  });
});
