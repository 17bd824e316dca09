/**
 * Dispatch mode across runs (issue 4; docs/architecture.md, "Approval"): the root action plans in
 * run 100 and ships the sealed plan as an artifact of that run; the approve
 * action (run 101) dispatches the continuation, which runs as run 102 and
 * applies exactly the plan of run 100 — fetched through the REST API
 * (`findBy`) with the real @actions/artifact client, against the GitHub double
 * and the results double. A tampered artifact, a missing one and a token that
 * may not read the plan run's artifacts are refused with nothing applied.
 */
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProcess } from '../../src/adapters/process.js';
import { planArtifactName, sealPlan } from '../../src/app/provision/sealed-plan.js';
import { events } from '../support/action-runner.js';
import { createLoopbackHost, type LoopbackHost } from '../support/loopback-host.js';
import { ResultsDouble } from '../support/results-double.js';
import { invocationsOf, readStandinLog, standinPath } from '../support/tofu-standin.js';
import { BOT, chainInputs, createActionFixture, describeRun, REPOSITORY, type ActionFixture } from './helpers.js';

const HOSTNAME = 'github.localhost';
const sealKey = 'dispatch-seal-key-0123456789abcdef';
const LIST_ARTIFACTS = 'GET /repos/{owner}/{repo}/actions/runs/{run_id}/artifacts';
const DOWNLOAD_ARTIFACT = 'GET /repos/{owner}/{repo}/actions/artifacts/{artifact_id}/{archive_format}';
/** A job token with everything the continuation needs except `actions: read`. */
const NO_ACTIONS_TOKEN = 'ghs_noActionsTokenForTheJob1234567';

interface WorkflowRecord {
  state: string;
  approval: { state: string; planFingerprint?: string; planRunId?: number };
}

