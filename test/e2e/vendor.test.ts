/**
 * `playbook vendor` installs collections into the project (.exocomp/collections)
 * and later runs use them, so no run needs Galaxy. The collection is built
 * here from source and installed from its tarball: nothing is downloaded.
 */
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProcess } from '../../src/adapters/process.js';
import { cliPath } from '../support/chain-fixture.js';

describe('playbook vendor', () => {
  let dir: string;
  const cli = (args: string[]) => runProcess(process.execPath, [cliPath, ...args], { cwd: dir });

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'exocomp-vendor-'));
    const source = join(dir, 'src', 'acme', 'tools');
    await mkdir(join(source, 'plugins', 'modules'), { recursive: true });
    await writeFile(
      join(source, 'galaxy.yml'),
      'namespace: acme\nname: tools\nversion: 1.0.0\nreadme: README.md\nauthors: [exocomp tests]\n',
    );
    await writeFile(join(source, 'README.md'), 'test collection\n');
    await writeFile(
      join(source, 'plugins', 'modules', 'greet.py'),
      [
        '#!/usr/bin/python',
        'from ansible.module_utils.basic import AnsibleModule',
        'def main():',
        '    module = AnsibleModule(argument_spec=dict(name=dict(type="str", required=True)))',
        '    module.exit_json(changed=False, greeting="hello " + module.params["name"])',
        'if __name__ == "__main__":',
        '    main()',
        '',
      ].join('\n'),
    );
    const built = await runProcess('ansible-galaxy', ['collection', 'build', source, '--output-path', dir], {
      cwd: dir,
    });
    expect(built.code, built.stderr).toBe(0);
    await writeFile(
      join(dir, 'requirements.yml'),
      'collections:\n  - name: ./acme-tools-1.0.0.tar.gz\n    type: file\n',
    );
    await writeFile(
      join(dir, 'inventory.json'),
      JSON.stringify({
        all: { hosts: { control: { ansible_connection: 'local', ansible_python_interpreter: '/usr/bin/python3' } } },
      }),
    );
    await writeFile(
      join(dir, 'greet.yml'),
      [
        '- hosts: all',
        '  gather_facts: false',
        '  tasks:',
        '    - acme.tools.greet: { name: exocomp }',
        '      register: greeting',
        '    - ansible.builtin.copy: { dest: "{{ out }}", content: "{{ greeting.greeting }}" }',
        '',
      ].join('\n'),
    );
    await runProcess('git', ['init', '-q', '--bare', join(dir, 'ledger.git')]);
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('installs the requirements into .exocomp/collections', async () => {
    const result = await cli(['playbook', 'vendor', '--requirements', 'requirements.yml', '--json']);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout).result.collections).toEqual(['acme.tools']);
    expect(await readdir(join(dir, '.exocomp', 'collections', 'ansible_collections', 'acme'))).toEqual(['tools']);
  });

  it('later runs find the vendored collection without any Galaxy', async () => {
    const out = join(dir, 'greeting.txt');
    const result = await cli([
      'playbook',
      'run',
      'greet.yml',
      '--inventory',
      'inventory.json',
      '--ledger',
      join(dir, 'ledger.git'),
      '--',
      '-e',
      `out=${out}`,
    ]);
    expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(0);
    expect(await readFile(out, 'utf8')).toBe('hello exocomp');
  });

  it('a run without the vendored collection fails: the path is what made it work', async () => {
    await rm(join(dir, '.exocomp', 'collections'), { recursive: true, force: true });
    const result = await cli([
      'playbook',
      'run',
      'greet.yml',
      '--inventory',
      'inventory.json',
      '--ledger',
      join(dir, 'ledger.git'),
      '--',
      '-e',
      `out=${join(dir, 'x')}`,
    ]);
    expect(result.code).not.toBe(0);
  });

  it('a requirements file that cannot be installed is a clear error', async () => {
    await writeFile(join(dir, 'bad.yml'), 'collections:\n  - name: ./missing-1.0.0.tar.gz\n    type: file\n');
    const result = await cli(['playbook', 'vendor', '--requirements', 'bad.yml']);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/ansible-galaxy collection install exited/);
  });
});
