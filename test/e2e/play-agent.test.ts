/**
 * A play handed an agent started beforehand (onboarding starts configure's while
 * its own play runs): the play runs with that agent, and the agent is stopped
 * afterwards as one the play started itself; one nobody takes is stopped when
 * discarded. A local play, so no host is needed.
 */
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lookAheadToAgent, runPlay } from '../../src/app/plays/play.js';
import { SecretRegistry } from '../../src/app/runtime/secrets.js';
import { renderKnownHosts } from '../../src/domain/known-hosts.js';
import { runProcess } from '../../src/adapters/process.js';
import { generateKeyPair, type KeyPair } from '../support/loopback-host.js';
import { privateDirPrefix } from '../../src/adapters/private-dir.js';

let dir: string;
let key: KeyPair;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'exocomp-play-agent-'));
  key = await generateKeyPair(dir, 'fleet');
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** ssh-agent processes this test process started (their socket lives in an exocomp-agent-<our pid>.<pidns>- directory). */
async function ourAgents(): Promise<string[]> {
  const marker = privateDirPrefix('agent');
  const found: string[] = [];
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.startsWith('ssh-agent') && cmdline.includes(marker)) found.push(pid);
  }
  return found;
}

describe('a play given an agent started beforehand', () => {
  it('runs with that agent holding the key, and stops it afterwards', async () => {
    const listed = join(dir, 'listed.txt');
    const playbook = join(dir, 'list-keys.yml');
    await writeFile(
      playbook,
      [
        '- hosts: all',
        '  gather_facts: false',
        '  tasks:',
        '    - ansible.builtin.command: ssh-add -l',
        '      register: keys',
        `    - ansible.builtin.copy: {dest: ${JSON.stringify(listed)}, content: "{{ keys.stdout }}"}`,
        '',
      ].join('\n'),
    );
    const agent = lookAheadToAgent(key.privateKeyPath);
    const outcome = await runPlay({
      playbook,
      cwd: dir,
      parentEnv: process.env,
      inventoryText: JSON.stringify({ all: { hosts: { control: { ansible_connection: 'local' } } } }),
      knownHosts: renderKnownHosts([]),
      agent,
      secrets: new SecretRegistry(),
    });
    expect(outcome.code, `${outcome.stdout}\n${outcome.stderr}`).toBe(0);
    const fingerprint = (await runProcess('ssh-keygen', ['-lf', `${key.privateKeyPath}.pub`])).stdout.split(' ')[1]!;
    expect(await readFile(listed, 'utf8')).toContain(fingerprint);
    expect(await ourAgents()).toEqual([]);
  });

  it('is stopped when nobody takes it', async () => {
    const agent = lookAheadToAgent(key.privateKeyPath);
    // Running, and holding the key, before it is discarded (bounded by the agent's start).
    for (let i = 0; i < 200 && (await ourAgents()).length === 0; i++)
      await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await ourAgents()).toHaveLength(1);
    await agent.discard();
    expect(await ourAgents()).toEqual([]);
  });
});
