import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/domain/errors.js';
import { deriveHosts, parseInventory } from '../../src/domain/inventory.js';
import {
  formatShard,
  hostsOfShard,
  parseShardNumber,
  parseShardSpec,
  recommendShards,
  restrictInventory,
  shardFromGitLabEnv,
  shardOf,
  splitIntoShards,
} from '../../src/domain/shard.js';
import { thrown } from '../support/errors.js';

const hostNames = (count: number, prefix = 'web') =>
  Array.from({ length: count }, (_, i) => `${prefix}${i + 1}.example.net`);
const SHARD_COUNTS = Array.from({ length: 16 }, (_, i) => i + 1);

describe('splitIntoShards', () => {
  it.each(SHARD_COUNTS)('puts every one of 100 hosts in exactly one of %i shards', (total) => {
    const hosts = hostNames(100);
    const shards = splitIntoShards(hosts, total);
    expect(shards).toHaveLength(total);
    expect(shards.flat().sort()).toEqual([...hosts].sort());
    for (const [i, shard] of shards.entries()) {
      expect(hostsOfShard(hosts, { index: i + 1, total })).toEqual(shard);
      for (const host of shard) expect(shardOf(host, total)).toBe(i + 1);
    }
  });

  it.each(SHARD_COUNTS)('adding one host to 100 moves at most 100/%i + 1 of the others', (total) => {
    const before = hostNames(100);
    const after = [...before, 'late-joiner.example.net'];
    const shardBefore = shardMap(splitIntoShards(before, total));
    const shardAfter = shardMap(splitIntoShards(after, total));
    const moved = before.filter((host) => shardBefore.get(host) !== shardAfter.get(host));
    expect(moved.length).toBeLessThanOrEqual(100 / total + 1);
    // Rendezvous hashing depends on the host alone: nothing moves at all.
    expect(moved).toEqual([]);
  });

  it.each(SHARD_COUNTS.slice(0, 15))(
    'going from %i shards to one more moves only hosts into the new shard, about 1/(N+1)',
    (total) => {
      const hosts = hostNames(1000);
      const moved = hosts.filter((host) => shardOf(host, total) !== shardOf(host, total + 1));
      for (const host of moved) expect(shardOf(host, total + 1)).toBe(total + 1);
      const expected = 1000 / (total + 1);
      // Binomial spread: far inside 4 standard deviations for these fixed names.
      expect(Math.abs(moved.length - expected)).toBeLessThan(4 * Math.sqrt(expected) + 5);
    },
  );

  it('spreads 1,000 hosts over 8 shards roughly evenly', () => {
    const sizes = splitIntoShards(hostNames(1000), 8).map((s) => s.length);
    for (const size of sizes) expect(size).toBeGreaterThan(125 - 50);
    for (const size of sizes) expect(size).toBeLessThan(125 + 50);
  });

  it('is a partition for any host set and shard count (property)', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.string({ minLength: 1, maxLength: 20 }), { maxLength: 40 }),
        fc.integer({ min: 1, max: 16 }),
        (hosts, total) => {
          const shards = splitIntoShards(hosts, total);
          expect(shards.flat().sort()).toEqual([...hosts].sort());
          // A host's shard does not depend on which other hosts exist.
          for (const host of hosts)
            expect(hostsOfShard([host], { index: shardOf(host, total), total })).toEqual([host]);
        },
      ),
    );
  });

  it('is stable across releases: fixed names keep their shards', () => {
    // A change here reshuffles every fleet's shards: it needs a release note, not a silent update.
    expect(['web1', 'web2', 'web3', 'db1', 'db2', 'cache1'].map((h) => shardOf(h, 3))).toMatchInlineSnapshot(`
      [
        3,
        3,
        2,
        3,
        2,
        1,
      ]
    `);
  });
});

function shardMap(shards: string[][]): Map<string, number> {
  return new Map(shards.flatMap((shard, i) => shard.map((host) => [host, i + 1] as const)));
}

