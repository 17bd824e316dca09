import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runPlaybook } from '../../src/adapters/ansible.js';
import { parseAnsibleEvents, type TaskResultEvent } from '../../src/adapters/ansible-events.js';
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
  await writeFile(inventory, JSON.stringify({ all: { hosts: { here: { ansible_connection: 'local', ansible_python_interpreter: '/usr/bin/python3' } } } }));
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
