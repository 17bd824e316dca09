import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runPlaybook } from '../../src/adapters/ansible.js';
import { parseAnsibleEvents, type AnsibleEvent, type TaskResultEvent } from '../../src/adapters/ansible-events.js';
import { scrubEnvironment } from '../../src/domain/run-environment.js';

let root: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'exo-ev-'));
});

afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

/** A check-mode run on the control machine itself (ansible_connection: local): nothing is written. */
async function checkRun(tasks: string, secrets: string[] = []) {
  const target = join(root, 'motd');
  await writeFile(target, 'old line\nsecret-canary-0123456789\n');
  const playbook = join(root, 'play.yml');
  await writeFile(
    playbook,
    `- hosts: all\n  gather_facts: false\n  vars:\n    target: ${JSON.stringify(target)}\n  tasks:\n${tasks}`,
  );
  const inventory = join(root, 'inventory.json');
  await writeFile(
    inventory,
    JSON.stringify({
      all: { hosts: { here: { ansible_connection: 'local', ansible_python_interpreter: '/usr/bin/python3' } } },
    }),
  );
  const knownHosts = join(root, 'known_hosts');
  await writeFile(knownHosts, '');
  const result = await runPlaybook({
    playbook,
    inventoryPath: inventory,
    cwd: root,
    env: { ...scrubEnvironment(process.env, {}), TMPDIR: root },
    knownHostsFile: knownHosts,
    check: true,
    diff: true,
    secrets,
  });
  return { result, target };
}

const results = (events: ReturnType<typeof parseAnsibleEvents>): TaskResultEvent[] =>
  events.filter((e): e is TaskResultEvent => e.event === 'result');

describe('the events callback', () => {
  it('reports per host and task: changed with its diff, ok, skipped, failed with its message; secrets redacted', async () => {
    const { result, target } = await checkRun(
      [
        '    - name: Write the motd',
        '      ansible.builtin.copy: { dest: "{{ target }}", content: "new line\\n" }',
        '    - name: Already fine',
        '      ansible.builtin.command: "true"',
        '      changed_when: false',
        '      check_mode: false',
        '    - name: Never here',
        '      ansible.builtin.debug: { msg: x }',
        '      when: false',
        '    - name: Hidden',
        '      ansible.builtin.copy: { dest: "{{ target }}", content: "hidden secret\\n" }',
        '      no_log: true',
        '    - name: Refuses',
        '      ansible.builtin.fail: { msg: "it broke" }',
        '',
      ].join('\n'),
      ['secret-canary-0123456789'],
    );
    expect(result.code).toBe(2);
    const byTask = Object.fromEntries(results(result.events).map((e) => [e.task, e]));
    expect(byTask['Write the motd']).toMatchObject({ status: 'changed', host: 'here', action: 'ansible.builtin.copy' });
    expect(byTask['Write the motd']?.diff).toContain(`--- before: ${target}`);
    expect(byTask['Write the motd']?.diff).toContain('-old line');
    expect(byTask['Write the motd']?.diff).toContain('+new line');
    expect(byTask['Write the motd']?.diff).toContain('-***');
    expect(JSON.stringify(result.events)).not.toContain('secret-canary-0123456789');
    expect(byTask['Already fine']).toMatchObject({ status: 'ok' });
    expect(byTask['Never here']).toMatchObject({ status: 'skipped' });
    expect(byTask.Hidden).toMatchObject({ status: 'changed' });
    expect(byTask.Hidden?.diff).toBeUndefined();
    expect(byTask.Refuses).toMatchObject({ status: 'failed', msg: 'it broke', ignored: false });
    expect(result.events.at(-1)).toMatchObject({ event: 'stats', hosts: { here: { failures: 1 } } });
    expect(result.events.filter((e) => e.event === 'task').map((e) => e.event === 'task' && e.task)).toEqual([
      'Write the motd',
      'Already fine',
      'Never here',
      'Hidden',
      'Refuses',
    ]);
  });
});

