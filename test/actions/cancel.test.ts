/**
 * "Cancel workflow" during `tofu apply` (issue 10 item 1), with the runner's
 * signals as the emulation sends them: SIGINT, 7.5 s, SIGTERM, 2.5 s, kill.
 * The action must stop tofu, record the step as interrupted with its lease
 * released, publish the status and exit non-zero within the SIGINT window; a
 * re-run then resumes with one more apply and finishes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { events, type ActionResult } from '../support/action-runner.js';
import type { LoopbackHost } from '../support/loopback-host.js';
import { invocationsOf, readStandinLog } from '../support/tofu-standin.js';
import {
  chainInputs,
  createActionFixture,
  startWebHost,
  describeRun,
  REPOSITORY,
  type ActionFixture,
} from './helpers.js';

const RUN_ID = 7300;
const ID = `edge-${RUN_ID}`;
const PR = 44;

describe('cancelling the root action during tofu apply', () => {
  let fx: ActionFixture;
  let host: LoopbackHost;
  let cancelled: ActionResult;
  let rerun: ActionResult;
  let appliesBeforeRerun: number;
  let recordAfterCancel: string | undefined;
  let commentAfterCancel: string | undefined;

  beforeAll(async () => {
    fx = await createActionFixture('edge');
    host = await startWebHost(fx);
    fx.double.state.issues[PR] = { pullRequest: true };
    const inputs = await chainInputs(fx, { 'ssh-wait': '30s' });
    const event = events.pullRequest(REPOSITORY, PR, 'alice');
    cancelled = await fx.run('provision', {
      runId: RUN_ID,
      event,
      with: inputs,
      // apply prints "Creating..." and then waits: the user cancels the run there.
      env: { EXOCOMP_TOFU_STANDIN_APPLY_DELAY_MS: '600000' },
      cancelWhen: (output) => output.includes('Creating...'),
    });
    appliesBeforeRerun = await fx.applyCount();
    recordAfterCancel = await fx.ledgerFile(`workflows/${ID}.json`);
    commentAfterCancel = fx.double.commentsOn(PR)[0]?.body;
    rerun = await fx.run('provision', { runId: RUN_ID, runAttempt: 2, event, with: inputs });
  });

  afterAll(async () => {
    await host?.destroy();
    await fx?.cleanup();
  });

  it('stops within the SIGINT window, non-zero, leaving no process behind', () => {
    expect(cancelled.cancellation, describeRun(cancelled)).toBeDefined();
    expect(cancelled.cancellation!.signals).toEqual(['SIGINT']);
    expect(cancelled.code).not.toBe(0);
    expect(cancelled.cancellation!.leftRunning).toEqual([]);
  });

  it('records apply as interrupted with its failure context, the lease released', () => {
    const workflow = JSON.parse(recordAfterCancel!) as {
      state: string;
      failure?: { step: string; kind: string; summary: string };
      steps: Array<{ name: string; state: string; lease?: unknown }>;
    };
    expect(workflow.state).toBe('provision-failed');
    expect(workflow.failure).toMatchObject({ step: 'apply', kind: 'interrupted' });
    expect(workflow.failure!.summary).toMatch(/apply interrupted by SIGINT/);
    expect(workflow.steps.find((s) => s.name === 'apply')).toMatchObject({ state: 'failed' });
    expect(workflow.steps.every((s) => s.lease === undefined)).toBe(true);
  });

  it('publishes the interrupted status: outputs, summary and the sticky comment', () => {
    expect(cancelled.outputs.state).toBe('provision-failed');
    expect(cancelled.summary).toMatch(/interrupted/);
    expect(commentAfterCancel).toMatch(/interrupted/);
    expect(cancelled.annotations.some((a) => a.level === 'error' && /interrupted/.test(a.message))).toBe(true);
  });

  it('a re-run resumes from apply with exactly one more apply and finishes', async () => {
    expect(rerun.code, describeRun(rerun)).toBe(0);
    expect(rerun.outputs.state).toBe('provisioned');
    expect(appliesBeforeRerun).toBe(1);
    const applies = invocationsOf(await readStandinLog(fx.standinLog), 'apply');
    expect(applies).toHaveLength(2);
  });
});
