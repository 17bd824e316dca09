/**
 * Ctrl-C (SIGINT) of the CLI during `tofu apply` (issue 10 item 1): tofu gets
 * the signal and stops, the step is recorded as interrupted with its lease
 * released, the CLI exits non-zero, and `provision resume` completes with
 * exactly one more apply. Real sshd host, ansible-core and git; the tofu stand-in.
 */
import { cp } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isProcessAlive } from '../../src/adapters/process.js';
import { createChainFixture, sshHostVars, type ChainFixture, type CliResult } from '../support/chain-fixture.js';
import { createLoopbackHost, type LoopbackHost } from '../support/loopback-host.js';
import { invocationsOf, readStandinLog } from '../support/tofu-standin.js';
import { scaled } from '../support/time.js';

const sitePlaybook = new URL('../fixtures/playbooks/site.yml', import.meta.url).pathname;
const ID = 'edge-ctrl-c';

interface WorkflowRecord {
  state: string;
  failure?: { step: string; kind: string; summary: string };
  steps: Array<{ name: string; state: string; attempts: number; lease?: unknown }>;
}

describe('Ctrl-C of provision run during the apply', () => {
  let fx: ChainFixture;
  let host: LoopbackHost;
  let interrupted: CliResult;
  let record: WorkflowRecord;
  let tofuPid: number;
  let resumed: CliResult;

  beforeAll(async () => {
    fx = await createChainFixture('edge');
    await cp(sitePlaybook, join(fx.dir, 'site.yml'));
    host = await createLoopbackHost({ rootAuthorizedKey: fx.bootstrap.publicKey, port: 2211 });
    await host.start();
    await fx.setInventory({ all: { hosts: { web: sshHostVars(host) } } });
    const { child, done } = fx.spawnCli(
      [
        'provision',
        'run',
        fx.workspace,
        'site.yml',
        ...fx.keys,
        '--workspace-name',
        'edge',
        '--id',
        ID,
        '--ssh-wait',
        '60s',
      ],
      {
        env: { EXOCOMP_TOFU_STANDIN_APPLY_DELAY_MS: '600000' },
      },
    );
    const deadline = Date.now() + scaled(90_000);
    let apply: { pid: number } | undefined;
    while (!apply && Date.now() < deadline && child.exitCode === null) {
      apply = invocationsOf(await readStandinLog(fx.standinLog), 'apply')[0];
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    if (!apply) throw new Error(`tofu apply never started:\n${(await done).stderr}`);
    tofuPid = apply.pid;
    // Let apply reach its wait (it prints "Creating..." first), then press Ctrl-C.
    await new Promise((resolve) => setTimeout(resolve, 300));
    child.kill('SIGINT');
    interrupted = await done;
    record = JSON.parse((await fx.ledgerFile(`workflows/${ID}.json`))!) as WorkflowRecord;
    resumed = await fx.cli(['provision', 'resume', ID, ...fx.keys]);
  });

  afterAll(async () => {
    await host?.destroy();
    await fx?.cleanup();
  });

  it('exits non-zero, with tofu stopped', () => {
    expect(interrupted.code, interrupted.stderr).not.toBe(0);
    expect(interrupted.stderr).toMatch(/interrupted by SIGINT/);
    expect(isProcessAlive(tofuPid)).toBe(false);
  });

  it('records apply as interrupted, the lease released', () => {
    expect(record.state).toBe('provision-failed');
    expect(record.failure).toMatchObject({ step: 'apply', kind: 'interrupted' });
    expect(record.steps.every((s) => s.lease === undefined)).toBe(true);
  });

  it('resumes with exactly one more apply and completes', async () => {
    expect(resumed.code, `${resumed.stdout}\n${resumed.stderr}`).toBe(0);
    const after = JSON.parse((await fx.ledgerFile(`workflows/${ID}.json`))!) as WorkflowRecord;
    expect(after.state).toBe('provisioned');
    expect(after.steps.map((s) => [s.name, s.attempts])).toEqual([
      ['apply', 2],
      ['ssh-wait', 1],
      ['onboard', 1],
      ['configure', 1],
    ]);
    expect(invocationsOf(await readStandinLog(fx.standinLog), 'apply')).toHaveLength(2);
  });
});
