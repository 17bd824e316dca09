import { describe, expect, it } from 'vitest';
import {
  ALLOWED_CONNECTION_VARIABLES,
  captureInventory,
  deriveHosts,
  MAX_GROUP_DEPTH,
  parseInventory,
  renderAnsibleInventory,
} from '../../src/domain/inventory.js';
import { thrown } from '../support/errors.js';

const hostWith = (vars: Record<string, unknown>) => ({
  all: { hosts: { web1: { ansible_host: '10.0.0.1', ...vars } } },
});
const refusal = (inv: unknown) => {
  const error = thrown(() => deriveHosts(parseInventory(inv)));
  expect(error.kind).toBe('inventory');
  return error;
};

describe('connection variables from an inventory', () => {
  it.each([
    ['ansible_ssh_executable', '/tmp/evil.sh'],
    ['ansible_ssh_common_args', '-o PermitLocalCommand=yes -o LocalCommand="touch /tmp/x"'],
    ['ansible_ssh_extra_args', '-o ProxyCommand="touch /tmp/x"'],
    ['ansible_ssh_args', '-o ProxyCommand="touch /tmp/x"'],
    ['ansible_scp_extra_args', '-o ProxyCommand=x'],
    ['ansible_sftp_extra_args', '-o ProxyCommand=x'],
    ['ansible_ssh_private_key_file', '/etc/shadow'],
    ['ansible_shell_executable', '/tmp/evil'],
    ['ansible_become_exe', '/tmp/evil'],
    ['ansible_become_flags', '-u root'],
    ['ansible_password', 'hunter2'],
    ['ansible_become_password', 'hunter2'],
    ['ansible_host_key_checking', false],
    ['ansible_pipelining', true],
    ['ansible_remote_tmp', '/tmp/x'],
    ['ANSIBLE_SSH_EXECUTABLE', '/tmp/evil.sh'],
  ])('refuses %s, naming the host and the variable', (name, value) => {
    const error = refusal(hostWith({ [name]: value }));
    expect(error.message).toMatch(new RegExp(`^host "web1": sets ${name}, which is not allowed from an inventory: `));
    expect(error.help).toContain('ansible_host, ansible_port, ansible_user, ansible_connection');
    expect(error.help).toContain('docs/threat-model.md');
  });

  it('refuses them as group vars too, naming the group', () => {
    const error = refusal({
      all: { children: { web: { vars: { ansible_ssh_executable: '/x' }, hosts: { h: null } } } },
    });
    expect(error.message).toMatch(/^group "web": sets ansible_ssh_executable, which is not allowed/);
  });

  it('refuses them in the fallback inventory (outputs become vars of all)', () => {
    const error = thrown(() => captureInventory({ ansible_ssh_executable: { value: '/x', sensitive: false } }));
    expect(error.message).toMatch(/^group "all": sets ansible_ssh_executable/);
  });

  it('documents every allowed variable', () => {
    expect(Object.keys(ALLOWED_CONNECTION_VARIABLES).sort()).toEqual(
      [
        'ansible_become',
        'ansible_become_method',
        'ansible_become_user',
        'ansible_connection',
        'ansible_group_priority',
        'ansible_host',
        'ansible_port',
        'ansible_python_interpreter',
        'ansible_user',
      ].sort(),
    );
  });

  it('accepts every allowed variable with a sound value, and any other variable', () => {
    const inv = hostWith({
      ansible_port: 2222,
      ansible_user: 'admin',
      ansible_connection: 'ssh',
      ansible_python_interpreter: '/opt/python/bin/python3',
      ansible_become: 'yes',
      ansible_become_user: 'root',
      ansible_become_method: 'sudo',
      app_motd: "{{ lookup('pipe', 'id') }}",
    });
    expect(deriveHosts(parseInventory(inv))).toEqual([
      { name: 'web1', address: '10.0.0.1', port: 2222, user: 'admin', local: false },
    ]);
  });

  it.each([
    [{ ansible_connection: 'paramiko' }, 'ansible_connection "paramiko" is not allowed: only ssh and local are'],
    [{ ansible_connection: 'docker' }, 'ansible_connection "docker" is not allowed: only ssh and local are'],
    [
      { ansible_connection: 'local', ansible_python_interpreter: '/tmp/evil' },
      'ansible_python_interpreter "/tmp/evil" is not allowed for a local host',
    ],
    [
      { ansible_connection: 'local', ansible_python_interpreter: '/usr/bin/env' },
      'ansible_python_interpreter "/usr/bin/env" is not allowed for a local host',
    ],
    [{ ansible_python_interpreter: 'python3; id' }, 'ansible_python_interpreter "python3; id" is not an absolute path'],
    [{ ansible_python_interpreter: "{{ lookup('pipe','id') }}" }, 'is not an absolute path'],
    [{ ansible_become: 'maybe' }, 'ansible_become must be true or false'],
    [{ ansible_become_user: 'root;id' }, 'ansible_become_user "root;id" is not a user name'],
    [{ ansible_become_method: 'pbrun' }, 'ansible_become_method "pbrun" is not allowed'],
  ])('refuses the value of %j', (vars, message) => {
    expect(refusal(hostWith(vars)).message).toContain(message);
  });

  it('accepts a system python or auto for a local host', () => {
    for (const interpreter of ['/usr/bin/python3', '/usr/local/bin/python3.11', 'auto_silent']) {
      expect(
        deriveHosts(
          parseInventory(hostWith({ ansible_connection: 'local', ansible_python_interpreter: interpreter })),
        )[0]?.local,
      ).toBe(true);
    }
  });
});

