import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProcess } from '../../src/adapters/process.js';
import { makePrivateDir, sweepOrphanedDirs } from '../../src/adapters/private-dir.js';
import { cliPath } from '../support/chain-fixture.js';
import { waitFor } from '../support/time.js';

describe('private run directories', () => {
  let parent: string;
  beforeAll(async () => {
    parent = await mkdtemp(join(tmpdir(), 'private-dir-test-'));
  });
  afterAll(() => rm(parent, { recursive: true, force: true }));

  it('are 0700 and carry the owner pid', async () => {
    const dir = await makePrivateDir('plan', parent);
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    expect(dir).toContain(`exocomp-plan-${process.pid}-`);
  });

  it('a directory left by a killed run is removed; a live owner keeps its own', async () => {
    // A pid that surely ended: a child that ran and exited.
    const gone = spawnSync('sh', ['-c', 'echo $$']).stdout.toString().trim();
    const orphan = join(parent, `exocomp-plan-${gone}-abc123`);
    await mkdir(join(orphan, 'nested'), { recursive: true });
    const live = join(parent, `exocomp-run-1-xyz789`); // pid 1 is always alive
    await mkdir(live);
    const unrelated = join(parent, 'exocomp-plan-notapid');
    await mkdir(unrelated);
    await sweepOrphanedDirs(parent);
    expect(existsSync(orphan)).toBe(false);
    expect(existsSync(live)).toBe(true);
    expect(existsSync(unrelated)).toBe(true);
  });
});

/**
 * Issue 8 item 6: kill -9 of a run's whole process group leaves its private
 * directories (extra-vars.json among them); each carries the dead owner's pid,
 * so the next run's sweep removes every one of them.
 */
describe('a run killed with -9', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'exocomp-killed-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('leaves only owned directories, and the next run removes them all', async () => {
    const tmp = join(dir, 'tmp');
    await mkdir(tmp);
    await writeFile(
      join(dir, 'inventory.json'),
      JSON.stringify({
        all: { hosts: { control: { ansible_connection: 'local', ansible_python_interpreter: '/usr/bin/python3' } } },
      }),
    );
    await writeFile(
      join(dir, 'sleep.yml'),
      '- hosts: all\n  gather_facts: false\n  tasks:\n    - ansible.builtin.command: sleep 120\n',
    );
    await runProcess('git', ['init', '-q', '--bare', join(dir, 'ledger.git')]);
    const child = spawn(
      process.execPath,
      [cliPath, 'playbook', 'run', 'sleep.yml', '--inventory', 'inventory.json', '--ledger', join(dir, 'ledger.git')],
      {
        cwd: dir,
        env: { ...process.env, TMPDIR: tmp },
        detached: true,
        stdio: 'ignore',
      },
    );
    const exited = new Promise((resolve) => child.once('exit', resolve));
    const extraVars = await waitFor('the play to start with its extra-vars file', async () => {
      for (const entry of await readdir(tmp, { recursive: true })) if (entry.endsWith('extra-vars.json')) return entry;
      return undefined;
    });
    process.kill(-(child.pid as number), 'SIGKILL');
    await exited;
    const left = await readdir(tmp);
    expect(left.some((name) => extraVars.startsWith(name))).toBe(true);
    for (const name of left) expect(name).toMatch(new RegExp(`^exocomp-[a-z]+-${child.pid}-`));
    await makePrivateDir('next', tmp).then((next) => rm(next, { recursive: true }));
    expect(await readdir(tmp)).toEqual([]);
  });
});
