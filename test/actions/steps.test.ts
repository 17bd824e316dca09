/**
 * The chain as separate jobs, the way the reusable workflow runs it (plan →
 * environment-gated apply → ssh-wait → onboard → configure), then status and
 * a converge of the standing inventory — every bundle run as the runner runs
 * it, against a real sshd host.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { events } from '../support/action-runner.js';
import { createLoopbackHost, type LoopbackHost } from '../support/loopback-host.js';
import { standinPath } from '../support/tofu-standin.js';
import { BOT, createActionFixture, describeRun, planInputs, REPOSITORY, type ActionFixture } from './helpers.js';

const RUN = 9900;
const ID = `edge-${RUN}`;
const PR = 31;

describe('one job per step, then status and converge', () => {
  let fx: ActionFixture;
  let host: LoopbackHost;
  let fleetKey: string;
  const event = () => events.pullRequest(REPOSITORY, PR, 'alice');
  const common = { 'workflow-id': ID };

  beforeAll(async () => {
    fx = await createActionFixture('edge');
    host = await createLoopbackHost({ rootAuthorizedKey: fx.bootstrap.publicKey, port: 2222 });
    await host.start();
    await writeFile(
      join(fx.workspace, 'exocomp.auto.tfvars.json'),
      JSON.stringify({
        ansible_inventory: {
          all: { hosts: { web: { ansible_host: host.address, ansible_port: host.port, ansible_user: 'root' } } },
        },
      }),
    );
    fx.double.state.environments['production'] = { requiredReviewers: ['bob'] };
    fx.double.state.approvals[RUN] = [{ state: 'approved', user: 'bob', environments: ['production'] }];
    fx.double.state.issues[PR] = { pullRequest: true };
    fleetKey = await readFile(fx.fleet.privateKeyPath, 'utf8');
  });
  afterAll(async () => {
    await host?.destroy();
    await fx?.cleanup();
  });

  it('runs each step in its own job and ends provisioned, with one comment edited by every job', async () => {
    const jobs: Array<[string, Record<string, string>]> = [
      ['plan', planInputs({ 'ssh-wait': '30s' })],
      ['apply', { ...common, environment: 'production', 'tofu-binary': standinPath, 'allow-local-state': 'true' }],
      ['ssh-wait', common],
      [
        'onboard',
        {
          ...common,
          'fleet-private-key': fleetKey,
          'bootstrap-private-key': await readFile(fx.bootstrap.privateKeyPath, 'utf8'),
        },
      ],
      ['configure', { ...common, 'fleet-private-key': fleetKey, 'run-secrets': 'GREETING: from the configure job' }],
    ];
    const states: string[] = [];
    const statusUrls: string[] = [];
    for (const [action, inputs] of jobs) {
      const result = await fx.run(action, { runId: RUN, job: action, event: event(), with: inputs });
      expect(result.code, `${action}: ${describeRun(result)}`).toBe(0);
      states.push(result.outputs.state!);
      statusUrls.push(result.outputs['status-url']!);
    }
    expect(states).toEqual(['awaiting-approval', 'provisioning', 'provisioning', 'provisioning', 'provisioned']);
    expect(await host.readFile('/tmp/exocomp-configured-web')).toContain('greeting=from the configure job');
    const ours = fx.double.commentsOn(PR).filter((c) => c.author === BOT);
    expect(ours).toHaveLength(1);
    // Every job points at the one comment (the apply job's environment url reads the plan job's).
    expect(new Set(statusUrls)).toEqual(
      new Set([`${fx.double.url}/${REPOSITORY}/issues/${PR}#issuecomment-${ours[0]!.id}`]),
    );
    expect(fx.double.requestsTo('PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}')).toHaveLength(
      jobs.length - 1,
    );
    expect(fx.double.violations).toEqual([]);
  });

  it('refuses a step whose predecessor has not succeeded', async () => {
    const plan = await fx.run('plan', { runId: RUN + 1, with: planInputs() });
    expect(plan.code, describeRun(plan)).toBe(0);
    // A push with no pull request: the status is on the run attempt's summary page.
    expect(plan.outputs['status-url']).toBe(`${fx.double.url}/${REPOSITORY}/actions/runs/${RUN + 1}/attempts/1`);
    const result = await fx.run('ssh-wait', { runId: RUN + 1, with: { 'workflow-id': `edge-${RUN + 1}` } });
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/needs an approval before ssh-wait|apply is pending, not succeeded/);
  });

  it('status: shows the workflow in the summary and outputs', async () => {
    const result = await fx.run('status', { runId: RUN + 2, with: { 'workflow-id': ID, comment: 'false' } });
    expect(result.code, describeRun(result)).toBe(0);
    expect(result.outputs.state).toBe('provisioned');
    expect(result.summary).toContain(`exocomp workflow \`${ID}\` — provisioned`);
    const all = await fx.run('status', { runId: RUN + 2 });
    expect(JSON.parse(all.outputs.workflows!)).toEqual(
      expect.arrayContaining([{ id: ID, state: 'provisioned', workspace: 'edge' }]),
    );
  });

  it('converge: runs a playbook against tf:edge with a read-only token, passing args', async () => {
    await host.exec('rm -f /tmp/exocomp-configured-web');
    const result = await fx.run('converge', {
      runId: RUN + 3,
      event: events.schedule(REPOSITORY),
      token: 'ghs_readOnlyTokenForTheJob98765432',
      with: {
        target: 'tf:edge',
        playbook: 'site.yml',
        args: '--diff',
        'fleet-private-key': fleetKey,
        'run-secrets': 'GREETING: nightly',
      },
    });
    expect(result.code, describeRun(result)).toBe(0);
    expect(result.outputs).toMatchObject({ state: 'converged', hosts: '1' });
    expect(await host.readFile('/tmp/exocomp-configured-web')).toContain('greeting=nightly');
  });

  it('converge fails closed on an inventory that was never applied', async () => {
    const result = await fx.run('converge', { runId: RUN + 4, with: { target: 'tf:nowhere', playbook: 'site.yml' } });
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/inventory tf:nowhere is not registered/);
  });
});
