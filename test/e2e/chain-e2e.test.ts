/**
 * The provision chain end to end (issue 3, acceptance 1–3, 9–11): real sshd
 * hosts, real ansible-core, real git, the real OpenTofu/Terraform on PATH on a
 * workspace of terraform_data hosts by for_each (issue 36, item 1). The db host
 * boots only once the apply is done, so the same chain shows the wait really
 * waits. Then the same workspace replaces web (a new image), destroys db and
 * control (their keys removed) and renames its balancer (a moved block): the
 * plan view names each host's fate, and the approved apply retires db's pin
 * (issue 36, acceptance 1).
 */
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProcess } from '../../src/adapters/process.js';
import type { PlanView } from '../../src/domain/plan-view.js';
import { LEDGER_PATHS } from '../../src/ledger/records.js';
import { motdPlaybook } from '../support/plays.js';
import {
  createChainFixture,
  sshHostVars,
  workflowIdFrom,
  type ChainFixture,
  type CliResult,
} from '../support/chain-fixture.js';
import { isPortOpen } from '../support/addresses.js';
import { createLoopbackHost, type LoopbackHost } from '../support/loopback-host.js';
import { describeWithRealTofu } from '../support/real-tofu.js';
import { invocationsOf, readStandinLog } from '../support/tofu-standin.js';
import { waitFor } from '../support/time.js';

const sitePlaybook = new URL('../fixtures/playbooks/site.yml', import.meta.url).pathname;

