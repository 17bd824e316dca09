import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProcess } from '../../src/adapters/process.js';
import {
  captureEventLine,
  captureInventory,
  deriveHosts,
  fallbackInventory,
  formatInventoryPath,
  knownHostsName,
  parseInventory,
  renderAnsibleInventory,
  type DerivedHost,
  type StaticInventory,
} from '../../src/domain/inventory.js';
import { thrown } from '../support/errors.js';

const INVENTORY_HELP_START = 'shape the ansible_inventory output as a static inventory';

describe('parseInventory', () => {
  it.each([
    [
      'the seed example',
      { all: { children: { web: { hosts: { web1: { ansible_host: '203.0.113.7', ansible_user: 'root' } } } } } },
    ],
    ['an empty inventory', {}],
    ['a null group', { all: null }],
    ['null sections', { all: { hosts: null, vars: null, children: null } }],
    ['a host without vars', { all: { hosts: { web1: null } } }],
    ['an empty child group', { all: { children: { web: null } } }],
    [
      'host vars of every JSON type',
      { all: { hosts: { h: { s: 'x', n: 1, b: true, z: null, l: [1, 'a'], m: { k: [{}] } } } } },
    ],
    [
      'numeric-looking and dotted host names',
      { all: { hosts: { '10.0.0.1': {}, '42': {}, 'web-1.example.com': {} } } },
    ],
    ['several top-level groups', { web: { hosts: { a: null } }, db: { vars: { x: 1 } } }],
    ['deep children', { all: { children: { a: { children: { b: { children: { c: { hosts: { h: null } } } } } } } } }],
  ])('accepts %s', (_label, value) => {
    expect(parseInventory(value)).toEqual(value);
  });

  it.each([
    ['a list at the top', [], 'inventory: expected a mapping, got a list'],
    ['null at the top', null, 'inventory: expected a mapping, got null'],
    ['a string at the top', 'all', 'inventory: expected a mapping, got a string'],
    ['a list as a group', { all: [] }, 'all: expected a mapping, got a list'],
    ['a number as a group', { all: 3 }, 'all: expected a mapping, got a number'],
    [
      'a list of hosts',
      { all: { children: { web: { hosts: ['web1'] } } } },
      'all.children.web.hosts: expected a mapping, got a list',
    ],
    ['a string of hosts', { all: { hosts: 'web1' } }, 'all.hosts: expected a mapping, got a string'],
    ['list-valued children', { all: { children: ['web'] } }, 'all.children: expected a mapping, got a list'],
    ['a list as vars', { all: { vars: [1] } }, 'all.vars: expected a mapping, got a list'],
    ['a boolean as host vars', { all: { hosts: { web1: true } } }, 'all.hosts.web1: expected a mapping, got a boolean'],
    [
      'a list as host vars',
      { all: { hosts: { '10.0.0.1': [] } } },
      'all.hosts["10.0.0.1"]: expected a mapping, got a list',
    ],
    [
      'a list as a child group',
      { all: { children: { web: ['h'] } } },
      'all.children.web: expected a mapping, got a list',
    ],
    [
      'a typo in a section',
      { all: { host: {} } },
      'all: unexpected key(s) "host" — a group has only hosts, vars and children',
    ],
    [
      'unknown keys',
      { all: { children: { web: { hostvars: {}, groups: {} } } } },
      'all.children.web: unexpected key(s) "hostvars", "groups" — a group has only hosts, vars and children',
    ],
    ['an empty host name', { all: { hosts: { '': {} } } }, 'all.hosts[""]: a host name is empty'],
    [
      'a host name with a space',
      { all: { hosts: { 'web 1': {} } } },
      "all.hosts[\"web 1\"]: host name \"web 1\" contains whitespace, '[', ']', ':' or ','",
    ],
    [
      'a host range',
      { all: { hosts: { 'web[1:3]': {} } } },
      "all.hosts[\"web[1:3]\"]: host name \"web[1:3]\" contains whitespace, '[', ']', ':' or ','",
    ],
    [
      'a host:port name',
      { all: { hosts: { 'web:2222': {} } } },
      "all.hosts[\"web:2222\"]: host name \"web:2222\" contains whitespace, '[', ']', ':' or ','",
    ],
    [
      'a host list name',
      { all: { hosts: { 'a,b': {} } } },
      "all.hosts[\"a,b\"]: host name \"a,b\" contains whitespace, '[', ']', ':' or ','",
    ],
    [
      'a group name with a space',
      { 'my group': {} },
      "[\"my group\"]: group name \"my group\" contains whitespace, '[', ']', ':' or ','",
    ],
    [
      'a child group name with a tab',
      { all: { children: { 'a\tb': {} } } },
      "all.children[\"a\\tb\"]: group name \"a\\tb\" contains whitespace, '[', ']', ':' or ','",
    ],
    ['an empty group name', { '': {} }, '[""]: a group name is empty'],
  ])('refuses %s', (_label, value, problem) => {
    const error = thrown(() => parseInventory(value));
    expect(error.kind).toBe('inventory');
    expect(error.message).toBe(`the inventory is not a valid static inventory: ${problem}`);
    expect(error.help).toMatch(new RegExp(`^${INVENTORY_HELP_START}`));
  });

  it.each([
    ['a host', '{"all":{"hosts":{"__proto__":{}}}}', 'all.hosts.__proto__: "__proto__" is not allowed as a host name'],
    ['a group', '{"__proto__":{}}', '__proto__: "__proto__" is not allowed as a group name'],
    [
      'a variable',
      '{"all":{"vars":{"__proto__":1}}}',
      'all.vars.__proto__: "__proto__" is not allowed as a variable name',
    ],
    [
      'a host variable',
      '{"all":{"hosts":{"h":{"__proto__":{"x":1}}}}}',
      'all.hosts.h.__proto__: "__proto__" is not allowed as a variable name',
    ],
  ])('refuses __proto__ as %s instead of dropping it', (_label, json, problem) => {
    const error = thrown(() => parseInventory(JSON.parse(json)));
    expect(error.message).toBe(`the inventory is not a valid static inventory: ${problem}`);
  });

  it('names every bad path at once', () => {
    const error = thrown(() => parseInventory({ all: { hosts: [], children: { web: { vars: 'x' } } } }));
    expect(error.message).toBe(
      'the inventory is not a valid static inventory: all.hosts: expected a mapping, got a list; all.children.web.vars: expected a mapping, got a string',
    );
  });

  it('recognises the ansible-inventory --list format', () => {
    const error = thrown(() => parseInventory({ _meta: { hostvars: {} }, all: { children: ['ungrouped'] } }));
    expect(error.kind).toBe('inventory');
    expect(error.message).toBe(
      'the inventory is in the `ansible-inventory --list` format (it has `_meta`), not a static inventory',
    );
    expect(error.help).toMatch(new RegExp(`^${INVENTORY_HELP_START}`));
  });
});

