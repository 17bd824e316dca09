/**
 * Progress inside the plays (issue 13, items 4 and 5): per-host, per-task lines
 * in text and JSON, and a failure printed once, readably, with the whole of it
 * in the ledger's failure context.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createChainFixture,
  sshHostVars,
  workflowIdFrom,
  type ChainFixture,
  type CliResult,
} from '../support/chain-fixture.js';
import { createLoopbackHost, type LoopbackHost } from '../support/loopback-host.js';

/** Seven tasks; the last fails on host two with two lines of stderr. */
const PLAY = `
- hosts: all
  gather_facts: false
  tasks:
    - { name: Task one, ansible.builtin.command: "true", changed_when: false }
    - { name: Task two, ansible.builtin.command: "true" }
    - { name: Task three, ansible.builtin.command: "true", when: false }
    - { name: Task four, ansible.builtin.debug: { msg: hi } }
    - { name: Task five, ansible.builtin.command: "true", changed_when: false }
    - { name: Task six, ansible.builtin.command: "true", changed_when: false }
    - name: Task seven
      ansible.builtin.shell: "[ {{ inventory_hostname }} = one ] || { echo 'boom-marker first' >&2; echo 'boom-marker second' >&2; exit 3; }"
`;

const TASK_LINE = /^\[4\/4\] configure (one|two) · Task \w+ (✓|✓ changed|· skipped|✗) \(\d\/7\) /;

describe('progress of the plays', () => {
  let fx: ChainFixture;
  const hosts: LoopbackHost[] = [];
  let text: CliResult;
  let id: string;

  beforeAll(async () => {
    fx = await createChainFixture();
    for (const port of [22, 2222]) {
      const host = await createLoopbackHost({ rootAuthorizedKey: fx.bootstrap.publicKey, port });
      hosts.push(host);
      await host.start();
    }
    await fx.setInventory({ all: { hosts: { one: sshHostVars(hosts[0]!), two: sshHostVars(hosts[1]!) } } });
    await writeFile(join(fx.dir, 'seven.yml'), PLAY);
    text = await fx.cli(['provision', 'run', fx.workspace, 'seven.yml', ...fx.keys, '--ssh-wait', '60s']);
    id = workflowIdFrom(text);
  });

  afterAll(async () => {
    await Promise.all(hosts.map((h) => h.destroy()));
    await fx?.cleanup();
  });

  it('prints one line per host and task, with the step, status and position', () => {
    const lines = text.stderr.split('\n');
    const taskLines = lines.filter((l) => TASK_LINE.test(l));
    expect(taskLines, text.stderr).toHaveLength(14);
    for (const host of ['one', 'two']) expect(taskLines.filter((l) => l.includes(` ${host} · `))).toHaveLength(7);
    expect(taskLines).toContainEqual(expect.stringMatching(/^\[4\/4\] configure two · Task seven ✗ \(7\/7\) /));
    expect(taskLines).toContainEqual(expect.stringMatching(/^\[4\/4\] configure one · Task three · skipped \(3\/7\) /));
    // Onboarding reports its tasks the same way.
    expect(lines.some((l) => /^\[3\/4\] onboard one · .+ ✓/.test(l))).toBe(true);
  });

  it('prints the failure once: host, task, message, first lines of stderr; the summary stays one line', () => {
    expect(text.code).toBe(1);
    const all = `${text.stdout}\n${text.stderr}`;
    expect(all.split('boom-marker first')).toHaveLength(2);
    expect(text.stderr).toMatch(
      /Task seven ✗ \(7\/7\) .*\n\s+non-zero return code \(rc 3\)\n\s+stderr:\n\s+boom-marker first\n\s+boom-marker second\n/,
    );
    expect(text.stderr).toMatch(
      /\[4\/4\] configure … .* ✗ {2}configure play failed: two · Task seven: non-zero return code \(rc 3\)\n/,
    );
  });

  it('keeps the whole failure, redacted, in the ledger', async () => {
    const record = JSON.parse((await fx.ledgerFile(`workflows/${id}.json`))!);
    expect(record.failure.summary).toBe('configure play failed: two · Task seven: non-zero return code (rc 3)');
    expect(record.failure.detail).toContain('boom-marker first\nboom-marker second');
  });

  it('carries the same events in --json', async () => {
    const json = await fx.cli(['provision', 'resume', id, ...fx.keys, '--json']);
    const events = json.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const results = events.filter((e) => e.event === 'task-result');
    expect(results, json.stdout).toHaveLength(14);
    expect(results.find((e) => e.host === 'two' && e.task === 'Task seven')).toMatchObject({
      step: 'configure',
      status: 'failed',
      index: 7,
      total: 7,
      rc: 3,
    });
    expect(events.find((e) => e.event === 'play-started')).toMatchObject({ step: 'configure', tasks: 7 });
  });
});
