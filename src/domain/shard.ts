/**
 * Splitting a standing inventory across runners (issue 12 item 3). A host's
 * shard is chosen by rendezvous (highest-random-weight) hashing on its
 * inventory name: every shard scores the host, the highest score wins. The
 * choice depends only on the host's name and the shard count, so a host joining
 * or leaving moves no other host, and going from N to N+1 shards moves only the
 * hosts the new shard wins (about 1/(N+1) of them).
 */
import { createHash } from 'node:crypto';
import { UsageError } from './errors.js';
import { quoteValue } from './names.js';
import type { InventoryGroup, StaticInventory } from './inventory.js';

/** More shards than this is a configuration mistake, not a fleet (GitHub caps a matrix at 256 jobs). */
export const MAX_SHARDS = 256;

/** Shard `index` (1-based, as GitLab's CI_NODE_INDEX) of `total`. */
export interface ShardSpec {
  index: number;
  total: number;
}

const SHARD_HELP =
  'write the shard as i/N with 1 ≤ i ≤ N ≤ 256, e.g. 2/3 (shards are numbered from 1, like CI_NODE_INDEX)';

function positiveWhole(raw: string): number | undefined {
  return /^[1-9]\d{0,5}$/.test(raw) ? Number(raw) : undefined;
}

export function checkShardSpec(index: number, total: number): ShardSpec {
  if (!Number.isInteger(total) || total < 1 || total > MAX_SHARDS) {
    throw new UsageError(`shard count ${total} is not a whole number from 1 to ${MAX_SHARDS}`, SHARD_HELP);
  }
  if (!Number.isInteger(index) || index < 1 || index > total) {
    throw new UsageError(`shard index ${index} is not a whole number from 1 to ${total}`, SHARD_HELP);
  }
  return { index, total };
}

/** Reads `i/N` (the converge action's `shard` input). */
export function parseShardSpec(raw: string): ShardSpec {
  const match = /^\s*(\d+)\s*\/\s*(\d+)\s*$/.exec(raw);
  const index = match ? positiveWhole(match[1] as string) : undefined;
  const total = match ? positiveWhole(match[2] as string) : undefined;
  if (index === undefined || total === undefined) {
    throw new UsageError(`shard ${quoteValue(raw)} is not of the form i/N`, SHARD_HELP);
  }
  return checkShardSpec(index, total);
}

/** Reads a shard count or index given as text (CLI flags, CI variables). */
export function parseShardNumber(raw: string, what: string): number {
  const value = positiveWhole(raw.trim());
  if (value === undefined)
    throw new UsageError(`${what} ${quoteValue(raw)} is not a positive whole number`, SHARD_HELP);
  return value;
}

export function formatShard(spec: ShardSpec): string {
  return `${spec.index}/${spec.total}`;
}

/**
 * The lease a shard holds: `<key>/<i>` is the CI concurrency group of shard i;
 * ledger lock names cannot hold '/', so a CLI run's ledger lock is `<key>.<i>`.
 */
export function shardLease(key: string, spec: ShardSpec): { group: string; ledgerKey: string } {
  return { group: `${key}/${spec.index}`, ledgerKey: `${key}.${spec.index}` };
}

function score(host: string, shard: number): bigint {
  const digest = createHash('sha256').update(`${shard}\0${host}`).digest();
  return digest.readBigUInt64BE(0);
}

/** The shard (1-based) that `host` belongs to when the fleet is split `total` ways. */
export function shardOf(host: string, total: number): number {
  checkShardSpec(1, total);
  let best = 1;
  let bestScore = -1n;
  for (let shard = 1; shard <= total; shard += 1) {
    const s = score(host, shard);
    // Ties (never seen with 64-bit scores) go to the lower shard, so the choice stays deterministic.
    if (s > bestScore) {
      best = shard;
      bestScore = s;
    }
  }
  return best;
}

/** The hosts of one shard, in the order given. */
export function hostsOfShard(hosts: readonly string[], spec: ShardSpec): string[] {
  checkShardSpec(spec.index, spec.total);
  return hosts.filter((host) => shardOf(host, spec.total) === spec.index);
}