describe('formatInventoryPath', () => {
  it.each([
    [[], 'inventory'],
    [['all'], 'all'],
    [['all', 'children', 'web-1', 'hosts'], 'all.children.web-1.hosts'],
    [['all', 'hosts', '10.0.0.1'], 'all.hosts["10.0.0.1"]'],
    [['web.example'], '["web.example"]'],
    [['all', 'hosts', 'a"b'], 'all.hosts["a\\"b"]'],
    [['all', 'hosts', '\u001b'], 'all.hosts["\\u001b"]'],
  ] as const)('%j → %s', (path, text) => {
    expect(formatInventoryPath(path)).toBe(text);
  });
});

const host = (name: string, extra: Partial<DerivedHost> = {}): DerivedHost => ({
  name,
  address: name,
  port: 22,
  local: false,
  ...extra,
});

/** Inventories whose derived hosts are also checked against ansible-inventory below. */
const PRECEDENCE_CASES: [string, StaticInventory, DerivedHost[]][] = [
  [
    'the seed example',
    { all: { children: { web: { hosts: { web1: { ansible_host: '203.0.113.7', ansible_user: 'root' } } } } } },
    [host('web1', { address: '203.0.113.7', user: 'root' })],
  ],
  ['defaults', { all: { hosts: { 'web1.example.com': null } } }, [host('web1.example.com')]],
  [
    'a port as digits in a string',
    { all: { hosts: { a: { ansible_port: '2222' }, b: { ansible_port: 2200 } } } },
    [host('a', { port: 2222 }), host('b', { port: 2200 })],
  ],
  [
    'a local connection',
    { all: { hosts: { localhost: { ansible_connection: 'local' }, box: { ansible_connection: 'ssh' } } } },
    [host('box'), host('localhost', { local: true })],
  ],
  [
    'host vars override group vars',
    { all: { vars: { ansible_user: 'admin', ansible_port: 2222 }, hosts: { a: { ansible_user: 'root' }, b: null } } },
    [host('a', { user: 'root', port: 2222 }), host('b', { user: 'admin', port: 2222 })],
  ],
  [
    'child group vars override parent group vars',
    {
      all: {
        vars: { ansible_user: 'all-user', ansible_port: 2201, ansible_connection: 'local' },
        children: {
          web: {
            vars: { ansible_user: 'web-user', ansible_connection: 'ssh' },
            children: { edge: { vars: { ansible_port: 2203 }, hosts: { e1: null } } },
            hosts: { w1: null },
          },
        },
        hosts: { top: null },
      },
    },
    [
      host('e1', { user: 'web-user', port: 2203 }),
      host('top', { user: 'all-user', port: 2201, local: true }),
      host('w1', { user: 'web-user', port: 2201 }),
    ],
  ],
  [
    'a host in several groups appears once; the deeper group wins',
    {
      all: {
        children: {
          web: { vars: { ansible_user: 'web' }, hosts: { h: null } },
          prod: {
            children: { prod_web: { vars: { ansible_user: 'prod_web' }, hosts: { h: null } } },
            vars: { ansible_user: 'prod' },
          },
        },
      },
    },
    [host('h', { user: 'prod_web' })],
  ],
  [
    'same depth: the group later in name order wins',
    {
      all: {
        children: {
          zeta: { vars: { ansible_port: 2001 }, hosts: { h: null } },
          alpha: { vars: { ansible_port: 2002 }, hosts: { h: null } },
        },
      },
    },
    [host('h', { port: 2001 })],
  ],
  [
    'same depth: ansible_group_priority beats name order',
    {
      all: {
        children: {
          zeta: { vars: { ansible_port: 2001 }, hosts: { h: null } },
          alpha: { vars: { ansible_port: 2002, ansible_group_priority: 10 }, hosts: { h: null } },
        },
      },
    },
    [host('h', { port: 2002 })],
  ],
  [
    'top-level groups hang under all, so they outrank it',
    { web: { vars: { ansible_user: 'web' }, hosts: { h: null } }, all: { vars: { ansible_user: 'all' } } },
    [host('h', { user: 'web' })],
  ],
  [
    'a group defined twice merges its vars',
    {
      all: {
        children: {
          web: { vars: { ansible_user: 'u1', ansible_port: 2001 } },
          prod: { children: { web: { vars: { ansible_user: 'u2' }, hosts: { h: null } } } },
        },
      },
    },
    [host('h', { user: 'u2', port: 2001 })],
  ],
  [
    'a group reached by two paths takes its deepest depth',
    {
      all: {
        children: {
          mid: { vars: { ansible_user: 'mid' }, children: { leaf: { hosts: { h: null } } } },
          leaf: { vars: { ansible_user: 'leaf' } },
          other: { vars: { ansible_user: 'other' }, hosts: { h: null } },
        },
      },
    },
    [host('h', { user: 'leaf' })],
  ],
  [
    'host vars given twice merge, the later definition winning',
    {
      all: {
        hosts: { h: { ansible_user: 'first', ansible_port: 2001 } },
        children: { web: { hosts: { h: { ansible_user: 'second' } } } },
      },
    },
    [host('h', { user: 'second', port: 2001 })],
  ],
  [
    'IPv6 and mixed-case addresses',
    {
      all: {
        hosts: { v6: { ansible_host: '2001:db8::1', ansible_port: 2222 }, up: { ansible_host: 'Web1.Example.COM' } },
      },
    },
    [host('up', { address: 'Web1.Example.COM' }), host('v6', { address: '2001:db8::1', port: 2222 })],
  ],
  [
    'IP addresses in the spelling ssh looks host keys up by, also from group vars',
    {
      all: {
        hosts: { long: { ansible_host: 'FD9F:DBA8:0011:0002:0000:0000:0000:0002' }, v4: { ansible_host: '10.0.0.1' } },
        children: { mapped: { vars: { ansible_host: '::FFFF:c000:201' }, hosts: { m: null } } },
      },
    },
    [
      host('long', { address: 'fd9f:dba8:11:2::2' }),
      host('m', { address: '::ffff:192.0.2.1' }),
      host('v4', { address: '10.0.0.1' }),
    ],
  ],
];

