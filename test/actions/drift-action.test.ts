/**
 * Issue 12 acceptance, the drift action as the runner runs it: a host changed
 * behind exocomp's back and a plan with one change open the sticky "drift"
 * issue (GitHub double, checked against the OpenAPI description); after an
 * apply and a converge (a second provision run) the next check is clean and
 * closes it with a comment. Real sshd host, real ansible-core, real git over
 * smart HTTP, the tofu stand-in.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DRIFT_ISSUE_LABEL, driftIssueMarker } from '../../src/domain/drift-issue.js';
import { createLoopbackHost, type LoopbackHost } from '../support/loopback-host.js';
import { standinPath } from '../support/tofu-standin.js';
import { BOT, chainInputs, createActionFixture, describeRun, WORKSPACE_DIR, type ActionFixture } from './helpers.js';
import { motdPlaybook } from '../support/plays.js';

describe('the drift action and the sticky drift issue', () => {
  let fx: ActionFixture;
  let host: LoopbackHost;
  const setInventory = (extra: Record<string, unknown> = {}) =>
    writeFile(
      join(fx.workspace, 'exocomp.auto.tfvars.json'),
      JSON.stringify({
        ansible_inventory: {
          all: {
            hosts: { web1: { ansible_host: host.address, ansible_port: host.port, ansible_user: 'root', ...extra } },
          },
        },
      }),
    );
  const provision = async (runId: number) => {
    const result = await fx.run('provision', { runId, with: await chainInputs(fx, { playbook: 'drift-site.yml' }) });
    expect(result.code, describeRun(result)).toBe(0);
  };
  const drift = async (runId: number) =>
    fx.run('drift', {
      runId,
      job: 'drift',
      with: {
        workspace: WORKSPACE_DIR,
        playbook: 'drift-site.yml',
        'workspace-name': 'edge',
        'tofu-binary': standinPath,
        'fleet-private-key': (await chainInputs(fx))['fleet-private-key'] as string,
      },
    });

  beforeAll(async () => {
    fx = await createActionFixture('edge');
    host = await createLoopbackHost({ rootAuthorizedKey: fx.bootstrap.publicKey });
    await host.start();
    await writeFile(join(fx.checkout, 'drift-site.yml'), motdPlaybook());
    await setInventory();
    await provision(7001);
  });

  afterAll(async () => {
    await host?.destroy();
    await fx?.cleanup();
  });

  it('opens the issue while drift exists, and closes it with a comment once a check is clean', async () => {
    expect(await host.exec('echo tampered > /etc/motd-exocomp')).toMatchObject({ code: 0 });
    await setInventory({ rack: 'b2' });

    const found = await drift(7002);
    expect(found.code, describeRun(found)).toBe(0);
    expect(found.outputs.verdict).toBe('drift');
    expect(found.outputs['exit-code']).toBe('3');
    expect(found.summary).toContain('terraform_data.hosts');
    expect(found.summary).toContain('-tampered');
    const number = Number(found.outputs.issue);
    const issue = fx.double.state.issues[number];
    expect(issue).toMatchObject({ state: 'open', author: BOT, labels: [DRIFT_ISSUE_LABEL], title: 'Drift in tf:edge' });
    expect(issue?.body?.startsWith(driftIssueMarker('edge'))).toBe(true);
    expect(issue?.body).toContain('Write the motd');
    expect(fx.double.requestsTo('POST /repos/{owner}/{repo}/issues')).toHaveLength(1);

    // The apply and the converge: a second provision run of the changed workspace.
    await provision(7003);
    const clean = await drift(7004);
    expect(clean.code, describeRun(clean)).toBe(0);
    expect(clean.outputs.verdict).toBe('clean');
    expect(clean.summary.trim().split('\n')).toHaveLength(1);
    expect(fx.double.state.issues[number]).toMatchObject({ state: 'closed', stateReason: 'completed' });
    expect(fx.double.commentsOn(number).map((c) => c.body)).toEqual([expect.stringContaining('No drift any more')]);
    // Both checks are in the ledger.
    const history = JSON.parse((await fx.ledgerFile('drift/edge.json')) ?? '{}') as {
      runs: Array<{ verdict: string; runUrl: string }>;
    };
    expect(history.runs.map((r) => r.verdict)).toEqual(['drift', 'clean']);
  });
});