describe('shard specs', () => {
  it.each([
    ['1/1', { index: 1, total: 1 }],
    ['2/3', { index: 2, total: 3 }],
    [' 16 / 16 ', { index: 16, total: 16 }],
    ['256/256', { index: 256, total: 256 }],
  ])('reads %j', (raw, spec) => {
    expect(parseShardSpec(raw)).toEqual(spec);
    expect(formatShard(spec)).toBe(`${spec.index}/${spec.total}`);
  });

  it.each(['0/3', '4/3', '1/0', '1/257', 'a/b', '1', '1/2/3', '-1/2', '1.5/2', '', '01/2x'])(
    'refuses %j as bad usage',
    (raw) => {
      const error = thrown(() => parseShardSpec(raw));
      expect(error).toBeInstanceOf(UsageError);
      expect(error.help).toContain('i/N');
    },
  );

  it('reads counts and indexes from CI variables', () => {
    expect(parseShardNumber('3', 'CI_NODE_TOTAL')).toBe(3);
    expect(thrown(() => parseShardNumber('three', 'CI_NODE_TOTAL'))).toBeInstanceOf(UsageError);
    expect(thrown(() => parseShardNumber('0', 'CI_NODE_INDEX'))).toBeInstanceOf(UsageError);
  });
});

describe('restrictInventory', () => {
  const inventory = parseInventory({
    all: {
      vars: { region: 'eu' },
      hosts: { web1: { ansible_host: '127.0.0.2' }, web2: { ansible_host: '127.0.0.3' } },
      children: {
        db: { hosts: { db1: { ansible_host: '127.0.0.4', ansible_port: 2222 } }, vars: { role: 'db' } },
        empty: null,
      },
    },
  });

  it('keeps only the named hosts, with their groups and vars', () => {
    const restricted = restrictInventory(inventory, new Set(['web2', 'db1']));
    expect(deriveHosts(parseInventory(restricted)).map((h) => [h.name, h.address, h.port])).toEqual([
      ['db1', '127.0.0.4', 2222],
      ['web2', '127.0.0.3', 22],
    ]);
    expect(restricted.all?.vars).toEqual({ region: 'eu' });
    expect(restricted.all?.children?.db?.vars).toEqual({ role: 'db' });
    expect(restricted.all?.children?.empty).toBeNull();
  });

  it('keeps nobody when asked for nobody, and leaves the input alone', () => {
    expect(deriveHosts(parseInventory(restrictInventory(inventory, new Set())))).toEqual([]);
    expect(Object.keys(inventory.all?.hosts ?? {})).toEqual(['web1', 'web2']);
  });
});

describe('recommendShards', () => {
  it('shows its arithmetic for 1,000 hosts in 10 minutes', () => {
    const r = recommendShards(1000, 0.5, 600);
    // 1000 / 0.5 = 2000 s on one runner; budget 480 s; ⌈2000/480⌉ = 5.
    expect(r.shards).toBe(5);
    expect(r.lines.join('\n')).toContain('⌈2000 ÷ 480⌉ = 5');
  });

  it('needs one shard when one runner is fast enough', () => {
    expect(recommendShards(10, 5, 600).shards).toBe(1);
  });

  it('refuses nonsense inputs', () => {
    expect(() => recommendShards(0, 1, 600)).toThrow(RangeError);
    expect(() => recommendShards(10, 0, 600)).toThrow(RangeError);
  });
});

describe('shardFromGitLabEnv', () => {
  it.each<[string, Record<string, string>, { index: number; total: number } | undefined]>([
    ['a job without parallel (GitLab sets CI_NODE_TOTAL=1 and no index)', { CI_NODE_TOTAL: '1' }, undefined],
    ['no CI variables at all', {}, undefined],
    ['parallel: 3, the second job', { CI_NODE_INDEX: '2', CI_NODE_TOTAL: '3' }, { index: 2, total: 3 }],
    ['parallel: 1', { CI_NODE_INDEX: '1', CI_NODE_TOTAL: '1' }, { index: 1, total: 1 }],
  ])('%s', (_label, env, expected) => {
    expect(shardFromGitLabEnv(env)).toEqual(expected);
  });

  it.each<[string, Record<string, string>, RegExp]>([
    ['an index without a total', { CI_NODE_INDEX: '2' }, /must both be set/],
    ['a total above 1 without an index', { CI_NODE_TOTAL: '3' }, /must both be set/],
    ['an index beyond the total', { CI_NODE_INDEX: '4', CI_NODE_TOTAL: '3' }, /shard index 4/],
    ['a non-number', { CI_NODE_INDEX: 'x', CI_NODE_TOTAL: '3' }, /CI_NODE_INDEX "x"/],
  ])('refuses %s', (_label, env, message) => {
    expect(() => shardFromGitLabEnv(env)).toThrow(message);
  });
});
