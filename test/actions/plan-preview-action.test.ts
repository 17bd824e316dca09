/**
 * Issue 12 item 2 through the plan action as the runner runs it: with the
 * fleet key, a pull request's plan shows the configure playbook's check-mode
 * diff on the host tf:edge already names beside the infrastructure plan — in
 * the job summary and the sticky comment — both for a plan-only preview (which
 * records nothing) and for a plan recorded for approval (which binds both
 * fingerprints). Real sshd host, real ansible-core, git over smart HTTP, the
 * tofu stand-in, the GitHub double.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { events } from '../support/action-runner.js';
import { createLoopbackHost, type LoopbackHost } from '../support/loopback-host.js';
import { motdPlaybook } from '../support/plays.js';
import { LEDGER_PATHS } from '../../src/ledger/records.js';
import {
  chainInputs,
  createActionFixture,
  describeRun,
  planInputs,
  REPOSITORY,
  type ActionFixture,
} from './helpers.js';

const PR = 12;

describe('the plan action with the fleet key', () => {
  let fx: ActionFixture;
  let host: LoopbackHost;
  let fleetKey: string;
  const comments = () => fx.double.commentsOn(PR).map((c) => c.body);

  beforeAll(async () => {
    fx = await createActionFixture('edge');
    fx.double.state.issues[PR] = { pullRequest: true };
    host = await createLoopbackHost({ rootAuthorizedKey: fx.bootstrap.publicKey });
    await host.start();
    await writeFile(join(fx.checkout, 'site.yml'), motdPlaybook());
    await writeFile(
      join(fx.workspace, 'exocomp.auto.tfvars.json'),
      JSON.stringify({
        ansible_inventory: {
          all: { hosts: { web1: { ansible_host: host.address, ansible_port: host.port, ansible_user: 'root' } } },
        },
      }),
    );
    const provisioned = await fx.run('provision', { runId: 6001, with: await chainInputs(fx) });
    expect(provisioned.code, describeRun(provisioned)).toBe(0);
    fleetKey = await readFile(fx.fleet.privateKeyPath, 'utf8');
    // The host drifted since: the preview has a diff to show.
    expect(await host.exec('echo tampered > /etc/motd-exocomp')).toMatchObject({ code: 0 });
  });

  afterAll(async () => {
    await host?.destroy();
    await fx?.cleanup();
  });

  it('plan-only: the summary and the sticky comment show the configuration diff beside the plan; nothing is recorded', async () => {
    const ledgerBefore = await fx.ledgerHistory();
    const result = await fx.run('plan', {
      runId: 6002,
      event: events.pullRequest(REPOSITORY, PR, 'alice'),
      with: planInputs({ 'plan-only': 'true', 'fleet-private-key': fleetKey }),
    });
    expect(result.code, describeRun(result)).toBe(0);
    for (const text of [result.summary, comments().join('\n')]) {
      expect(text).toContain('Plan:');
      expect(text).toMatch(/\*\*Configuration\*\* \(check-mode preview\) · fingerprint `[0-9a-f]{16}`/);
      expect(text).toContain('web1');
      expect(text).toContain('-tampered');
      expect(text).toContain('+managed by exocomp');
    }
    expect(await fx.ledgerHistory()).toBe(ledgerBefore);
    // Check mode changed nothing.
    expect(await host.readFile('/etc/motd-exocomp')).toBe('tampered\n');
  });

  it('plan-only without the key: the plan alone, and why there is no configuration half', async () => {
    const result = await fx.run('plan', {
      runId: 6003,
      event: events.pullRequest(REPOSITORY, PR, 'alice'),
      with: planInputs({ 'plan-only': 'true' }),
    });
    expect(result.code, describeRun(result)).toBe(0);
    expect(result.summary).toContain('Plan:');
    expect(result.summary).not.toContain('**Configuration**');
    expect(result.summary).toContain('no fleet key was given');
  });

  it('recorded for approval: the approval binds both fingerprints and the comment shows both halves', async () => {
    const result = await fx.run('plan', {
      runId: 6004,
      event: events.pullRequest(REPOSITORY, PR, 'alice'),
      with: planInputs({ 'fleet-private-key': fleetKey, 'workflow-id': 'edge-preview' }),
    });
    expect(result.code, describeRun(result)).toBe(0);
    expect(result.outputs.state).toBe('awaiting-approval');
    const workflow = JSON.parse((await fx.ledgerFile(LEDGER_PATHS.workflow('edge-preview'))) ?? '{}') as {
      approval: { planFingerprint?: string; configFingerprint?: string; configPreview?: string };
    };
    expect(workflow.approval.planFingerprint).toMatch(/^[0-9a-f]{16,}$/);
    expect(workflow.approval.configFingerprint).toMatch(/^[0-9a-f]{16,}$/);
    expect(workflow.approval.configPreview).toContain('-tampered');
    const comment = comments().find((c) => c.includes('edge-preview')) ?? '';
    expect(comment).toContain(`fingerprint \`${workflow.approval.planFingerprint?.slice(0, 16)}\``);
    expect(comment).toContain(`fingerprint \`${workflow.approval.configFingerprint?.slice(0, 16)}\``);
    expect(comment).toContain('-tampered');
  });
});