/** Every shard's hosts: index i-1 holds shard i. */
export function splitIntoShards(hosts: readonly string[], total: number): string[][] {
  const shards: string[][] = Array.from({ length: checkShardSpec(1, total).total }, () => []);
  for (const host of hosts) (shards[shardOf(host, total) - 1] as string[]).push(host);
  return shards;
}

/**
 * The inventory with every host outside `keep` removed from every group; groups,
 * children and vars stay, so the kept hosts see exactly the variables they had.
 */
export function restrictInventory(inventory: StaticInventory, keep: ReadonlySet<string>): StaticInventory {
  const restrictGroup = (group: InventoryGroup | null): InventoryGroup | null => {
    if (group === null) return null;
    const next: InventoryGroup = {};
    for (const [section, value] of Object.entries(group)) {
      if (section === 'hosts' && value) {
        next.hosts = Object.fromEntries(
          Object.entries(value as NonNullable<InventoryGroup['hosts']>).filter(([host]) => keep.has(host)),
        );
      } else if (section === 'children' && value) {
        next.children = Object.fromEntries(
          Object.entries(value as NonNullable<InventoryGroup['children']>).map(([name, child]) => [
            name,
            restrictGroup(child),
          ]),
        );
      } else {
        (next as Record<string, unknown>)[section] = value;
      }
    }
    return next;
  };
  return Object.fromEntries(Object.entries(inventory).map(([name, group]) => [name, restrictGroup(group)]));
}

export interface ShardRecommendation {
  shards: number;
  /** The arithmetic, one line per step, for a reader to check. */
  lines: string[];
}

/**
 * How many shards converge `hostCount` hosts within `windowSeconds` when one
 * runner converges `hostsPerSecond`, keeping `headroom` (0.8 = plan for 80 % of
 * the window, leaving room for runner start-up and a slow host).
 */
export function recommendShards(
  hostCount: number,
  hostsPerSecond: number,
  windowSeconds: number,
  headroom = 0.8,
): ShardRecommendation {
  if (!(hostCount > 0 && hostsPerSecond > 0 && windowSeconds > 0 && headroom > 0 && headroom <= 1)) {
    throw new RangeError('recommendShards needs positive host count, rate and window, and headroom in (0, 1]');
  }
  const budget = windowSeconds * headroom;
  const oneRunner = hostCount / hostsPerSecond;
  const shards = Math.min(MAX_SHARDS, Math.max(1, Math.ceil(oneRunner / budget)));
  const perShard = Math.ceil(hostCount / shards);
  return {
    shards,
    lines: [
      `one runner: ${hostCount} hosts ÷ ${hostsPerSecond.toFixed(2)} hosts/s = ${oneRunner.toFixed(0)} s`,
      `budget: ${windowSeconds} s window × ${headroom} headroom = ${budget.toFixed(0)} s`,
      `shards: ⌈${oneRunner.toFixed(0)} ÷ ${budget.toFixed(0)}⌉ = ${shards}` +
        ` (≈${perShard} hosts per shard, ≈${(perShard / hostsPerSecond).toFixed(0)} s each)`,
    ],
  };
}

/**
 * The shard of a GitLab job run with `parallel: N`: CI_NODE_INDEX (1-based) of
 * CI_NODE_TOTAL. A job without `parallel` has no CI_NODE_INDEX (GitLab still
 * sets CI_NODE_TOTAL to 1): the whole inventory.
 */
export function shardFromGitLabEnv(env: Readonly<Record<string, string | undefined>>): ShardSpec | undefined {
  const index = env.CI_NODE_INDEX ?? '';
  const total = env.CI_NODE_TOTAL ?? '';
  if (index === '' && (total === '' || total === '1')) return undefined;
  if (index === '' || total === '') {
    throw new UsageError(
      'CI_NODE_INDEX and CI_NODE_TOTAL must both be set',
      'run the job with `parallel: N`, or set neither',
    );
  }
  return checkShardSpec(parseShardNumber(index, 'CI_NODE_INDEX'), parseShardNumber(total, 'CI_NODE_TOTAL'));
}
