/**
 * Issue 12 acceptance, the preview before approval: a plan of a workspace
 * with one existing host records the check-mode configuration diff of that
 * host beside the infrastructure plan, each with its fingerprint; changing the
 * playbook after the approval makes the apply refuse it. The real
 * OpenTofu/Terraform on PATH plans and applies (issue 36).
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createChainFixture, sshHostVars, workflowIdFrom, type ChainFixture } from '../support/chain-fixture.js';
import { describeWithRealTofu } from '../support/real-tofu.js';
import { createLoopbackHost, type LoopbackHost } from '../support/loopback-host.js';
import { motdPlaybook } from '../support/plays.js';

describeWithRealTofu('plan preview: infrastructure and configuration, both bound by the approval', () => {
  let fx: ChainFixture;
  let web: LoopbackHost;

  beforeAll(async () => {
    fx = await createChainFixture('edge', { tofu: 'real' });
    web = await createLoopbackHost({ rootAuthorizedKey: fx.bootstrap.publicKey });
    await web.start();
    await writeFile(join(fx.dir, 'site.yml'), motdPlaybook());
    await fx.setInventory({ all: { hosts: { web1: sshHostVars(web) } } });
    const first = await fx.cli(['provision', 'run', fx.workspace, 'site.yml', ...fx.keys, '--ssh-wait', '60s']);
    expect(first.code, `${first.stdout}\n${first.stderr}`).toBe(0);
  });

  afterAll(async () => {
    await web?.destroy();
    await fx?.cleanup();
  });

  it('shows the host’s configuration diff beside the plan, and refuses the apply once the playbook changed', async () => {
    expect(await web.exec('echo tampered > /etc/motd-exocomp')).toMatchObject({ code: 0 });
    await fx.setInventory({ all: { hosts: { web1: { ...sshHostVars(web), rack: 'b2' } } } });
    const planned = await fx.cli(['provision', 'run', fx.workspace, 'site.yml', ...fx.keys, '--require-approval']);
    expect(planned.code, planned.stderr).toBe(0);
    const id = workflowIdFrom(planned);
    const record = JSON.parse((await fx.ledgerFile(`workflows/${id}.json`)) ?? '{}') as {
      approval: Record<string, string>;
    };
    expect(record.approval.planSummary).toBe('+0 ~1 -0');
    expect(record.approval.configFingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect(record.approval.configPreview).toContain('web1:');
    expect(record.approval.configPreview).toContain('~ Write the motd');
    expect(record.approval.configPreview).toContain('-tampered');
    expect(record.approval.configPreview).toContain('+managed by exocomp');
    const status = await fx.cli(['provision', 'status', id, ...fx.ledgerArgs]);
    expect(status.stdout).toMatch(/plan\s+\+0 ~1 -0 · fingerprint [0-9a-f]{16}/);
    expect(status.stdout).toMatch(/configuration check-mode preview · fingerprint [0-9a-f]{16}/);
    expect(status.stdout).toContain('-tampered');
    // Check mode changed nothing on the host.
    expect(await web.readFile('/etc/motd-exocomp')).toBe('tampered\n');

    const approved = await fx.cli(['approval', 'decide', id, '--approve', '--by', 'reviewer', ...fx.ledgerArgs]);
    expect(approved.code, approved.stderr).toBe(0);
    await writeFile(join(fx.dir, 'site.yml'), motdPlaybook('managed by exocomp, v2'));
    const refused = await fx.cli(['provision', 'resume', id, ...fx.keys]);
    expect(refused.code).toBe(1);
    expect(`${refused.stdout}\n${refused.stderr}`).toContain('configuration changed since approval');
    expect(await fx.applyCount()).toBe(1);
    expect(await readFile(join(fx.dir, 'site.yml'), 'utf8')).toContain('v2');

    // The approved playbook back: the preview comes out as approved (check mode is repeatable), so the apply goes ahead.
    await writeFile(join(fx.dir, 'site.yml'), motdPlaybook());
    const resumed = await fx.cli(['provision', 'resume', id, ...fx.keys]);
    expect(resumed.code, `${resumed.stdout}\n${resumed.stderr}`).toBe(0);
    expect(await fx.applyCount()).toBe(2);
    expect(await web.readFile('/etc/motd-exocomp')).toBe('managed by exocomp\n');
  });
});
