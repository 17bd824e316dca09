/**
 * Issue 12 acceptance, drift: a real sshd host configured through the chain,
 * then changed behind exocomp's back; the real OpenTofu/Terraform's plan reports
 * a change (issue 36: drift on a real workspace exits 3, then 0 once applied).
 * `exocomp drift` runs the real CLI bundle, real ansible-playbook in check mode
 * and real ssh-keyscan.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { DriftReport } from '../../src/domain/drift.js';
import {
  convergeArgs,
  createChainFixture,
  driftArgs,
  driftReportOf,
  sshHostVars,
  type ChainFixture,
  type CliResult,
} from '../support/chain-fixture.js';
import { describeWithRealTofu } from '../support/real-tofu.js';
import { createLoopbackHost, type LoopbackHost } from '../support/loopback-host.js';
import { motdPlaybook } from '../support/plays.js';

describeWithRealTofu('exocomp drift', () => {
  let fx: ChainFixture;
  let web: LoopbackHost;
  const inventory = (extra: Record<string, unknown> = {}) => ({
    all: { hosts: { web1: { ...sshHostVars(web), ...extra } } },
  });

  const drift = async (extra: string[] = []): Promise<CliResult & { report: DriftReport }> => {
    const result = await fx.cli(driftArgs(fx, ...extra));
    return { ...result, report: driftReportOf(result) };
  };

  beforeAll(async () => {
    fx = await createChainFixture('edge', { tofu: 'real' });
    web = await createLoopbackHost({ rootAuthorizedKey: fx.bootstrap.publicKey });
    await web.start();
    await writeFile(join(fx.dir, 'site.yml'), motdPlaybook());
    await fx.setInventory(inventory());
    const run = await fx.cli([
      'provision',
      'run',
      fx.workspace,
      'site.yml',
      ...fx.keys,
      '--workspace-name',
      'edge',
      '--ssh-wait',
      '60s',
    ]);
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
  });

  afterAll(async () => {
    await web?.destroy();
    await fx?.cleanup();
  });

  it('exits 3 naming the resource, the host, the task and the diff; 0 after a converge and an apply', async () => {
    expect(await web.exec('echo tampered > /etc/motd-exocomp')).toMatchObject({ code: 0 });
    await fx.setInventory(inventory({ rack: 'b2' }));
    const pinsBefore = await fx.ledgerFile('known_hosts');

    const found = await drift(['--summary-file', join(fx.dir, 'summary.md')]);
    expect(found.code, found.stderr).toBe(3);
    expect(found.report.infrastructure).toMatchObject({
      ok: true,
      value: { resources: [{ address: 'terraform_data.hosts', action: 'update' }] },
    });
    const config = found.report.configuration;
    if (!config.ok) throw new Error(config.error);
    expect(config.value.changed).toHaveLength(1);
    expect(config.value.changed[0]?.host).toBe('web1');
    expect(config.value.changed[0]?.tasks[0]?.task).toBe('Write the motd');
    expect(config.value.changed[0]?.tasks[0]?.diff).toContain('-tampered');
    expect(config.value.changed[0]?.tasks[0]?.diff).toContain('+managed by exocomp');
    // Check mode changed nothing on the host, nothing was applied, no pin moved.
    expect(await web.readFile('/etc/motd-exocomp')).toBe('tampered\n');
    expect(await fx.applyCount()).toBe(1);
    expect(await fx.ledgerFile('known_hosts')).toBe(pinsBefore);
    const summary = await import('node:fs/promises').then((fs) => fs.readFile(join(fx.dir, 'summary.md'), 'utf8'));
    expect(summary).toContain('terraform_data.hosts');
    expect(summary).toContain('-tampered');

    const converge = await fx.cli(convergeArgs(fx));
    expect(converge.code, converge.stderr).toBe(0);
    const apply = await fx.cli(['workspace', 'apply', fx.workspace, '--workspace-name', 'edge', ...fx.common]);
    expect(apply.code, apply.stderr).toBe(0);

    const clean = await fx.cli([
      'drift',
      fx.workspace,
      '--playbook',
      'site.yml',
      ...fx.common,
      '--fleet-key',
      fx.fleet.privateKeyPath,
    ]);
    expect(clean.code, clean.stderr).toBe(0);
    expect(clean.stdout.trim()).toBe(
      'no drift in tf:edge: the plan has no changes and the play would change nothing on 1 host(s)',
    );

    const history = JSON.parse((await fx.ledgerFile('drift/edge.json')) ?? '{}') as {
      runs: Array<{ verdict: string }>;
    };
    expect(history.runs.map((r) => r.verdict)).toEqual(['drift', 'clean']);
    const status = await fx.cli(['provision', 'status', ...fx.ledgerArgs]);
    expect(status.stdout).toMatch(/drift checks of tf:edge[\s\S]*clean[\s\S]*drift/);
  });

  it('reports a changed host key as a mismatch and re-pins nothing', async () => {
    const pinsBefore = await fx.ledgerFile('known_hosts');
    await web.rekey();
    const found = await drift();
    expect(found.code, found.stderr).toBe(3);
    const config = found.report.configuration;
    if (!config.ok) throw new Error(config.error);
    expect(config.value.keyMismatches.map((m) => m.host)).toEqual(['web1']);
    expect(config.value.changed).toEqual([]);
    expect(await fx.ledgerFile('known_hosts')).toBe(pinsBefore);
  });
});
