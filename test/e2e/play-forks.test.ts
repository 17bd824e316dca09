/**
 * Issue 29 item 4 through the one play runner: ansible runs a play with the
 * forks derived from its host count and the cores (domain/forks.ts), and the
 * caller's ANSIBLE_FORKS wins. A local play (ansible's `ansible_forks` magic
 * variable says what it runs with), so no host is needed.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runPlay } from '../../src/app/plays/play.js';
import { SecretRegistry } from '../../src/app/runtime/secrets.js';
import { chooseForks } from '../../src/domain/forks.js';
import { renderKnownHosts } from '../../src/domain/known-hosts.js';

let dir: string;
let playbook: string;
const recorded = () => join(dir, 'forks.txt');

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'exocomp-play-forks-'));
  playbook = join(dir, 'forks.yml');
  await writeFile(
    playbook,
    [
      '- hosts: all',
      '  gather_facts: false',
      '  tasks:',
      `    - ansible.builtin.copy: {dest: ${JSON.stringify(recorded())}, content: "{{ ansible_forks }}"}`,
      '',
    ].join('\n'),
  );
});
afterAll(() => rm(dir, { recursive: true, force: true }));

async function forksOfPlay(hostCount: number, parentEnv: NodeJS.ProcessEnv): Promise<number> {
  const outcome = await runPlay({
    playbook,
    cwd: dir,
    parentEnv,
    inventoryText: JSON.stringify({ all: { hosts: { control: { ansible_connection: 'local' } } } }),
    knownHosts: renderKnownHosts([]),
    hostCount,
    secrets: new SecretRegistry(),
  });
  expect(outcome.code, `${outcome.stdout}\n${outcome.stderr}`).toBe(0);
  return Number(await readFile(recorded(), 'utf8'));
}

describe('a play’s forks', () => {
  it('follow the host count and the cores, and the caller’s ANSIBLE_FORKS wins', async () => {
    const environment = { ...process.env };
    delete environment.ANSIBLE_FORKS;
    // Two hosts: two forks on any runner, not ansible's default of 5, so the test tells the derived value from none.
    expect(chooseForks(2, availableParallelism())).toBe(2);
    expect(await forksOfPlay(2, environment)).toBe(2);
    expect(await forksOfPlay(2, { ...environment, ANSIBLE_FORKS: '3' })).toBe(3);
  });
});
