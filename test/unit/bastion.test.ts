import { describe, expect, it } from 'vitest';
import { ExocompError } from '../../src/domain/errors.js';
import { deriveHosts, parseInventory } from '../../src/domain/inventory.js';
import { formatBastion, hopUser, parseBastion, throughRunBastion, type Hop } from '../../src/domain/bastion.js';

const hostsOf = (inventory: unknown) => deriveHosts(parseInventory(inventory));

function refusal(run: () => unknown): ExocompError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ExocompError);
    return error as ExocompError;
  }
  throw new Error('expected a refusal');
}

describe('exocomp_bastion: the inventory host a host is reached through', () => {
  it('resolves a group var to the named host, with its address, port and user', () => {
    const hosts = hostsOf({
      all: {
        hosts: { jump: { ansible_host: 'fd00::1', ansible_port: 2222, ansible_user: 'ops' } },
        children: { app: { hosts: { a: { ansible_host: '10.0.0.2' }, b: null }, vars: { exocomp_bastion: 'jump' } } },
      },
    });
    const hop = { name: 'jump', address: 'fd00::1', port: 2222, user: 'ops' };
    expect(hosts.find((h) => h.name === 'a')?.via).toEqual([hop]);
    expect(hosts.find((h) => h.name === 'b')?.via).toEqual([hop]);
    expect(hosts.find((h) => h.name === 'jump')).not.toHaveProperty('via');
  });

  it('follows a bastion behind another (two hops, outer first), and refuses a third', () => {
    const two = hostsOf({
      all: {
        hosts: {
          outer: { ansible_host: '198.18.0.1' },
          inner: { ansible_host: '10.1.0.1', exocomp_bastion: 'outer' },
          app: { ansible_host: '10.2.0.1', exocomp_bastion: 'inner' },
        },
      },
    });
    expect(two.find((h) => h.name === 'app')?.via?.map((h) => h.name)).toEqual(['outer', 'inner']);
    const three = refusal(() =>
      hostsOf({
        all: {
          hosts: {
            h1: { ansible_host: '198.18.0.1' },
            h2: { ansible_host: '10.1.0.1', exocomp_bastion: 'h1' },
            h3: { ansible_host: '10.2.0.1', exocomp_bastion: 'h2' },
            app: { ansible_host: '10.3.0.1', exocomp_bastion: 'h3' },
          },
        },
      }),
    );
    expect(three.message).toMatch(/host "app": exocomp_bastion leads through 3 hops \(h1 → h2 → h3\); at most 2/);
  });

  it('refuses loops, itself, an unknown host and a local host', () => {
    expect(
      refusal(() => hostsOf({ all: { hosts: { a: { exocomp_bastion: 'b' }, b: { exocomp_bastion: 'a' } } } })).message,
    ).toMatch(/forms a loop/);
    expect(refusal(() => hostsOf({ all: { hosts: { a: { exocomp_bastion: 'a' } } } })).message).toMatch(/loop/);
    expect(refusal(() => hostsOf({ all: { hosts: { a: { exocomp_bastion: 'nobody' } } } })).message).toMatch(
      /host "a": exocomp_bastion names "nobody", which is no SSH host of the inventory/,
    );
    expect(
      refusal(() => hostsOf({ all: { hosts: { c: { ansible_connection: 'local' }, a: { exocomp_bastion: 'c' } } } }))
        .message,
    ).toMatch(/no SSH host/);
  });

  it('refuses one address reached two ways', () => {
    expect(
      refusal(() =>
        hostsOf({
          all: {
            hosts: {
              j: { ansible_host: '198.18.0.1' },
              a: { ansible_host: '10.0.0.5', exocomp_bastion: 'j' },
              b: { ansible_host: '10.0.0.5', ansible_port: 2222 },
            },
          },
        }),
      ).message,
    ).toMatch(/reaches address "10.0.0.5" another way than host "a"/);
  });

  describe('hostile data: never an ssh option, a template or a token', () => {
    const hostile = [
      '-oProxyCommand=touch /tmp/pwned',
      '{{ lookup("pipe", "id") }}',
      'jump\nProxyCommand x',
      '%h',
      'a b',
    ];
    it.each(hostile)('exocomp_bastion %j is refused, the variable named', (value) => {
      const error = refusal(() =>
        hostsOf({ all: { hosts: { jump: { ansible_host: '10.0.0.1' }, a: { exocomp_bastion: value } } } }),
      );
      expect(error.message).toMatch(/host "a": exocomp_bastion /);
    });

    it('a bastion whose address carries a %-token is refused as a bastion host, though ansible_host allows a zone', () => {
      const error = refusal(() =>
        hostsOf({ all: { hosts: { jump: { ansible_host: 'fe80::1%h' }, a: { exocomp_bastion: 'jump' } } } }),
      );
      expect(error.message).toMatch(/bastion host "fe80::1%h" is not a host name or IP address/);
    });

    it('a non-string exocomp_bastion is refused', () => {
      expect(refusal(() => hostsOf({ all: { hosts: { a: { exocomp_bastion: ['-o', 'x'] } } } })).message).toMatch(
        /exocomp_bastion must be a non-empty string/,
      );
    });
  });
});

