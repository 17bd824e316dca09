/**
 * Crash and resume end to end (issue 3, acceptance 6; docs/architecture.md
 * "The chain" and "Leases"): `kill -9` of the CLI in step 3 and right after
 * step 1's apply returned, then `provision resume`; a second runner against a
 * live lease is refused. Real sshd hosts, ansible-core and git; the OpenTofu stand-in.
 */
import { spawn } from 'node:child_process';
import { cp, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  cliPath,
  createChainFixture,
  sshHostVars,
  type ChainFixture,
  type CliResult,
} from '../support/chain-fixture.js';
import { createLoopbackHost, type LoopbackHost } from '../support/loopback-host.js';
import { invocationsOf, readStandinLog } from '../support/tofu-standin.js';
import { scaled } from '../support/time.js';

const sitePlaybook = new URL('../fixtures/playbooks/site.yml', import.meta.url).pathname;
const seededOnboardPlaybook = new URL('../../playbooks/onboard.yml', import.meta.url).pathname;
const HELD = '/tmp/exocomp-onboard-held';
const RELEASE = '/tmp/exocomp-onboard-release';

/**
 * The seeded onboarding, then a play that holds step 3 open on its first run
 * (until the test creates RELEASE on the host, bounded at 2 minutes); later
 * runs pass straight through.
 */
const holdingOnboardPlaybook = `- ansible.builtin.import_playbook: ${JSON.stringify(seededOnboardPlaybook)}
- name: Hold step 3 open the first time
  hosts: all
  gather_facts: false
  tasks:
    - ansible.builtin.shell: |
        [ -e ${HELD} ] && exit 0
        touch ${HELD}
        i=0
        while [ ! -e ${RELEASE} ] && [ "$i" -lt 600 ]; do sleep 0.2; i=$((i + 1)); done
      changed_when: false
`;

interface StepRecord {
  name: string;
  state: string;
  attempts: number;
  startedAt?: string;
  lease?: { holder: string; heartbeatAt: string; ttlMs: number; origin: { kind: string; pid?: number } };
}

interface WorkflowRecord {
  state: string;
  steps: StepRecord[];
}

interface RunningCli {
  pid: number;
  done: Promise<CliResult>;
  /** SIGKILL of the CLI process alone, as `kill -9 <pid>` does: its children live on. */
  kill9(): Promise<void>;
  /** Ends whatever the CLI left behind (ansible-playbook, ssh, tofu), by its process group. */
  endOrphans(): void;
  /** Its output once it has exited, else undefined. */
  ended(): string | undefined;
}

/**
 * Starts the CLI bundle like fx.spawnCli, but as the leader of its own process
 * group, so the children a kill -9 orphans can be ended after the test.
 */
function startCli(fx: ChainFixture, args: string[]): RunningCli {
  const child = spawn(process.execPath, [cliPath, ...args], {
    cwd: fx.dir,
    env: fx.env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const done = new Promise<CliResult>((resolve) =>
    child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 137 : 1), stdout, stderr })),
  );
  const pid = child.pid!;
  return {
    pid,
    done,
    async kill9() {
      if (child.exitCode !== null || child.signalCode !== null)
        throw new Error(`the CLI already ended:\n${stdout}\n${stderr}`);
      // 'exit', not 'close': the orphans keep the CLI's pipes open.
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    },
    ended: () =>
      child.exitCode !== null || child.signalCode !== null
        ? `exit ${child.exitCode ?? child.signalCode}\n${stdout}\n${stderr}`
        : undefined,
    endOrphans() {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
      }
    },
  };
}