describe('names and nesting', () => {
  it.each([
    [{ all: { hosts: { "{{lookup('pipe','id')}}": null } } }, 'host name'],
    [{ '{%if%}': {} }, 'group name'],
    [{ all: { vars: { '{#x#}': 1 } } }, 'variable name'],
  ])('refuses a template marker in a name: %j', (inv, what) => {
    const error = thrown(() => parseInventory(inv));
    expect(error.message).toContain(`${what} `);
    expect(error.message).toContain("contains a template marker ('{{', '{%' or '{#')");
  });

  it('refuses a template marker in a key inside a value', () => {
    const error = thrown(() => parseInventory({ all: { vars: { tags: { "{{ lookup('pipe','id') }}": 1 } } } }));
    expect(error.message).toMatch(/^group "all": variable "tags" has a key .* with a template marker/);
  });

  const nested = (levels: number) => {
    let group: Record<string, unknown> = { hosts: { h: null } };
    for (let i = levels; i > 0; i -= 1) group = { children: { [`g${i}`]: group } };
    return { all: group };
  };

  it(`accepts ${MAX_GROUP_DEPTH} levels of children and refuses one more, naming the inventory`, () => {
    expect(deriveHosts(parseInventory(nested(MAX_GROUP_DEPTH - 1)))).toHaveLength(1);
    const error = thrown(() =>
      captureInventory({ ansible_inventory: { value: nested(MAX_GROUP_DEPTH), sensitive: false } }),
    );
    expect(error.message).toBe(
      `the ansible_inventory output nests groups (children within children) more than ${MAX_GROUP_DEPTH} levels deep`,
    );
  });

  it('refuses 1,000 and 100,000 levels without exhausting the stack', () => {
    for (const levels of [1_000, 100_000]) {
      expect(thrown(() => parseInventory(nested(levels))).message).toContain('more than 64 levels deep');
    }
  });

  it('refuses a variable nested beyond the limit', () => {
    let value: unknown = 'x';
    for (let i = 0; i < 10_000; i += 1) value = [value];
    expect(thrown(() => parseInventory({ all: { vars: { deep: value } } })).message).toBe(
      'group "all": variable "deep" nests values more than 32 levels deep',
    );
  });
});

describe('renderAnsibleInventory', () => {
  it('tags every string, at any depth, !unsafe and keeps other types', () => {
    const text = renderAnsibleInventory({
      all: {
        hosts: {
          web1: { ansible_host: '10.0.0.1', ansible_port: 22, b: true, z: null, l: ['{{ x }}', 1], m: { k: 'v' } },
        },
      },
    });
    expect(text).toBe(
      '{\n  "all": {"hosts": {"web1": {"ansible_host": !unsafe "10.0.0.1", "ansible_port": 22, "b": true, "z": null, "l": [!unsafe "{{ x }}", 1], "m": {"k": !unsafe "v"}}}}\n}\n',
    );
  });

  it('escapes everything outside printable ASCII', () => {
    const text = renderAnsibleInventory({ all: { vars: { s: 'a"b\\c\n\u007f\u2028é😀' } } });
    expect(text).toContain('"s": !unsafe "a\\"b\\\\c\\u000a\\u007f\\u2028\\u00e9\\U0001f600"');
    expect(text).toMatch(/^[\x20-\x7e\n]*$/);
  });
});
