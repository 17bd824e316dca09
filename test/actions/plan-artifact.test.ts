/**
 * The approved plan travelling between jobs (issue 4; docs/architecture.md, "Approval"): the plan
 * job uploads the saved plan sealed with the seal key through @actions/artifact
 * (against a loopback results service), the apply job of the same run applies
 * exactly that plan, and refuses one whose content differs from what was
 * approved. The artifact's bytes hold no sensitive value in clear.
 */
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProcess } from '../../src/adapters/process.js';
import { planArtifactName, sealPlan, unsealPlan } from '../../src/app/provision/sealed-plan.js';
import { ResultsDouble } from '../support/results-double.js';
import { invocationsOf, readStandinLog, standinPath } from '../support/tofu-standin.js';
import { createActionFixture, describeRun, planInputs, type ActionFixture } from './helpers.js';

const HOSTNAME = 'github.localhost';
const sealKey = 'artifact-seal-key-0123456789abcdef';
const sensitive = ['loopback-only-sealed-password', 'loopback-only-api-token'];

function restoreEnv(saved: { token: string | undefined; url: string | undefined }): void {
  for (const [name, value] of [
    ['ACTIONS_RUNTIME_TOKEN', saved.token],
    ['ACTIONS_RESULTS_URL', saved.url],
  ] as const) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
}