/** Polls until probe holds; fails early when the CLI it watches ended. */
async function until(what: string, cli: RunningCli, probe: () => Promise<boolean>, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + scaled(timeoutMs);
  while (Date.now() < deadline) {
    if (await probe()) return;
    const ended = cli.ended();
    if (ended !== undefined) throw new Error(`the CLI ended before ${what}:\n${ended}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function workflowRecord(fx: ChainFixture, id: string): Promise<WorkflowRecord> {
  const text = await fx.ledgerFile(`workflows/${id}.json`);
  if (text === undefined) throw new Error(`workflow ${id} is not in the ledger`);
  return JSON.parse(text) as WorkflowRecord;
}

function stepOf(record: WorkflowRecord, name: string): StepRecord {
  const step = record.steps.find((s) => s.name === name);
  if (!step) throw new Error(`no step ${name}`);
  return step;
}

function output(result: CliResult): string {
  return `exit ${result.code}\n${result.stdout}\n${result.stderr}`;
}

describe('provision resume after a crash', () => {
  let fx: ChainFixture;
  let host: LoopbackHost;
  let running: RunningCli | undefined;
  const id = 'edge-crash';

  beforeEach(async () => {
    fx = await createChainFixture('edge');
    await cp(sitePlaybook, join(fx.dir, 'site.yml'));
    await writeFile(join(fx.dir, 'hold-onboard.yml'), holdingOnboardPlaybook);
    host = await createLoopbackHost({ rootAuthorizedKey: fx.bootstrap.publicKey, port: 2210 });
    await host.start();
    await fx.setInventory({ all: { hosts: { web: sshHostVars(host) } } });
  });

  afterEach(async () => {
    running?.endOrphans();
    running = undefined;
    await host?.destroy();
    await fx?.cleanup();
  });

  const run = () =>
    startCli(fx, [
      'provision',
      'run',
      fx.workspace,
      'site.yml',
      ...fx.keys,
      '--workspace-name',
      'edge',
      '--id',
      id,
      '--ssh-wait',
      '60s',
      '--onboard-playbook',
      'hold-onboard.yml',
    ]);
  const resume = () => fx.cli(['provision', 'resume', id, ...fx.keys]);

  it('kill -9 during step 3: resume runs step 3 again at once, without waiting out the lease, and applies once', async () => {
    running = run();
    // The onboarding play is on the host, holding: the CLI is inside step 3.
    await until('the onboarding play to hold', running, async () => (await host.readFile(HELD)) !== undefined);
    await running.kill9();

    const killed = await workflowRecord(fx, id);
    const lease = stepOf(killed, 'onboard').lease;
    expect(stepOf(killed, 'onboard').state).toBe('running');
    expect(lease?.origin).toMatchObject({ kind: 'local', pid: running.pid });

    const resumed = await resume();
    expect(resumed.code, output(resumed)).toBe(0);
    const record = await workflowRecord(fx, id);
    expect(record.state).toBe('provisioned');
    expect(record.steps.map((s) => [s.name, s.state, s.attempts])).toEqual([
      ['apply', 'succeeded', 1],
      ['ssh-wait', 'succeeded', 1],
      ['onboard', 'succeeded', 2],
      ['configure', 'succeeded', 1],
    ]);
    // Taken over while the dead holder's lease had not yet expired: judged by its pid, not by the TTL.
    expect(Date.parse(stepOf(record, 'onboard').startedAt!)).toBeLessThan(
      Date.parse(lease!.heartbeatAt) + lease!.ttlMs,
    );
    expect(await fx.applyCount()).toBe(1);
    // Armed twice: by the success of ssh-wait ("ssh-wait succeeded; onboard running") and by the resume.
    expect(
      (await fx.ledgerMessages()).filter((m) => m.startsWith(`${id}: `) && /(: |; )onboard running \(/.test(m)),
    ).toHaveLength(2);
    expect(await host.readFile('/home/exocomp/.ssh/authorized_keys')).toContain(fx.fleet.publicKey.split(' ')[1]);
    expect(await host.readFile('/tmp/exocomp-configured-web')).toContain('user=exocomp');
  });

  it('kill -9 right after the apply returned: resume re-plans, applies nothing more, and completes', async () => {
    running = run();
    // `output -json` follows the apply: once it is invoked, tofu apply has returned and the state is written.
    await until(
      'the output invocation after the apply',
      running,
      async () => invocationsOf(await readStandinLog(fx.standinLog), 'output').length > 0,
    );
    await running.kill9();

    const killed = await workflowRecord(fx, id);
    expect(stepOf(killed, 'apply').state, 'the kill must land before the apply step is recorded').toBe('running');
    expect(await fx.applyCount()).toBe(1);

    await host.exec(`touch ${RELEASE}`);
    const resumed = await resume();
    expect(resumed.code, output(resumed)).toBe(0);
    const record = await workflowRecord(fx, id);
    expect(record.state).toBe('provisioned');
    expect(record.steps.map((s) => [s.name, s.state, s.attempts])).toEqual([
      ['apply', 'succeeded', 2],
      ['ssh-wait', 'succeeded', 1],
      ['onboard', 'succeeded', 1],
      ['configure', 'succeeded', 1],
    ]);
    const log = await readStandinLog(fx.standinLog);
    expect(invocationsOf(log, 'apply')).toHaveLength(1);
    // The resumed apply step planned again (and found nothing to apply).
    expect(invocationsOf(log, 'plan')).toHaveLength(2);
    expect(resumed.stderr).toContain('no changes');
  });

  it('refuses a second runner while the first is alive, naming the lease holder; the first completes', async () => {
    running = run();
    await until('the onboarding play to hold', running, async () => (await host.readFile(HELD)) !== undefined);

    // The first runner's heartbeats may land meanwhile; nothing else may.
    const writes = async () => (await fx.ledgerMessages()).filter((m) => !m.endsWith(': onboard heartbeat'));
    const writesBefore = await writes();
    const second = await resume();
    expect(second.code, output(second)).toBe(1);
    expect(second.stderr).toMatch(new RegExp(`step onboard of ${id} is running under local:[^:]+:${running.pid}:`));
    // A refusal writes nothing: no re-arming, no extra attempt.
    expect(await writes()).toEqual(writesBefore);

    await host.exec(`touch ${RELEASE}`);
    const first = await running.done;
    expect(first.code, output(first)).toBe(0);
    const record = await workflowRecord(fx, id);
    expect(record.state).toBe('provisioned');
    expect(record.steps.map((s) => s.attempts)).toEqual([1, 1, 1, 1]);
    expect(await fx.applyCount()).toBe(1);
  });
});