describe('dispatch mode: the continuation applies the plan sealed by the run that planned', () => {
  let fx: ActionFixture;
  let results: ResultsDouble;
  let host: LoopbackHost;

  const inventory = (address: string, port: number) =>
    JSON.stringify({
      ansible_inventory: {
        all: { hosts: { web: { ansible_host: address, ansible_port: port, ansible_user: 'root' } } },
      },
    });
  const record = async (id: string): Promise<WorkflowRecord> =>
    JSON.parse((await fx.ledgerFile(`workflows/${id}.json`)) ?? 'null') as WorkflowRecord;
  const planCount = async () => invocationsOf(await readStandinLog(fx.standinLog), 'plan').length;

  /** The root action as the job of one run: the first run plans, a dispatched run continues `workflow-id`. */
  const provision = async (runId: number, options: { continues?: string; token?: string } = {}) =>
    fx.run('provision', {
      runId,
      job: 'provision',
      loopbackHostname: HOSTNAME,
      env: { ACTIONS_RESULTS_URL: results.url, ACTIONS_RUNTIME_TOKEN: results.runtimeToken(runId, 'provision') },
      ...(options.token ? { token: options.token } : {}),
      ...(options.continues
        ? { event: events.workflowDispatch(REPOSITORY, BOT, { 'workflow-id': options.continues }), actor: BOT }
        : { event: events.push(REPOSITORY, 'alice') }),
      with: await chainInputs(fx, {
        'ssh-wait': '20s',
        'require-approval': 'true',
        'approval-mode': 'dispatch',
        'seal-key': sealKey,
        ...(options.continues ? { 'workflow-id': options.continues } : {}),
      }),
    });

  const approve = (id: string, runId: number) =>
    fx.run('approve', {
      runId,
      actor: 'bob',
      job: 'approve',
      workflowFile: 'exocomp-approve.yml',
      event: events.workflowDispatch(REPOSITORY, 'bob', { 'workflow-id': id, decision: 'approve' }),
      with: { 'workflow-id': id, decision: 'approve' },
    });

  /** Plan in `runId`, approve in `runId + 1`; the continuation is left to the test. */
  const planAndApprove = async (runId: number) => {
    const planned = await provision(runId);
    expect(planned.code, describeRun(planned)).toBe(0);
    expect(planned.outputs.state).toBe('awaiting-approval');
    const approved = await approve(`edge-${runId}`, runId + 1);
    expect(approved.code, describeRun(approved)).toBe(0);
    expect(fx.double.state.dispatches.at(-1)).toMatchObject({
      workflow: 'provision.yml',
      inputs: { 'workflow-id': `edge-${runId}` },
    });
  };

  beforeAll(async () => {
    fx = await createActionFixture('sealed');
    results = await ResultsDouble.start(HOSTNAME);
    fx.double.artifacts = results;
    fx.double.state.collaborators = { alice: 'write', bob: 'write' };
    fx.double.state.workflows['provision.yml'] = { id: 77, workflowDispatch: true, inputs: ['workflow-id'] };
    fx.double.state.tokens[NO_ACTIONS_TOKEN] = {
      login: BOT,
      permissions: { contents: 'write', issues: 'write', 'pull-requests': 'write' },
      repositories: [REPOSITORY],
    };
    host = await createLoopbackHost({ rootAuthorizedKey: fx.bootstrap.publicKey, port: 2222 });
    await host.start();
    await writeFile(join(fx.workspace, 'exocomp.auto.tfvars.json'), inventory(host.address, host.port));
  });
  afterAll(async () => {
    await host?.destroy();
    await results?.close();
    await fx?.cleanup();
  });

  it('plan (run 100) → approve (run 101) → continuation (run 102) applies the plan of run 100, planning nothing anew', async () => {
    await planAndApprove(100);
    const sealed = results.newest(planArtifactName('edge-100', 1));
    expect(sealed?.runId).toBe(100);
    expect((await record('edge-100')).approval).toMatchObject({ state: 'approved', planRunId: 100 });

    const plansBefore = await planCount();
    const continued = await provision(102, { continues: 'edge-100' });
    expect(continued.code, describeRun(continued)).toBe(0);
    expect(continued.outputs.state).toBe('provisioned');
    expect(continued.stdout).toContain('applying the approved plan from the plan job (sealed artifact) of run 100');
    // No plan in run 102: the one plan was run 100's; the one apply applied its saved plan.
    expect(await planCount()).toBe(plansBefore);
    const applies = invocationsOf(await readStandinLog(fx.standinLog), 'apply');
    expect(applies).toHaveLength(1);
    expect(applies[0]!.argv.at(-1)).toMatch(/approved\.tfplan$/);
    expect(await host.readFile('/tmp/exocomp-configured-web')).toBeTruthy();
    // Fetched across runs through the REST API, with the job's token.
    const listed = fx.double.requestsTo(LIST_ARTIFACTS);
    expect(listed.map((request) => [request.params.run_id, request.status])).toEqual([['100', 200]]);
    expect(listed[0]!.url).toContain(`name=${planArtifactName('edge-100', 1)}`);
    expect(
      fx.double.requestsTo(DOWNLOAD_ARTIFACT).map((request) => [request.params.artifact_id, request.status]),
    ).toEqual([[String(sealed!.id), 302]]);
    expect(fx.double.violations).toEqual([]);
    expect(results.violations).toEqual([]);
  });

  it('refuses a continuation whose artifact holds another plan: plan changed since approval, nothing applied', async () => {
    await planAndApprove(200);
    // Another plan of the same workspace (a different host), sealed for this workflow with the right key.
    const elsewhere = await mkdtemp(join(tmpdir(), 'exocomp-other-plan-'));
    try {
      await cp(fx.workspace, elsewhere, { recursive: true });
      await writeFile(join(elsewhere, 'exocomp.auto.tfvars.json'), inventory('127.0.0.9', 2222));
      for (const args of [
        ['init', '-input=false'],
        ['plan', '-input=false', '-out=other.tfplan'],
      ]) {
        const ran = await runProcess(standinPath, args, { cwd: elsewhere });
        expect(ran.code, ran.stderr).toBe(0);
      }
      results.replace(
        planArtifactName('edge-200', 1),
        sealPlan(await readFile(join(elsewhere, 'other.tfplan')), sealKey, 'edge-200'),
      );
    } finally {
      await rm(elsewhere, { recursive: true, force: true });
    }
    const applies = await fx.applyCount();
    const continued = await provision(202, { continues: 'edge-200' });
    expect(continued.code).toBe(1);
    expect(continued.stdout).toContain('plan changed since approval');
    expect(continued.outputs.state).toBe('provision-failed');
    expect(await fx.applyCount()).toBe(applies);
  });

  it('refuses without `actions: read`, then when the artifact is gone: never a silent re-plan', async () => {
    await planAndApprove(300);
    const applies = await fx.applyCount();
    const plans = await planCount();

    const withoutPermission = await provision(302, { continues: 'edge-300', token: NO_ACTIONS_TOKEN });
    expect(withoutPermission.code).toBe(1);
    expect(withoutPermission.stdout).toContain('GitHub refused to list the artifacts of run 300');
    expect(withoutPermission.stdout).toContain('actions: read');

    results.remove(planArtifactName('edge-300', 1));
    const missing = await provision(303, { continues: 'edge-300' });
    expect(missing.code).toBe(1);
    expect(missing.stdout).toContain(
      `approved plan artifact not found: run 300 holds no ${planArtifactName('edge-300', 1)}`,
    );

    expect(await fx.applyCount()).toBe(applies);
    expect(await planCount()).toBe(plans);
    expect((await record('edge-300')).approval.state).toBe('approved');
    expect(fx.double.violations).toEqual([]);
  });
});