describe('the sealed plan artifact', () => {
  let fx: ActionFixture;
  let results: ResultsDouble;
  const inventory = (address: string) =>
    JSON.stringify({ ansible_inventory: { all: { hosts: { web: { ansible_host: address, ansible_port: 2222 } } } } });

  beforeAll(async () => {
    fx = await createActionFixture('sealed');
    results = await ResultsDouble.start(HOSTNAME);
    // The REST API lists every run's artifacts: the apply reads the plan through it (findBy), as a re-run attempt must.
    fx.double.artifacts = results;
    await writeFile(join(fx.workspace, 'exocomp.auto.tfvars.json'), inventory('127.0.0.1'));
    fx.double.state.environments['production'] = { requiredReviewers: ['bob'] };
  });
  afterAll(async () => {
    await results?.close();
    await fx?.cleanup();
  });

  /** Uploads a small file as artifact `name` from a job of run `runId`'s attempt `runAttempt`, as @actions/artifact does. */
  const uploadAs = async (runId: number, runAttempt: number, name: string) => {
    const { DefaultArtifactClient } = await import('@actions/artifact');
    const scratch = await mkdtemp(join(tmpdir(), 'exocomp-upload-'));
    const saved = { token: process.env.ACTIONS_RUNTIME_TOKEN, url: process.env.ACTIONS_RESULTS_URL };
    try {
      process.env.ACTIONS_RUNTIME_TOKEN = results.runtimeToken(runId, 'plan', runAttempt);
      process.env.ACTIONS_RESULTS_URL = results.url.replace(HOSTNAME, '127.0.0.1');
      await writeFile(join(scratch, name), 'x');
      await new DefaultArtifactClient().uploadArtifact(name, [join(scratch, name)], scratch, { skipArchive: true });
    } finally {
      restoreEnv(saved);
      await rm(scratch, { recursive: true, force: true });
    }
  };

  const job = (action: 'plan' | 'apply', runId: number, runAttempt = 1) =>
    fx.run(action, {
      runId,
      runAttempt,
      job: action,
      loopbackHostname: HOSTNAME,
      env: { ACTIONS_RESULTS_URL: results.url, ACTIONS_RUNTIME_TOKEN: results.runtimeToken(runId, action, runAttempt) },
      with:
        action === 'plan'
          ? planInputs({ 'seal-key': sealKey })
          : {
              'workflow-id': `edge-${runId}`,
              environment: 'production',
              'seal-key': sealKey,
              'tofu-binary': standinPath,
              'allow-local-state': 'true',
            },
    });

  it('uploads the plan sealed: no sensitive value in its bytes, though the plan inside holds them', async () => {
    const plan = await job('plan', 9500);
    expect(plan.code, describeRun(plan)).toBe(0);
    expect(plan.stdout).toContain('uploaded the sealed plan for the apply job');
    const artifact = results.newest(planArtifactName('edge-9500', 1));
    expect(artifact?.content.length).toBeGreaterThan(100);
    for (const value of [...sensitive, sealKey]) expect(artifact!.content.includes(Buffer.from(value))).toBe(false);
    const opened = unsealPlan(artifact!.content, sealKey, 'edge-9500').toString('utf8');
    for (const value of sensitive) expect(opened).toContain(value);
    expect(results.violations).toEqual([]);
  });

  it('the apply job of the same run applies exactly that plan after the environment approval', async () => {
    fx.double.state.approvals[9500] = [{ state: 'approved', user: 'bob', environments: ['production'] }];
    const apply = await job('apply', 9500);
    expect(apply.code, describeRun(apply)).toBe(0);
    expect(apply.stdout).toContain('applying the approved plan from the plan job (sealed artifact)');
    const applies = invocationsOf(await readStandinLog(fx.standinLog), 'apply');
    expect(applies).toHaveLength(1);
    expect(applies[0]!.argv.at(-1)).toMatch(/approved\.tfplan$/);
    // The plan was not made again in the apply job: one plan, in the plan job.
    expect(invocationsOf(await readStandinLog(fx.standinLog), 'plan')).toHaveLength(1);
    expect(results.violations).toEqual([]);
  });

  it('a "Re-run failed jobs" attempt applies the plan attempt 1 sealed, which its own runtime token cannot fetch', async () => {
    // Another host, so the plan has something to apply.
    await writeFile(join(fx.workspace, 'exocomp.auto.tfvars.json'), inventory('127.0.0.3'));
    const plan = await job('plan', 9800);
    expect(plan.code, describeRun(plan)).toBe(0);
    // Attempt 1's apply job failed before it applied anything; the re-run runs only the apply job, as attempt 2.
    const { DefaultArtifactClient } = await import('@actions/artifact');
    const scratch = await mkdtemp(join(tmpdir(), 'exocomp-attempt-2-'));
    const saved = { token: process.env.ACTIONS_RUNTIME_TOKEN, url: process.env.ACTIONS_RESULTS_URL };
    try {
      // What download-artifact without a token does in attempt 2: the run's artifact is listed, but not fetched.
      process.env.ACTIONS_RUNTIME_TOKEN = results.runtimeToken(9800, 'apply', 2);
      process.env.ACTIONS_RESULTS_URL = results.url.replace(HOSTNAME, '127.0.0.1');
      const client = new DefaultArtifactClient();
      const { artifact } = await client.getArtifact(planArtifactName('edge-9800', 1));
      await expect(client.downloadArtifact(artifact.id, { path: scratch, skipDecompress: true })).rejects.toThrow(
        /404.*workflow run not found/,
      );
    } finally {
      restoreEnv(saved);
      await rm(scratch, { recursive: true, force: true });
    }
    fx.double.state.approvals[9800] = [{ state: 'approved', user: 'bob', environments: ['production'] }];
    const before = await fx.applyCount();
    const apply = await job('apply', 9800, 2);
    expect(apply.code, describeRun(apply)).toBe(0);
    expect(apply.stdout).toContain('applying the approved plan from the plan job (sealed artifact)');
    expect(await fx.applyCount(), describeRun(apply)).toBe(before + 1);
    expect(
      fx.double.requestsTo('GET /repos/{owner}/{repo}/actions/runs/{run_id}/artifacts').at(-1)?.params.run_id,
    ).toBe('9800');
    expect(results.violations).toEqual([]);
    expect(fx.double.violations).toEqual([]);
  });

  it('"Re-run all jobs" plans again under the attempt’s own name, and the apply applies the plan its approval bound', async () => {
    await writeFile(join(fx.workspace, 'exocomp.auto.tfvars.json'), inventory('127.0.0.4'));
    const first = await job('plan', 9900);
    expect(first.code, describeRun(first)).toBe(0);
    // Attempt 1's deployment was rejected; the re-run plans again (the workspace changed meanwhile).
    fx.double.state.approvals[9900] = [{ state: 'rejected', user: 'bob', environments: ['production'] }];
    await writeFile(join(fx.workspace, 'exocomp.auto.tfvars.json'), inventory('127.0.0.5'));
    const second = await job('plan', 9900, 2);
    expect(second.code, describeRun(second)).toBe(0);
    expect(results.newest(planArtifactName('edge-9900', 1))).toBeDefined();
    expect(results.newest(planArtifactName('edge-9900', 2))).toBeDefined();
    const record = JSON.parse((await fx.ledgerFile('workflows/edge-9900.json'))!);
    expect(record.approval).toMatchObject({ planRunId: 9900, planRunAttempt: 2 });
    // The service refuses a name the run holds already, whichever attempt uploads it (GitHub's 409).
    await expect(uploadAs(9900, 3, planArtifactName('edge-9900', 2))).rejects.toThrow(/409.*already exists/);

    fx.double.state.approvals[9900].push({ state: 'approved', user: 'bob', environments: ['production'] });
    const before = await fx.applyCount();
    const apply = await job('apply', 9900, 2);
    expect(apply.code, describeRun(apply)).toBe(0);
    expect(apply.stdout).toContain('sealed artifact) of run 9900, attempt 2');
    expect(await fx.applyCount()).toBe(before + 1);

    // "Re-run all jobs" after the approval: the plan job has nothing to plan (no upload), the apply job finishes.
    const replan = await job('plan', 9900, 3);
    expect(replan.code, describeRun(replan)).toBe(0);
    expect(replan.stdout).toContain('nothing to plan');
    expect(results.newest(planArtifactName('edge-9900', 3))).toBeUndefined();
    const reapply = await job('apply', 9900, 3);
    expect(reapply.code, describeRun(reapply)).toBe(0);
    expect(await fx.applyCount()).toBe(before + 1);
    expect(results.violations).toEqual([]);
    expect(fx.double.violations).toEqual([]);
  });

  it('refuses a plan artifact that differs from the approved plan: nothing applied', async () => {
    const plan = await job('plan', 9600);
    expect(plan.code, describeRun(plan)).toBe(0);
    // Another plan of the same workspace, with a different inventory, sealed for this workflow.
    const elsewhere = await mkdtemp(join(tmpdir(), 'exocomp-other-plan-'));
    try {
      await cp(fx.workspace, elsewhere, { recursive: true });
      await writeFile(join(elsewhere, 'exocomp.auto.tfvars.json'), inventory('127.0.0.9'));
      for (const args of [
        ['init', '-input=false'],
        ['plan', '-input=false', '-out=other.tfplan'],
      ]) {
        const ran = await runProcess(standinPath, args, { cwd: elsewhere });
        expect(ran.code, ran.stderr).toBe(0);
      }
      results.replace(
        planArtifactName('edge-9600', 1),
        sealPlan(await readFile(join(elsewhere, 'other.tfplan')), sealKey, 'edge-9600'),
      );
    } finally {
      await rm(elsewhere, { recursive: true, force: true });
    }
    fx.double.state.approvals[9600] = [{ state: 'approved', user: 'bob', environments: ['production'] }];
    const before = await fx.applyCount();
    const apply = await job('apply', 9600);
    expect(apply.code).toBe(1);
    expect(apply.stdout).toContain('plan changed since approval');
    expect(await fx.applyCount()).toBe(before);
    expect(apply.outputs.state).toBe('provision-failed');
  });

  it('refuses an artifact sealed for another workflow', async () => {
    const plan = await job('plan', 9700);
    expect(plan.code, describeRun(plan)).toBe(0);
    results.replace(planArtifactName('edge-9700', 1), results.newest(planArtifactName('edge-9500', 1))!.content);
    fx.double.state.approvals[9700] = [{ state: 'approved', user: 'bob', environments: ['production'] }];
    const apply = await job('apply', 9700);
    expect(apply.code).toBe(1);
    expect(apply.stdout).toContain('does not open with this seal key');
  });
});
