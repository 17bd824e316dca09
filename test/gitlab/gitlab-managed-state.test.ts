/**
 * Issue 36, item 3: GitLab-managed state for real. The real OpenTofu/Terraform
 * on PATH, configured by the product's `state: gitlab` variables
 * (gitlabStateEnv: TF_HTTP_* with the job token), keeps a workspace's state in
 * the GitLab double's Terraform state API: an apply locks the state and unlocks
 * it, each upload is kept as a version by serial, a lock held by another run
 * stops a plan naming that lock's ID, and `force-unlock` frees it.
 */
import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runProcess } from '../../src/adapters/process.js';
import { gitlabStateEnv } from '../../src/platform/gitlab/tofu-state.js';
import { GitLabDouble } from '../support/gitlab-double.js';
import { describeWithRealTofu, requireRealTofu } from '../support/real-tofu.js';
import { fixtureWorkspacesDir } from '../support/tofu-standin.js';
import { scaled } from '../support/time.js';

const PROJECT = { id: 42, path: 'acme/infra', jobTokenPushAllowed: true };

describeWithRealTofu('GitLab-managed state through the http backend', () => {
  let root: string;
  let workspace: string;
  let double: GitLabDouble;
  let stateEnv: Record<string, string>;

  const tofu = (...args: string[]) =>
    runProcess(requireRealTofu(), args, {
      cwd: workspace,
      env: { ...process.env, ...stateEnv, TF_IN_AUTOMATION: '1' },
      timeoutMs: scaled(60_000),
    });
  const stateRequests = () => double.requests.filter((r) => r.route?.startsWith('terraform-'));
  const latestSerial = () => {
    const latest = double.terraformState.states.get(`${PROJECT.id}/edge`)?.latest;
    return latest === undefined ? undefined : (JSON.parse(latest) as { serial: number }).serial;
  };

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'exocomp-gitlab-state-'));
    double = new GitLabDouble();
    await double.start();
    double.state.projects.push({ ...PROJECT });
    const jobToken = double.jobToken({
      id: 900,
      projectId: PROJECT.id,
      name: 'apply',
      stage: 'deploy',
      status: 'running',
      pipelineId: 90,
      user: 'alice',
      ref: 'main',
      sha: '0'.repeat(40),
    });
    stateEnv = gitlabStateEnv({ apiUrl: double.apiUrl, projectId: PROJECT.id, jobToken }, 'edge');
    workspace = join(root, 'edge');
    await cp(join(fixtureWorkspacesDir, 'edge'), workspace, { recursive: true });
    await writeFile(join(workspace, 'backend.tf.json'), JSON.stringify({ terraform: { backend: { http: {} } } }));
    await writeFile(
      join(workspace, 'exocomp.auto.tfvars.json'),
      JSON.stringify({ ansible_inventory: { all: { hosts: { web1: { ansible_host: '127.0.9.1' } } } } }),
    );
  });
  afterAll(async () => {
    await double?.stop();
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('an apply locks the state, uploads it with the lock’s ID, unlocks it; each serial is kept as a version', async () => {
    expect((await tofu('init', '-input=false', '-no-color')).code).toBe(0);
    const plan = await tofu('plan', '-input=false', '-no-color', '-out=tfplan');
    expect(plan.code, plan.stderr).toBe(0);
    const apply = await tofu('apply', '-input=false', '-no-color', 'tfplan');
    expect(apply.code, apply.stderr).toBe(0);

    const requests = stateRequests();
    expect(requests.every((r) => r.username === 'alice' && r.tokenKind === 'job')).toBe(true);
    const applying = requests.slice(requests.findLastIndex((r) => r.route === 'terraform-lock-post'));
    expect(applying.map((r) => `${r.route} ${r.status}`)).toEqual(
      expect.arrayContaining(['terraform-lock-post 200', 'terraform-state-post 200', 'terraform-lock-delete 200']),
    );
    expect(applying.at(-1)?.route).toBe('terraform-lock-delete');
    expect(double.terraformState.lockOf(PROJECT.id, 'edge')).toBeUndefined();

    const serial = latestSerial();
    expect(serial).toBeGreaterThan(0);
    const version = await fetch(`${stateEnv.TF_HTTP_ADDRESS}/versions/${serial}`, {
      headers: {
        authorization: `Basic ${Buffer.from(`gitlab-ci-token:${stateEnv.TF_HTTP_PASSWORD}`).toString('base64')}`,
      },
    });
    expect(version.status).toBe(200);
    expect(((await version.json()) as { serial: number }).serial).toBe(serial);
    const pulled = await tofu('state', 'pull');
    expect((JSON.parse(pulled.stdout) as { serial: number }).serial).toBe(serial);
  });

  it('a lock another run holds stops the plan, naming the held lock’s ID; force-unlock frees it', async () => {
    const serial = latestSerial();
    double.terraformState.holdLock(PROJECT.id, 'edge', {
      ID: 'b5d1c0de-0000-4000-8000-000000000001',
      Operation: 'OperationTypeApply',
      Info: '',
      Who: 'bob',
      Version: '1.11.4',
      Created: new Date().toISOString(),
      Path: '',
    });
    await writeFile(
      join(workspace, 'exocomp.auto.tfvars.json'),
      JSON.stringify({ ansible_inventory: { all: { hosts: { web2: { ansible_host: '127.0.9.2' } } } } }),
    );
    const refused = await tofu('plan', '-input=false', '-no-color', '-out=tfplan');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('Error acquiring the state lock');
    expect(refused.stderr).toContain('b5d1c0de-0000-4000-8000-000000000001');
    // The backend names the held lock's ID from GitLab's 409 body (its "Lock Info" block is its own attempt's).
    expect(refused.stderr).toMatch(/already locked:\s+ID=b5d1c0de-0000-4000-8000-000000000001/);
    expect(stateRequests().at(-1)).toMatchObject({ route: 'terraform-lock-post', status: 409 });

    const unlocked = await tofu('force-unlock', '-force', 'b5d1c0de-0000-4000-8000-000000000001');
    expect(unlocked.code, unlocked.stderr).toBe(0);
    expect(double.terraformState.lockOf(PROJECT.id, 'edge')).toBeUndefined();
    const planned = await tofu('plan', '-input=false', '-no-color', '-detailed-exitcode', '-out=tfplan');
    expect(planned.code, planned.stderr).toBe(2);
    expect(latestSerial()).toBe(serial);
  });
});