describeWithRealTofu('provision run: the four steps on two SSH hosts and a local one', () => {
  let fx: ChainFixture;
  let web: LoopbackHost;
  let db: LoopbackHost;
  let localMarkers: string;
  let dumpFile: string;
  let result: CliResult;
  let dbClosedWhenWaitBegan: boolean;
  const sealKey = 'e2e-seal-key-0123456789abcdef';
  const runSecret = 'run secret with spaces, "quotes" and $dollar';
  const inventory = (sshHosts: Record<string, unknown>) => ({
    all: {
      hosts: {
        ...sshHosts,
        control: {
          ansible_connection: 'local',
          marker_dir: localMarkers,
          ansible_python_interpreter: '/usr/bin/python3',
        },
      },
      vars: { dump_file: dumpFile },
    },
  });

  beforeAll(async () => {
    fx = await createChainFixture('hosts', { tofu: 'real' });
    web = await createLoopbackHost({ rootAuthorizedKey: fx.bootstrap.publicKey, port: 22 });
    db = await createLoopbackHost({ rootAuthorizedKey: fx.bootstrap.publicKey, port: 2222, startDelayMs: 3000 });
    await web.start();
    localMarkers = await mkdtemp(join(tmpdir(), 'exocomp-local-'));
    dumpFile = join(localMarkers, 'control-dump.txt');
    await fx.setInventory(inventory({ web: sshHostVars(web), db: sshHostVars(db) }));
    await writeFile(join(fx.dir, 'secrets.yml'), `GREETING: ${JSON.stringify(runSecret)}\n`);
    await cp(sitePlaybook, join(fx.dir, 'site.yml'));
    const run = fx.spawnCli(
      [
        'provision',
        'run',
        fx.workspace,
        'site.yml',
        ...fx.keys,
        '--workspace-name',
        'edge',
        '--ssh-wait',
        '60s',
        '--run-secrets',
        'secrets.yml',
        '--seal-key',
        sealKey,
      ],
      {
        env: {
          GITHUB_TOKEN: 'ghs_callertoken123456',
          TF_VAR_leak: 'tf-var-value',
          AWS_SECRET_ACCESS_KEY: 'aws-secret-value-xyz',
        },
      },
    );
    // The db host boots only once the apply is done, and its sshd comes up 3 s later: the wait has something real to wait for.
    await waitFor(
      'the apply to finish',
      async () => invocationsOf(await readStandinLog(fx.standinLog), 'output').length > 0,
      { gaveUp: () => (run.child.exitCode === null ? undefined : `the CLI exited ${run.child.exitCode}`) },
    );
    await db.start();
    dbClosedWhenWaitBegan = !(await isPortOpen(db.address, db.port));
    result = await run.done;
  });

  afterAll(async () => {
    await web?.destroy();
    await db?.destroy();
    await fx?.cleanup();
    await rm(localMarkers, { recursive: true, force: true });
  });

  it('succeeds with every step recorded', async () => {
    if (process.env.EXOCOMP_E2E_SHOW) console.log(result.stdout, result.stderr);
    expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(0);
    expect(result.stderr).toMatch(/\[1\/4\] apply … .* ✓/);
    expect(result.stderr).toMatch(/\[2\/4\] ssh-wait … .* ✓/);
    expect(result.stdout).toMatch(/workflow\s+edge-[0-9a-f]+\s+provisioned/);
    const id = workflowIdFrom(result);
    const record = JSON.parse((await fx.ledgerFile(`workflows/${id}.json`))!);
    expect(record.steps.map((s: { state: string }) => s.state)).toEqual([
      'succeeded',
      'succeeded',
      'succeeded',
      'succeeded',
    ]);
    expect(record.steps[0].detail).toMatch(/captured \d+ output\(s\) to inventory .* naming 3 host\(s\)/);
  });

  it('waits for a host whose sshd starts 3 s after the apply', () => {
    expect(dbClosedWhenWaitBegan).toBe(true);
    expect(result.stderr).toMatch(/db answered after/);
  });

  it('writes its workflow once per step: created with apply running, then each success starting the next step, the capture with apply', async () => {
    const id = workflowIdFrom(result);
    const log = await runProcess('git', [
      '--git-dir',
      fx.ledger,
      'log',
      '--reverse',
      '--format=%s',
      `exocomp-ledger-records/workflows/${id}.json`,
    ]);
    const holder = /apply running \((local:[^)]+)\)/.exec(log.stdout)?.[1];
    expect(holder).toBeDefined();
    // A lease's heartbeat is written only while a step outlasts HEARTBEAT_EVERY_MS (a loaded machine): not a transition.
    const transitions = log.stdout
      .trim()
      .split('\n')
      .filter((line) => !line.endsWith(' heartbeat'));
    expect(transitions).toEqual([
      `${id}: created for edge (site.yml); apply running (${holder})`,
      // The capture of tf:edge is in the same commit (on the inventory's branch too).
      `${id}: apply succeeded; ssh-wait running (${holder}); tf:edge: capture 1 output(s) naming 3 host(s); provenance of the apply`,
      `${id}: ssh-wait succeeded; onboard running (${holder})`,
      `${id}: onboard succeeded; configure running (${holder})`,
      `${id}: configure succeeded`,
    ]);
  });

  it('pins every host before the onboarding play, [host]:port for non-22', async () => {
    const pins = (await fx.ledgerFile('known_hosts'))!;
    expect(pins).toContain(`${web.address} ${await web.hostPublicKey()}`);
    expect(pins).toContain(`[${db.address}]:2222 ${await db.hostPublicKey()}`);
    const messages = await fx.ledgerMessages();
    const pinned = messages.findIndex((m) => m.startsWith('known_hosts: pin'));
    const onboarded = messages.findIndex((m) => /: onboard succeeded(;|$)/.test(m));
    expect(pinned).toBeGreaterThan(-1);
    expect(pinned).toBeLessThan(onboarded);
    expect(result.stderr.indexOf('pinned host keys')).toBeLessThan(result.stderr.indexOf('onboarding play'));
  });

  it('installs the fleet key for the fleet user, who can log in with it', async () => {
    for (const host of [web, db]) {
      const authorized = await host.readFile('/home/exocomp/.ssh/authorized_keys');
      expect(authorized).toContain(fx.fleet.publicKey.split(' ').slice(0, 2).join(' '));
      const known = join(fx.dir, `known-${host.id}`);
      await writeFile(known, `${host.knownHostsName} ${await host.hostPublicKey()}\n`);
      const login = await runProcess('ssh', [
        '-i',
        fx.fleet.privateKeyPath,
        '-p',
        String(host.port),
        '-o',
        `UserKnownHostsFile=${known}`,
        '-o',
        'StrictHostKeyChecking=yes',
        '-o',
        'BatchMode=yes',
        '-o',
        'IdentitiesOnly=yes',
        `exocomp@${host.address}`,
        'id -un',
      ]);
      expect(login.stdout.trim(), login.stderr).toBe('exocomp');
    }
  });

  it('ran the configure play on all three hosts, as the fleet user with sudo', async () => {
    for (const host of [web, db]) {
      const marker = await host.readFile(`/tmp/exocomp-configured-${host === web ? 'web' : 'db'}`);
      expect(marker).toContain('user=exocomp');
      expect(marker).toContain('sudo_uid=0');
    }
    const local = await readFile(join(localMarkers, 'exocomp-configured-control'), 'utf8');
    expect(local).toContain('sudo_uid=0');
  });

  it('hands sealed outputs and run-secrets to the play intact', async () => {
    const marker = (await web.readFile('/tmp/exocomp-configured-web'))!;
    expect(marker).toContain(`greeting=${runSecret}`);
    expect(marker).toMatch(/db_password=\S+/);
  });

  it("keeps the seal key, the caller's tokens, TF_* and cloud credentials out of the play; no tfstate in its cwd", async () => {
    const dump = await readFile(dumpFile, 'utf8');
    for (const leaked of [
      sealKey,
      'ghs_callertoken123456',
      'tf-var-value',
      'aws-secret-value-xyz',
      'GITHUB_TOKEN',
      'TF_VAR_leak',
      'EXOCOMP_SEAL_KEY',
    ]) {
      expect(dump).not.toContain(leaked);
    }
    const cwd = dump.split('---cwd---')[1] ?? '';
    expect(cwd).not.toMatch(/tfstate|tfplan/);
  });

  it('never writes a sensitive value in clear: not in the output, not in any ledger commit', async () => {
    const db_password = JSON.parse(await readFile(join(fx.workspace, 'terraform.tfstate'), 'utf8')).outputs.db_password
      .value as string;
    expect(db_password.length).toBeGreaterThan(4);
    expect(result.stdout + result.stderr).not.toContain(db_password);
    expect(result.stdout + result.stderr).not.toContain(sealKey);
    const all = await runProcess('git', ['--git-dir', fx.ledger, 'log', '-p', '--all', '--format=%H %s']);
    expect(all.stdout.length).toBeGreaterThan(1000);
    for (const secret of [db_password, sealKey, runSecret]) expect(all.stdout).not.toContain(secret);
  });

  describe('then web replaced (a new image), db and control destroyed (their keys removed), the balancer renamed (moved)', () => {
    let planned: CliResult;
    let view: PlanView;
    let dbPin: string;

    beforeAll(async () => {
      dbPin = `[${db.address}]:2222 ${await db.hostPublicKey()}`;
      // Only web stays: the control host leaves too, and a play whose check-mode preview is the same each run (site.yml
      // dumps this run's environment), since the apply re-checks the approved preview.
      await fx.setInventory({ all: { hosts: { web: { ...sshHostVars(web), image: 'v2' } } } });
      await writeFile(join(fx.dir, 'motd.yml'), motdPlaybook());
      const main = join(fx.workspace, 'main.tf.json');
      const config = JSON.parse(await readFile(main, 'utf8'));
      config.resource.terraform_data.front = config.resource.terraform_data.balancer;
      delete config.resource.terraform_data.balancer;
      config.moved.push({ from: 'terraform_data.balancer', to: 'terraform_data.front' });
      await writeFile(main, JSON.stringify(config));
      planned = await fx.cli([
        'provision',
        'run',
        fx.workspace,
        'motd.yml',
        ...fx.keys,
        '--workspace-name',
        'edge',
        '--require-approval',
        '--allow-destroy',
        '--seal-key',
        sealKey,
      ]);
      view = JSON.parse((await fx.ledgerFile(LEDGER_PATHS.planView(workflowIdFrom(planned))))!) as PlanView;
    });

    it('the plan view names the replaced and the destroyed host, their resources and the pins retired', () => {
      expect(planned.code, planned.stderr).toBe(0);
      expect(view.hosts).toEqual([
        {
          host: 'web',
          fate: 'replaced',
          resources: ['terraform_data.host["web"]'],
          pinsRetired: [`${web.address}`],
        },
        {
          host: 'control',
          fate: 'destroyed',
          resources: ['terraform_data.host["control"]'],
          pinsRetired: [],
        },
        {
          host: 'db',
          fate: 'destroyed',
          resources: ['terraform_data.host["db"]'],
          pinsRetired: [`[${db.address}]:2222`],
        },
      ]);
      expect(view.resources).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ address: 'terraform_data.front', action: 'replace' }),
          expect.objectContaining({
            address: 'terraform_data.host["web"]',
            action: 'replace',
            replacePaths: ['triggers_replace'],
          }),
          expect.objectContaining({
            address: 'terraform_data.host["db"]',
            action: 'destroy',
            reason: 'delete_because_each_key',
          }),
        ]),
      );
      expect(view.resources.some((r) => r.address.startsWith('module.site'))).toBe(false);
    });

    it('approved and resumed: applies once more, retires db’s pin and keeps web’s', async () => {
      const id = workflowIdFrom(planned);
      const approved = await fx.cli(['approval', 'decide', id, '--approve', ...fx.ledgerArgs]);
      expect(approved.code, approved.stderr).toBe(0);
      const resumed = await fx.cli(['provision', 'resume', id, ...fx.keys, '--seal-key', sealKey]);
      expect(resumed.code, `${resumed.stdout}\n${resumed.stderr}`).toBe(0);
      expect(await fx.applyCount()).toBe(2);
      const pins = (await fx.ledgerFile('known_hosts'))!;
      expect(pins).not.toContain(dbPin);
      expect(pins).toContain(`${web.address} ${await web.hostPublicKey()}`);
      expect(await web.readFile('/etc/motd-exocomp')).toBe('managed by exocomp\n');
      const state = JSON.parse(await readFile(join(fx.workspace, 'terraform.tfstate'), 'utf8'));
      expect(state.resources.map((r: { type: string; name: string; module?: string }) => r.name).sort()).toEqual([
        'front',
        'host',
        'site',
      ]);
    });
  });
});