describe('deriveHosts', () => {
  it.each(PRECEDENCE_CASES)('%s', (_label, inv, expected) => {
    expect(deriveHosts(parseInventory(inv))).toEqual(expected);
  });

  it('derives no hosts from the fallback inventory', () => {
    expect(deriveHosts({ all: { vars: { region: 'eu' } } })).toEqual([]);
    expect(deriveHosts({})).toEqual([]);
  });

  it.each([
    [
      { all: { hosts: { h: { ansible_port: 'ssh' } } } },
      'host "h": ansible_port "ssh" is not a port number',
      'set ansible_port to a whole number from 1 to 65535',
    ],
    [
      { all: { hosts: { h: { ansible_port: 0 } } } },
      'host "h": ansible_port 0 is not a port number',
      'set ansible_port to a whole number from 1 to 65535',
    ],
    [
      { all: { hosts: { h: { ansible_port: 65536 } } } },
      'host "h": ansible_port 65536 is not a port number',
      'set ansible_port to a whole number from 1 to 65535',
    ],
    [
      { all: { hosts: { h: { ansible_port: 22.5 } } } },
      'host "h": ansible_port 22.5 is not a port number',
      'set ansible_port to a whole number from 1 to 65535',
    ],
    [
      { all: { hosts: { h: { ansible_port: '-22' } } } },
      'host "h": ansible_port "-22" is not a port number',
      'set ansible_port to a whole number from 1 to 65535',
    ],
    [
      { all: { hosts: { h: { ansible_port: ' 22' } } } },
      'host "h": ansible_port " 22" is not a port number',
      'set ansible_port to a whole number from 1 to 65535',
    ],
    [
      { all: { hosts: { h: { ansible_port: null } } } },
      'host "h": ansible_port null is not a port number',
      'set ansible_port to a whole number from 1 to 65535',
    ],
    [
      { all: { vars: { ansible_port: [22] }, hosts: { h: null } } },
      'host "h": ansible_port a list is not a port number',
      'set ansible_port to a whole number from 1 to 65535',
    ],
    [
      { all: { hosts: { h: { ansible_host: null } } } },
      'host "h": ansible_host must be a non-empty string, got null',
      'set ansible_host to a string, or leave it out',
    ],
    [
      { all: { hosts: { h: { ansible_host: '' } } } },
      'host "h": ansible_host must be a non-empty string, got a string',
      'set ansible_host to a string, or leave it out',
    ],
    [
      { all: { hosts: { h: { ansible_host: 10 } } } },
      'host "h": ansible_host must be a non-empty string, got a number',
      'set ansible_host to a string, or leave it out',
    ],
    [
      { all: { hosts: { h: { ansible_user: 0 } } } },
      'host "h": ansible_user must be a non-empty string, got a number',
      'set ansible_user to a string, or leave it out',
    ],
    [
      { all: { hosts: { h: { ansible_connection: true } } } },
      'host "h": ansible_connection must be a non-empty string, got a boolean',
      'set ansible_connection to a string, or leave it out',
    ],
    [
      { all: { hosts: { h: { ansible_host: '-oProxyCommand=x' } } } },
      'host "h": address "-oProxyCommand=x" is not a host name or IP address',
      'set ansible_host to a DNS name or an IPv4/IPv6 address (no brackets, no port, no templates)',
    ],
    [
      { all: { hosts: { h: { ansible_host: '[::1]' } } } },
      'host "h": address "[::1]" is not a host name or IP address',
      'set ansible_host to a DNS name or an IPv4/IPv6 address (no brackets, no port, no templates)',
    ],
    [
      { all: { hosts: { h: { ansible_host: '{{ ip }}' } } } },
      'host "h": address "{{ ip }}" is not a host name or IP address',
      'set ansible_host to a DNS name or an IPv4/IPv6 address (no brackets, no port, no templates)',
    ],
    [
      { all: { hosts: { h: { ansible_host: 'a b' } } } },
      'host "h": address "a b" is not a host name or IP address',
      'set ansible_host to a DNS name or an IPv4/IPv6 address (no brackets, no port, no templates)',
    ],
    [
      { all: { hosts: { '-h': null } } },
      'host "-h": address "-h" is not a host name or IP address',
      'set ansible_host to a DNS name or an IPv4/IPv6 address (no brackets, no port, no templates)',
    ],
    [
      { all: { hosts: { h: { ansible_user: '-oX' } } } },
      'host "h": ansible_user "-oX" is not a user name',
      "set ansible_user to letters, digits, '.', '_' and '-'",
    ],
    [
      { all: { hosts: { h: { ansible_user: 'ro ot' } } } },
      'host "h": ansible_user "ro ot" is not a user name',
      "set ansible_user to letters, digits, '.', '_' and '-'",
    ],
    [
      { all: { hosts: { h: { ansible_ssh_host: '10.0.0.1' } } } },
      'host "h": uses ansible_ssh_host',
      'write ansible_host instead of ansible_ssh_host',
    ],
    [
      { all: { vars: { ansible_ssh_port: 2222 }, hosts: { h: null } } },
      'group "all": uses ansible_ssh_port',
      'write ansible_port instead of ansible_ssh_port',
    ],
    [
      { all: { hosts: { h: { ansible_ssh_user: 'root' } } } },
      'host "h": uses ansible_ssh_user',
      'write ansible_user instead of ansible_ssh_user',
    ],
    [
      { all: { children: { g: { vars: { ansible_group_priority: 'high' }, hosts: { h: null } } } } },
      'group "g": ansible_group_priority must be a whole number',
      'set ansible_group_priority to an integer, or remove it',
    ],
    [
      { all: { children: { a: { children: { b: { children: { a: null } } } } } } },
      'group "a" is its own ancestor (a children loop)',
      'remove one of the children entries that form the loop',
    ],
    [
      { web: { children: { all: { hosts: { h: null } } } } },
      'group "web" is its own ancestor (a children loop)',
      'remove one of the children entries that form the loop',
    ],
  ])('refuses %j', (inv, message, help) => {
    const error = thrown(() => deriveHosts(parseInventory(inv)));
    expect(error.kind).toBe('inventory');
    expect(error.message).toBe(message);
    expect(error.help).toBe(help);
  });

  it('accepts a priority given as digits in a string', () => {
    const inv = {
      all: {
        children: {
          zeta: { vars: { ansible_port: 2001 }, hosts: { h: null } },
          alpha: { vars: { ansible_port: 2002, ansible_group_priority: '5' }, hosts: { h: null } },
        },
      },
    };
    expect(deriveHosts(inv)).toEqual([host('h', { port: 2002 })]);
  });
});

