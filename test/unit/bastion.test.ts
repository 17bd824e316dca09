import { describe, expect, it } from 'vitest';
import { ExocompError } from '../../src/domain/errors.js';
import { deriveHosts, parseInventory } from '../../src/domain/inventory.js';

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
