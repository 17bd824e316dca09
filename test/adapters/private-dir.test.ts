import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProcess } from '../../src/adapters/process.js';
import { makePrivateDir, privateDirPrefix, sweepOrphanedDirs } from '../../src/adapters/private-dir.js';
import { cliPath } from '../support/chain-fixture.js';
import { waitFor } from '../support/time.js';

const sourceUrl = pathToFileURL(join(import.meta.dirname, '../../src/adapters/private-dir.ts')).href;

describe('private run directories', () => {
  let parent: string;
  beforeAll(async () => {
    parent = await mkdtemp(join(tmpdir(), 'private-dir-test-'));
  });
  afterAll(() => rm(parent, { recursive: true, force: true }));

  it('are 0700 and carry the owner pid', async () => {
    const dir = await makePrivateDir('plan', parent);
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    expect(dir).toContain(`exocomp-plan-${process.pid}.`);
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

  it('judges only owners in its own pid namespace; names from older versions by pid alone', async () => {
    const gone = spawnSync('sh', ['-c', 'echo $$']).stdout.toString().trim();
    const ours = join(parent, privateDirPrefix('plan').replace(`-${process.pid}.`, `-${gone}.`) + 'abc123');
    const elsewhere = join(parent, `exocomp-plan-${gone}.zzzzzz-abc123`);
    const older = join(parent, `exocomp-plan-${gone}-def456`);
    for (const dir of [ours, elsewhere, older]) await mkdir(dir);
    await sweepOrphanedDirs(parent);
    expect(existsSync(ours)).toBe(false);
    expect(existsSync(elsewhere)).toBe(true);
    expect(existsSync(older)).toBe(false);
  });

  it('a sweep from another pid namespace sharing the directory leaves a live owner alone', async () => {
    const dir = await makePrivateDir('plan', parent);
    // In a new pid namespace our pid is nobody (or someone else): judged by pid alone, the directory would go.
    const sweep = `import('${sourceUrl}').then((m) => m.sweepOrphanedDirs(${JSON.stringify(parent)}))`;
    const child = spawnSync(
      'unshare',
      ['--pid', '--fork', '--mount-proc', process.execPath, '--import', 'tsx', '--input-type=module', '-e', sweep],
      { encoding: 'utf8' },
    );
    expect(child.stderr).toBe('');
    expect(child.status).toBe(0);
    expect(existsSync(dir)).toBe(true);
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
    for (const name of left) expect(name).toMatch(new RegExp(`^exocomp-[a-z]+-${child.pid}\\.[0-9a-z]+-`));
    await makePrivateDir('next', tmp).then((next) => rm(next, { recursive: true }));
    expect(await readdir(tmp)).toEqual([]);
  });
});