/**
 * The precedence rules above are ansible's: ask ansible-inventory itself what
 * each host's connection variables are, through the same file a play reads.
 */
describe('deriveHosts agrees with ansible-inventory', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'exocomp-inventory-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it.each(PRECEDENCE_CASES.map(([label, inv], index) => [label, inv, index] as const))(
    '%s',
    async (_label, inv, index) => {
      // The file ansible reads: YAML with every string !unsafe.
      const file = join(dir, `case-${index}.yml`);
      await writeFile(file, renderAnsibleInventory(parseInventory(inv)));
      const result = await runProcess('ansible-inventory', ['-i', file, '--list'], {
        env: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          HOME: dir,
          ANSIBLE_LOCAL_TEMP: join(dir, 'tmp'),
          ANSIBLE_INVENTORY_UNPARSED_FAILED: 'true',
          ANSIBLE_INVENTORY_ENABLED: 'yaml',
          ANSIBLE_NOCOLOR: '1',
        },
      });
      expect(result.stderr).not.toMatch(/ERROR/);
      expect(result.code).toBe(0);
      const { _meta: meta, ...groups } = JSON.parse(result.stdout) as {
        _meta: { hostvars: Record<string, Record<string, unknown>> };
      } & Record<string, { hosts?: string[] }>;
      // Hosts without vars are listed in their groups only, not in hostvars.
      const names = new Set(Object.values(groups).flatMap((group) => group.hosts ?? []));
      const fromAnsible = [...names]
        .map((name) => {
          // ansible-inventory shows an unsafe string as {"__ansible_unsafe": text}: every string must be one.
          const vars = Object.fromEntries(
            Object.entries(meta.hostvars[name] ?? {}).map(([key, value]) => {
              if (typeof value === 'string')
                throw new Error(`${name}.${key} reached ansible as a plain (templatable) string`);
              const unsafe = (value as { __ansible_unsafe?: unknown } | null)?.__ansible_unsafe;
              return [key, unsafe ?? value];
            }),
          );
          const user = vars.ansible_user as string | undefined;
          return {
            name,
            address: (vars.ansible_host as string | undefined) ?? name,
            port: Number(vars.ansible_port ?? 22),
            ...(user === undefined ? {} : { user }),
            local: vars.ansible_connection === 'local',
          };
        })
        .sort((a, b) => (a.name < b.name ? -1 : 1));
      expect(deriveHosts(parseInventory(inv))).toEqual(fromAnsible);
    },
  );
});