const STREAM_SECRET = 'hunter2-very-secret';
/** Seven tasks on two hosts that run on the control machine (no SSH needed to see the events). */
const PLAY = `
- hosts: all
  gather_facts: false
  tasks:
    - name: First
      ansible.builtin.command: "true"
      changed_when: false
    - name: Second changes
      ansible.builtin.command: "true"
    - name: Skipped
      ansible.builtin.command: "true"
      when: false
    - block:
        - name: Inside a block
          ansible.builtin.debug: { msg: hello }
    - name: A loop
      ansible.builtin.command: "echo {{ item }}"
      loop: [a, b]
    - name: Ignored failure
      ansible.builtin.command: "false"
      ignore_errors: true
    - name: Fails on two
      ansible.builtin.shell: "[ {{ inventory_hostname }} = one ] || { echo 'line 1 ${STREAM_SECRET}' >&2; echo 'line 2' >&2; exit 3; }"
`;

describe('events as the play runs', () => {
  it('reports each task start and each host result as they happen, failures redacted', async () => {
    const playbook = join(root, 'seven.yml');
    await writeFile(playbook, PLAY);
    const inventoryPath = join(root, 'two-hosts.json');
    const local = { ansible_connection: 'local' };
    await writeFile(inventoryPath, JSON.stringify({ all: { hosts: { one: local, two: local } } }));
    const knownHostsFile = join(root, 'empty_known_hosts');
    await writeFile(knownHostsFile, '');

    const events: AnsibleEvent[] = [];
    /** Output lines and events in the order they reached us. */
    const arrivals: string[] = [];
    const result = await runPlaybook({
      playbook,
      inventoryPath,
      knownHostsFile,
      cwd: root,
      env: { ...scrubEnvironment(process.env, {}), TMPDIR: root },
      secrets: [STREAM_SECRET],
      onEvent: (event) => {
        events.push(event);
        arrivals.push(`event ${event.event}`);
      },
      onOutput: (line) => arrivals.push(line),
    });

    expect(result.code).toBe(2);
    // As they happen: the first host result arrived before ansible printed its recap, not read after the run.
    expect(arrivals.indexOf('event result')).toBeGreaterThanOrEqual(0);
    expect(arrivals.indexOf('event result')).toBeLessThan(arrivals.findIndex((l) => l.startsWith('PLAY RECAP')));
    expect(events.length).toBe(result.events.length);
    expect(events[0]).toMatchObject({ event: 'play', tasks: 7 });
    const starts = events.filter((e) => e.event === 'task');
    expect(starts.map((e) => [e.index, e.total])).toEqual([1, 2, 3, 4, 5, 6, 7].map((i) => [i, 7]));
    const results = events.flatMap((e) => (e.event === 'result' ? [e] : []));
    expect(results).toHaveLength(14);
    const statusOf = (host: string, task: string) => results.find((r) => r.host === host && r.task === task)?.status;
    expect(statusOf('one', 'First')).toBe('ok');
    expect(statusOf('two', 'Second changes')).toBe('changed');
    expect(statusOf('one', 'Skipped')).toBe('skipped');
    expect(statusOf('two', 'Inside a block')).toBe('ok');
    expect(statusOf('one', 'A loop')).toBe('changed');
    expect(results.find((r) => r.host === 'two' && r.task === 'Ignored failure')).toMatchObject({
      status: 'failed',
      ignored: true,
    });
    expect(statusOf('one', 'Fails on two')).toBe('changed');
    expect(statusOf('two', 'Fails on two')).toBe('failed');
    // Every result of a task comes after its start.
    for (const r of results) {
      expect(events.indexOf(r)).toBeGreaterThan(events.findIndex((e) => e.event === 'task' && e.task === r.task));
    }

    expect(result.failures).toHaveLength(1);
    const [failure] = result.failures;
    expect(failure).toMatchObject({ host: 'two', task: 'Fails on two', status: 'failed', rc: 3 });
    expect(failure!.stderr).toBe('line 1 ***\nline 2');
    expect(JSON.stringify(events)).not.toContain(STREAM_SECRET);
  });
});

describe('parseAnsibleEvents', () => {
  it('skips a line cut short and lines of unknown shape', () => {
    const text = [
      JSON.stringify({ event: 'play', play: 'site' }),
      JSON.stringify({ event: 'mystery' }),
      '{"event": "result", "status": "chan',
    ].join('\n');
    expect(parseAnsibleEvents(text)).toEqual([{ event: 'play', play: 'site' }]);
  });

  it('redacts keys and values', () => {
    const text = JSON.stringify({ event: 'stats', hosts: { 'host-hunter2': { ok: 1 } } });
    expect(parseAnsibleEvents(text, ['hunter2'])).toEqual([{ event: 'stats', hosts: { 'host-***': { ok: 1 } } }]);
  });
});
