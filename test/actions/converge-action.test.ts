/**
 * The converge action on a provisioned host (issue 10 items 2 and 5).
 *
 * Output of hosts never becomes a workflow command: a host
 * prints `::error::`, `::set-output`, `::add-mask::` and the legacy `##[…]`
 * form during a converge, and the runner emulation (which processes commands
 * as the runner does) shows them as text only — no annotation, no output, no
 * mask. The play uses the yaml result format (a common setting), which puts a
 * host's multi-line output at the start of log lines.
 *
 * Two converges with one concurrency key, started together, never overlap:
 * each holds the ledger lease the CLI's --concurrency-key takes.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cronFireTimes } from '../../src/domain/cron.js';
import { LEDGER_PATHS } from '../../src/ledger/records.js';
import { events, RunnerJob, type ActionResult } from '../support/action-runner.js';
import { commitToLedger } from '../support/ledger-git.js';
import type { LoopbackHost } from '../support/loopback-host.js';
import { SPOOFED_COMMANDS, spoofPlaybook } from '../support/plays.js';
import {
  chainInputs,
  createActionFixture,
  startWebHost,
  describeRun,
  REPOSITORY,
  type ActionFixture,
} from './helpers.js';

const SPOOF = SPOOFED_COMMANDS;

const timedPlaybook = `- hosts: all
  gather_facts: false
  tasks:
    - name: record when this converge ran
      ansible.builtin.shell: "echo start >> /tmp/converge-order; sleep 2; echo end >> /tmp/converge-order"
`;

describe('the converge action', () => {
  let fx: ActionFixture;
  let host: LoopbackHost;
  let job: RunnerJob;
  let chain: ActionResult;
  let converge: ActionResult;

  beforeAll(async () => {
    fx = await createActionFixture('edge');
    host = await startWebHost(fx);
    await writeFile(join(fx.checkout, 'spoof.yml'), spoofPlaybook());
    await writeFile(join(fx.checkout, 'timed.yml'), timedPlaybook);
    job = await RunnerJob.start();
    chain = await fx.run('provision', {
      runId: 7100,
      runnerJob: job,
      with: await chainInputs(fx, { 'ssh-wait': '30s', comment: 'false' }),
    });
    converge = await fx.run('converge', {
      runId: 7100,
      runnerJob: job,
      event: events.schedule(REPOSITORY),
      env: { ANSIBLE_CALLBACK_RESULT_FORMAT: 'yaml' },
      with: {
        target: 'tf:edge',
        playbook: 'spoof.yml',
        'fleet-private-key': await readFile(fx.fleet.privateKeyPath, 'utf8'),
        'bogus-input': 'dropped',
      },
    });
  });

  afterAll(async () => {
    await job?.close();
    await host?.destroy();
    await fx?.cleanup();
  });

  it('provisions, then converges the host with the spoofing play', () => {
    expect(chain.code, describeRun(chain)).toBe(0);
    expect(converge.code, describeRun(converge)).toBe(0);
  });

  it('prints the spoofed lines as text, each at the start of a log line after indentation', () => {
    for (const line of SPOOF) expect(converge.log.split('\n').map((l) => l.trim())).toContain(line);
  });

  it('raises no annotation, sets no output and adds no mask from them', () => {
    expect(converge.annotations.filter((a) => a.message.includes('spoofed'))).toEqual([]);
    expect(converge.outputs.state).toBe('converged');
    expect(converge.outputs).not.toHaveProperty('spoofed');
    expect(converge.masks).not.toContain('converged');
    expect(converge.log).toContain('converged');
  });

  it('keeps our own commands working: the fleet key is masked, the step group is shown', () => {
    expect(converge.masks.length).toBeGreaterThan(0);
    expect(chain.log).toMatch(/##\[group\]1\/4 apply/);
  });

  it('warns about and drops an input the action does not declare, as the runner does', () => {
    expect(converge.annotations).toContainEqual(
      expect.objectContaining({
        level: 'warning',
        message: expect.stringContaining("Unexpected input(s) 'bogus-input'"),
      }),
    );
    expect(converge.env).not.toHaveProperty('INPUT_BOGUS-INPUT');
  });

  it('gives the steps of one job the same RUNNER_TEMP', () => {
    expect(converge.env.RUNNER_TEMP).toBe(chain.env.RUNNER_TEMP);
    expect(converge.env.RUNNER_TEMP).toBe(job.runnerTemp);
  });

  it('a scheduled converge with schedule-name records its fire; the summary and an annotation name the tick that never ran', async () => {
    const cron = '17 3 * * *';
    const ticks = cronFireTimes(cron, new Date(Date.now() - 5 * 86_400_000), new Date());
    const dropped = ticks[1] as Date;
    const fires = ticks.filter((t) => t !== dropped).map((t) => t.toISOString());
    await writeFile(
      join(fx.checkout, 'ping.yml'),
      '- hosts: all\n  gather_facts: false\n  tasks:\n    - ansible.builtin.ping:\n',
    );
    await commitToLedger(
      fx.ledgerRepo,
      {
        [LEDGER_PATHS.scheduleFires('nightly')]:
          `${JSON.stringify({ schemaVersion: 1, name: 'nightly', cron, fires })}\n`,
      },
      'earlier runs',
    );
    const result = await fx.run('converge', {
      runId: 7150,
      event: events.schedule(REPOSITORY, cron),
      with: {
        target: 'tf:edge',
        playbook: 'ping.yml',
        'fleet-private-key': await readFile(fx.fleet.privateKeyPath, 'utf8'),
        'schedule-name': 'nightly',
      },
    });
    expect(result.code, describeRun(result)).toBe(0);
    const line = `schedule nightly ('${cron}' UTC): 1 tick(s) never ran: ${dropped.toISOString()}`;
    expect(result.summary).toContain(line);
    expect(result.annotations).toContainEqual(expect.objectContaining({ level: 'warning', message: line }));
    const recorded = JSON.parse((await fx.ledgerFile(LEDGER_PATHS.scheduleFires('nightly'))) ?? '{}') as {
      fires: string[];
    };
    expect(recorded.fires).toHaveLength(fires.length + 1);
  });

  it('two converges sharing a concurrency key, started together, run one after the other', async () => {
    const fleetKey = await readFile(fx.fleet.privateKeyPath, 'utf8');
    const converge = (runId: number) =>
      fx.run('converge', {
        runId,
        event: events.schedule(REPOSITORY),
        with: {
          target: 'tf:edge',
          playbook: 'timed.yml',
          'fleet-private-key': fleetKey,
          'concurrency-key': 'edge-nightly',
          'concurrency-wait': '5m',
        },
      });
    const [first, second] = await Promise.all([converge(7201), converge(7202)]);
    expect(first.code, describeRun(first)).toBe(0);
    expect(second.code, describeRun(second)).toBe(0);
    expect((await host.readFile('/tmp/converge-order'))!.trim().split('\n')).toEqual(['start', 'end', 'start', 'end']);
    expect(`${first.log}\n${second.log}`).toMatch(
      /waiting up to 5m 00s for concurrency key edge-nightly, held by github:acme\/infra:720[12]:1:converge/,
    );
    const history = await fx.ledgerHistory();
    expect(history.match(/lock edge-nightly: acquired by github:/g)).toHaveLength(2);
    expect(history.match(/lock edge-nightly: released by github:/g)).toHaveLength(2);
  });
});