describe('IP addresses in one spelling', () => {
  it.each([
    ['fd9f:dba8:0011:2::2', 'fd9f:dba8:11:2::2'],
    ['FD9F:DBA8:11:2::2', 'fd9f:dba8:11:2::2'],
    ['0:0:0:0:0:0:0:1', '::1'],
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'],
    ['2001:0db8:0:0:0:0:0:0', '2001:db8::'],
    ['::FFFF:c000:201', '::ffff:192.0.2.1'],
    ['::ffff:192.0.2.1', '::ffff:192.0.2.1'],
    ['fe80::0001%eth0', 'fe80::1%eth0'],
    ['10.0.0.1', '10.0.0.1'],
    ['Web1.Example.COM', 'Web1.Example.COM'],
  ])('ansible_host %s → %s, in the inventory ansible reads as well', (given, canonical) => {
    const inv = parseInventory({ all: { hosts: { h: { ansible_host: given } } } });
    expect(deriveHosts(inv)[0]?.address).toBe(canonical);
    expect(renderAnsibleInventory(inv)).toContain(`"ansible_host": !unsafe "${canonical}"`);
  });

  it('is the spelling ssh itself derives (ssh -G), also through a ProxyCommand', async () => {
    for (const given of ['FD9F:DBA8:0011:0002:0000:0000:0000:0002', '::FFFF:c000:201', '0:0:0:0:0:0:0:1']) {
      const [address] = deriveHosts(parseInventory({ all: { hosts: { h: { ansible_host: given } } } }));
      for (const proxy of ['none', 'nc %h %p']) {
        const shown = await runProcess('ssh', ['-G', '-F', '/dev/null', '-o', `ProxyCommand=${proxy}`, given]);
        expect(shown.stdout).toMatch(new RegExp(`^hostname ${address?.address.replace(/\./g, '\\.')}$`, 'm'));
      }
    }
  });

  it.each(['010.0.0.1', '127.1', '12345', '0x7f.0.0.1'])(
    'refuses %s, which ssh would read as another IPv4 address, naming the host',
    (address) => {
      const error = thrown(() => deriveHosts(parseInventory({ all: { hosts: { h: { ansible_host: address } } } })));
      expect(error.message).toBe(
        `host "h": address "${address}" is ambiguous: ssh reads it as a numeric IPv4 address, but it is not written as four decimal numbers without leading zeros (a leading 0 is octal, 0x hex, and missing parts are filled in)`,
      );
      expect(error.help).toBe(
        'set ansible_host to the IPv4 address as four decimal numbers (e.g. 10.0.0.1), or to a DNS name',
      );
    },
  );

  it('refuses such a host name used as its address too', () => {
    expect(thrown(() => deriveHosts(parseInventory({ all: { hosts: { '10.0.0.01': null } } }))).message).toMatch(
      /^host "10\.0\.0\.01": address "10\.0\.0\.01" is ambiguous/,
    );
  });
});