describe('the run’s bastion (--bastion, the bastion input): [user@]host[:port], checked like a hop', () => {
  it('parses host, user@host, user@host:port, [IPv6]:port and a bare IPv6 address', () => {
    expect(parseBastion('jump.example', '--bastion')).toEqual({
      name: 'jump.example',
      address: 'jump.example',
      port: 22,
    });
    expect(parseBastion('ops@198.51.100.7:2222', '--bastion')).toEqual({
      name: '198.51.100.7',
      address: '198.51.100.7',
      port: 2222,
      user: 'ops',
    });
    expect(parseBastion('ops@[fd00:26::1]:2200', '--bastion')).toMatchObject({ address: 'fd00:26::1', port: 2200 });
    expect(parseBastion('fd00:26::1', '--bastion')).toMatchObject({ address: 'fd00:26::1', port: 22 });
    expect(parseBastion('[fd00:26::1]', '--bastion')).toMatchObject({ address: 'fd00:26::1', port: 22 });
  });

  it('spells an IP address as ssh looks its key up, as the inventory does', () => {
    expect(parseBastion('ops@[FD00:0026:0000:0000:0000:0000:0000:0001]:2200', '--bastion')).toEqual({
      name: 'fd00:26::1',
      address: 'fd00:26::1',
      port: 2200,
      user: 'ops',
    });
    expect(parseBastion('::FFFF:c000:201', '--bastion')).toMatchObject({ address: '::ffff:192.0.2.1' });
    // The run's bastion is recognised as the inventory host at its address, whichever way each spells it.
    const inventory = hostsOf({
      all: { hosts: { jump: { ansible_host: 'fd00:26:0::1' }, a: { ansible_host: 'fd00::2' } } },
    });
    const routed = throughRunBastion(inventory, parseBastion('[fd00:0026::0001]', '--bastion'), 'exocomp');
    expect(routed.find((h) => h.name === 'jump')).not.toHaveProperty('via');
    expect(routed.find((h) => h.name === 'a')?.via?.map((hop) => hop.address)).toEqual(['fd00:26::1']);
  });

  it('writes back what it parsed, so the workflow records and re-reads the same hop', () => {
    for (const text of ['ops@[fd00:26::1]:2200', 'jump.example:22', 'ops@198.51.100.7:2222']) {
      const hop = parseBastion(text, '--bastion');
      expect(parseBastion(formatBastion(hop), 'recorded')).toEqual(hop);
    }
    expect(formatBastion(parseBastion('jump', 'x'))).toBe('jump:22');
  });

  it.each([
    ['an ssh option', '-oProxyCommand=touch /tmp/pwned', 'is not [user@]host[:port]'],
    ['an option as the host', 'ops@-oProxyCommand=x', 'bastion host'],
    ['an option as the user', '-oX@jump', 'bastion user'],
    ['a template', '{{ lookup("pipe","id") }}', 'is not [user@]host[:port]'],
    ['a template in the host', 'ops@{{x}}', 'bastion host'],
    ['a %-token', 'ops@jump%h', 'bastion host'],
    ['an IPv6 zone (a %-token to ssh)', 'ops@[fe80::1%eth0]:22', 'bastion host'],
    ['a newline', 'jump\n-oProxyCommand=x', 'is not [user@]host[:port]'],
    ['a space', 'jump -p 22', 'is not [user@]host[:port]'],
    ['non-ASCII', 'jümp', 'is not [user@]host[:port]'],
    ['a port out of range', 'jump:70000', 'bastion port'],
    ['a port that is no number', 'jump:ssh', 'bastion port'],
    ['an empty host', 'ops@:22', 'bastion host'],
    ['two users', 'a@b@jump', 'bastion host'],
    ['nothing', '', 'is not [user@]host[:port]'],
    ['an IPv4 address ssh reads in octal', 'ops@010.0.0.1', 'bastion host "010.0.0.1" is ambiguous'],
    ['a short IPv4 address', '127.1:22', 'bastion host "127.1" is ambiguous'],
  ])('refuses %s, naming the setting and the field', (_what, text, field) => {
    const error = refusal(() => parseBastion(text, 'the bastion input'));
    expect(error.message).toContain('the bastion input');
    expect(error.message).toContain(field);
    expect(error.message).not.toContain('\n');
  });

  const hosts = [
    { name: 'a', address: '10.0.0.2', port: 22, local: false },
    { name: 'ctl', address: 'localhost', port: 22, local: true },
    { name: 'jumphost', address: '198.51.100.7', port: 2222, local: false },
    { name: 'inner', address: '10.0.1.2', port: 22, local: false, via: [{ name: 'b', address: '10.0.0.3', port: 22 }] },
  ];
  const run = parseBastion('ops@198.51.100.7:2222', '--bastion');

  it('goes in front of every SSH host, before an inventory bastion; not the bastion itself, not a local host', () => {
    const routed = new Map(throughRunBastion(hosts, run, 'exocomp').map((h) => [h.name, h.via]));
    const hop = { ...run, keepsUser: true };
    expect(routed.get('a')).toEqual([hop]);
    expect(routed.get('inner')).toEqual([hop, { name: 'b', address: '10.0.0.3', port: 22 }]);
    expect(routed.get('ctl')).toBeUndefined();
    expect(routed.get('jumphost')).toBeUndefined();
    expect(throughRunBastion(hosts, undefined, 'exocomp')).toEqual(hosts);
  });

  // Issue 40: the play's user replaced the user given with the run's bastion after onboarding.
  it("keeps the user given with the run's bastion in every connection, whatever the play's user", () => {
    const [via] = throughRunBastion(hosts, run, 'exocomp').map((h) => h.via);
    const hop: Hop = via![0]!;
    for (const playUser of [undefined, 'exocomp', 'deploy']) expect(hopUser(hop, playUser)).toBe('ops');
  });

  it("logs in to the run's bastion given without a user as the play's user, in every connection", () => {
    const [via] = throughRunBastion(hosts, parseBastion('198.51.100.7', '--bastion'), 'deploy').map((h) => h.via);
    const hop: Hop = via![0]!;
    expect(hop.user).toBe('deploy');
    // The wait, the scan and onboarding have no play's user of their own: the same user all the same.
    for (const playUser of [undefined, 'root', 'deploy']) expect(hopUser(hop, playUser)).toBe('deploy');
    expect(formatBastion(hop)).toBe('deploy@198.51.100.7:22');
  });

  it("logs in to an inventory bastion as its ansible_user until a play's user replaces it, as on every host", () => {
    const inventoryHop: Hop = { name: 'b', address: '10.0.0.3', port: 22, user: 'admin' };
    expect(hopUser(inventoryHop, undefined)).toBe('admin');
    expect(hopUser(inventoryHop, 'exocomp')).toBe('exocomp');
    expect(hopUser({ name: 'b', address: '10.0.0.3', port: 22 }, undefined)).toBeUndefined();
  });

  it('refuses a third hop', () => {
    const deep = {
      name: 'deep',
      address: '10.0.2.2',
      port: 22,
      local: false,
      via: [hosts[3]!.via![0]!, hosts[3]!.via![0]!],
    };
    expect(refusal(() => throughRunBastion([deep], run, 'exocomp')).message).toContain('3 hops');
  });
});