describe('knownHostsName', () => {
  it.each([
    ['203.0.113.7', 22, '203.0.113.7'],
    ['203.0.113.7', 2222, '[203.0.113.7]:2222'],
    ['Web1.Example.COM', 22, 'web1.example.com'],
    ['Web1.Example.COM', 2200, '[web1.example.com]:2200'],
    ['2001:DB8::1', 22, '2001:db8::1'],
    ['2001:db8::1', 2222, '[2001:db8::1]:2222'],
  ])('%s port %d → %s', (address, port, name) => {
    expect(knownHostsName(address, port)).toBe(name);
  });
});

describe('fallbackInventory', () => {
  it('exposes every non-sensitive output as a var of all, and no hosts', () => {
    const inv = fallbackInventory({
      region: { value: 'eu', sensitive: false },
      db_password: { value: 'hunter2', sensitive: true },
      ips: { value: ['10.0.0.1'], sensitive: false },
      config: { value: { a: { b: 1 } }, sensitive: false },
    });
    expect(inv).toEqual({ all: { vars: { config: { a: { b: 1 } }, ips: ['10.0.0.1'], region: 'eu' } } });
    expect(Object.keys(inv.all?.vars ?? {})).toEqual(['config', 'ips', 'region']);
    expect(JSON.stringify(inv)).not.toContain('hunter2');
    expect(deriveHosts(inv)).toEqual([]);
  });

  it('treats an output whose sensitivity is unknown as sensitive', () => {
    const outputs = { secret: { value: 'hunter2' } } as unknown as Parameters<typeof fallbackInventory>[0];
    expect(fallbackInventory(outputs)).toEqual({ all: { vars: {} } });
  });

  it('gives a valid inventory for no outputs', () => {
    expect(parseInventory(fallbackInventory({}))).toEqual({ all: { vars: {} } });
  });
});

describe('captureInventory', () => {
  const seedInventory = {
    all: {
      children: { web: { hosts: { web1: { ansible_host: '203.0.113.7' }, web2: { ansible_host: '203.0.113.8' } } } },
    },
  };

  it('uses the ansible_inventory output', () => {
    const captured = captureInventory({
      ansible_inventory: { value: seedInventory, sensitive: false },
      region: { value: 'eu', sensitive: false },
    });
    expect(captured).toEqual({ inventory: seedInventory, source: 'ansible_inventory', outputCount: 1, hostCount: 2 });
  });

  it('falls back to the non-sensitive outputs when there is no ansible_inventory', () => {
    const captured = captureInventory({
      region: { value: 'eu', sensitive: false },
      zone: { value: 'a', sensitive: false },
      db_password: { value: 'hunter2', sensitive: true },
    });
    expect(captured).toEqual({
      inventory: { all: { vars: { region: 'eu', zone: 'a' } } },
      source: 'fallback',
      outputCount: 2,
      hostCount: 0,
    });
  });

  it('falls back for no outputs at all', () => {
    expect(captureInventory({})).toEqual({
      inventory: { all: { vars: {} } },
      source: 'fallback',
      outputCount: 0,
      hostCount: 0,
    });
  });

  it('refuses a sensitive ansible_inventory, without echoing it', () => {
    const error = thrown(() =>
      captureInventory({ ansible_inventory: { value: { all: { vars: { token: 'hunter2' } } }, sensitive: true } }),
    );
    expect(error.kind).toBe('inventory');
    expect(error.message).toBe(
      'the ansible_inventory output is marked sensitive, but the inventory is stored in clear',
    );
    expect(error.help).toContain('drop sensitive = true');
    expect(`${error.message} ${error.help}`).not.toContain('hunter2');
  });

  it('refuses a malformed ansible_inventory rather than falling back', () => {
    const error = thrown(() =>
      captureInventory({ ansible_inventory: { value: { all: { hosts: ['web1'] } }, sensitive: false } }),
    );
    expect(error.kind).toBe('inventory');
    expect(error.message).toBe(
      'the ansible_inventory output is not a valid static inventory: all.hosts: expected a mapping, got a list',
    );
  });

  it('refuses an ansible_inventory whose hosts cannot be derived', () => {
    const error = thrown(() =>
      captureInventory({
        ansible_inventory: { value: { all: { hosts: { h: { ansible_port: 'x' } } } }, sensitive: false },
      }),
    );
    expect(error.message).toBe('host "h": ansible_port "x" is not a port number');
  });

  it('does not read ansible_inventory from the prototype', () => {
    const outputs = Object.create({ ansible_inventory: { value: seedInventory, sensitive: false } }) as Record<
      string,
      never
    >;
    expect(captureInventory(outputs).source).toBe('fallback');
  });
});

describe('captureEventLine', () => {
  it.each([
    [
      2,
      '/data/inventories/edge.json',
      0,
      'captured 2 output(s) to inventory /data/inventories/edge.json naming 0 host(s)',
    ],
    [1, 'inventories/edge.json', 3, 'captured 1 output(s) to inventory inventories/edge.json naming 3 host(s)'],
    [0, 'x.json', 0, 'captured 0 output(s) to inventory x.json naming 0 host(s)'],
  ])('%d outputs, %s, %d hosts', (outputs, path, hosts, line) => {
    expect(captureEventLine(outputs, path, hosts)).toBe(line);
  });
});
