/**
 * A rolling converge (issue 41): the fleet in cumulative batches (`1,10%,100%`)
 * with one failure budget (`--max-failures 2%`) for every shard of the run.
 * The ledger holds one rollout record per run; each shard reads it, plays its
 * part of the current batch, and reports that part's failures back with a
 * compare-and-swap write. Everything here is pure: what a batch is, what the
 * budget allows, and what a shard does next given the record.
 */
import { z } from 'zod';
import { UsageError } from './errors.js';
import { quoteValue } from './names.js';
import { shardOf } from './shard.js';

/** A batch's cumulative size: a host count, or a share of the fleet in hundredths of a percent (exact arithmetic). */
export type RolloutSize = { kind: 'count'; count: number } | { kind: 'percent'; hundredths: number };

const ROLLOUT_HELP = 'write cumulative batch sizes as counts or percentages, e.g. 1,10%,100%';
const BUDGET_HELP = 'write a host count (e.g. 3) or a share of the fleet below 100 % (e.g. 2%, 0.5%)';
/** More batches than this is a typo, not a rollout. */
export const MAX_BATCHES = 20;

function parseSize(raw: string, what: string, help: string): RolloutSize | undefined {
  const text = raw.trim();
  const percent = /^(\d{1,3})(?:\.(\d{1,2}))?%$/.exec(text);
  if (percent) {
    const hundredths = Number(percent[1]) * 100 + Number((percent[2] ?? '').padEnd(2, '0'));
    if (hundredths > 10_000) throw new UsageError(`${what} ${quoteValue(raw)} is more than 100%`, help);
    return { kind: 'percent', hundredths };
  }
  if (/^\d{1,6}$/.test(text)) return { kind: 'count', count: Number(text) };
  return undefined;
}

/** Reads `--rollout`: cumulative sizes, each larger than the one before it of the same kind. */
export function parseRollout(raw: string): RolloutSize[] {
  const parts = raw.split(',');
  if (parts.length > MAX_BATCHES)
    throw new UsageError(`--rollout names ${parts.length} batches; at most ${MAX_BATCHES}`, ROLLOUT_HELP);
  const sizes = parts.map((part) => {
    const size = parseSize(part, 'batch size', ROLLOUT_HELP);
    if (size === undefined || (size.kind === 'count' ? size.count : size.hundredths) === 0)
      throw new UsageError(`batch size ${quoteValue(part)} is not a positive count or percentage`, ROLLOUT_HELP);
    return size;
  });
  // Sizes are cumulative: a size not above an earlier one of its kind would be an empty batch, so it is a mistake.
  const largest = { count: 0, percent: 0 };
  for (const size of sizes) {
    const value = size.kind === 'count' ? size.count : size.hundredths;
    const key = size.kind === 'count' ? 'count' : 'percent';
    if (value <= largest[key])
      throw new UsageError(`--rollout ${quoteValue(raw)} is not cumulative: each size must be larger`, ROLLOUT_HELP);
    largest[key] = value;
  }
  return sizes;
}

/** Reads `--max-failures`: how many failed hosts the whole fleet may have and still go on. */
export function parseMaxFailures(raw: string): RolloutSize {
  const size = parseSize(raw, '--max-failures', BUDGET_HELP);
  if (size === undefined)
    throw new UsageError(`--max-failures ${quoteValue(raw)} is not a count or percentage`, BUDGET_HELP);
  if (size.kind === 'percent' && size.hundredths >= 10_000)
    throw new UsageError(`--max-failures ${quoteValue(raw)} would never stop the rollout`, BUDGET_HELP);
  return size;
}

export function formatSize(size: RolloutSize): string {
  if (size.kind === 'count') return String(size.count);
  const whole = Math.floor(size.hundredths / 100);
  const rest = size.hundredths % 100;
  return `${whole}${rest === 0 ? '' : `.${String(rest).padStart(2, '0').replace(/0$/, '')}`}%`;
}

/**
 * Where each batch ends in the fleet's order (cumulative host counts, strictly
 * increasing, the last one the whole fleet). A percentage rounds up, so a
 * non-zero share is at least one host; sizes past the fleet are clamped, and
 * hosts left after the last size form one more batch.
 */
export function batchEnds(sizes: readonly RolloutSize[], fleet: number): number[] {
  const ends: number[] = [];
  for (const size of sizes) {
    const end = Math.min(fleet, size.kind === 'count' ? size.count : Math.ceil((size.hundredths * fleet) / 10_000));
    if (end > (ends.at(-1) ?? 0)) ends.push(end);
  }
  if ((ends.at(-1) ?? 0) < fleet) ends.push(fleet);
  return ends;
}

/**
 * How many failed hosts the fleet may have and still go on: the rollout stops
 * once failures exceed it. A percentage is of the whole fleet, rounded down, as
 * ansible's max_fail_percentage ("more than P %" stops): 2 % of 20 hosts is 0,
 * so the first failure stops; 2 % of 200 is 4, so the fifth does.
 */
export function allowedFailures(budget: RolloutSize, fleet: number): number {
  return budget.kind === 'count' ? budget.count : Math.floor((budget.hundredths * fleet) / 10_000);
}

export const ROLLOUT_SCHEMA_VERSION = 1;

const failedHostSchema = z.object({
  host: z.string(),
  /** `play-error`: the play failed without naming the host (a broken playbook): every host it was given counts. */
  reason: z.enum(['failed', 'unreachable', 'health-check', 'play-error']),
});
export type RolloutFailure = z.infer<typeof failedHostSchema>;

export const rolloutRecordSchema = z
  .object({
    schemaVersion: z.literal(ROLLOUT_SCHEMA_VERSION),
    name: z.string(),
    runId: z.string(),
    startedAt: z.string(),
    /** As given, normalized, for messages and for checking that every shard was given the same. */
    rollout: z.string(),
    maxFailures: z.string(),
    shards: z.number().int().positive(),
    /** The fleet in rollout order, fixed by the shard that started the run. */
    hosts: z.array(z.string()),
    ends: z.array(z.number().int().positive()),
    allowedFailures: z.number().int().nonnegative(),
    /** One report per shard per batch it had hosts in; append-only. */
    reports: z.array(
      z.object({
        batch: z.number().int().nonnegative(),
        shard: z.number().int().positive(),
        at: z.string(),
        hosts: z.number().int().nonnegative(),
        failed: z.array(failedHostSchema),
      }),
    ),
  })
  .refine((r) => r.ends.at(-1) === r.hosts.length, { message: 'the last batch must end at the fleet size' })
  .refine((r) => r.ends.every((end, i) => i === 0 || end > (r.ends[i - 1] as number)), {
    message: 'batch ends must increase',
  });
export type RolloutRecord = z.infer<typeof rolloutRecordSchema>;

export interface RolloutSettings {
  rollout: RolloutSize[];
  maxFailures: RolloutSize;
}

/** The record a run starts with: the fleet in a stable order (by name), its batches and its budget. */
export function startRollout(
  settings: RolloutSettings,
  run: { name: string; runId: string; shards: number; at: string },
  hosts: readonly string[],
): RolloutRecord {
  const ordered = [...new Set(hosts)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return {
    schemaVersion: ROLLOUT_SCHEMA_VERSION,
    name: run.name,
    runId: run.runId,
    startedAt: run.at,
    rollout: settings.rollout.map(formatSize).join(','),
    maxFailures: formatSize(settings.maxFailures),
    shards: run.shards,
    hosts: ordered,
    ends: batchEnds(settings.rollout, ordered.length),
    allowedFailures: allowedFailures(settings.maxFailures, ordered.length),
    reports: [],
  };
}

/** Why a shard may not join a recorded rollout: it was given other settings, another shard count or another fleet. */
export function joinProblem(record: RolloutRecord, started: RolloutRecord): string | undefined {
  if (record.rollout !== started.rollout || record.maxFailures !== started.maxFailures)
    return `it was started with --rollout ${record.rollout} --max-failures ${record.maxFailures}, this shard was given --rollout ${started.rollout} --max-failures ${started.maxFailures}`;
  if (record.shards !== started.shards)
    return `it was started over ${record.shards} shard(s), this shard is one of ${started.shards}`;
  const same = record.hosts.length === started.hosts.length && record.hosts.every((h, i) => h === started.hosts[i]);
  if (!same)
    return `its fleet (${record.hosts.length} host(s)) is not the inventory this shard read (${started.hosts.length}): the inventory changed since the run started`;
  return undefined;
}

/** The hosts of batch `batch` (0-based), in rollout order. */
export function hostsOfBatch(record: RolloutRecord, batch: number): string[] {
  return record.hosts.slice(batch === 0 ? 0 : record.ends[batch - 1], record.ends[batch]);
}

/** The hosts of a batch that one shard plays. */
export function shardPart(record: RolloutRecord, batch: number, shard: number): string[] {
  return hostsOfBatch(record, batch).filter((host) => shardOf(host, record.shards) === shard);
}

export function failuresOf(record: RolloutRecord): RolloutFailure[] {
  return record.reports.flatMap((r) => r.failed);
}

export function budgetSpent(record: RolloutRecord): boolean {
  return failuresOf(record).length > record.allowedFailures;
}

function reported(record: RolloutRecord, batch: number, shard: number): boolean {
  return record.reports.some((r) => r.batch === batch && r.shard === shard);
}

/** The shards that have hosts in a batch and have not reported it yet. */
export function shardsPending(record: RolloutRecord, batch: number): number[] {
  const pending: number[] = [];
  for (let shard = 1; shard <= record.shards; shard += 1)
    if (shardPart(record, batch, shard).length > 0 && !reported(record, batch, shard)) pending.push(shard);
  return pending;
}

/** Whether every host of the batch was played and reported. */
export function batchDone(record: RolloutRecord, batch: number): boolean {
  return shardsPending(record, batch).length === 0;
}

export type RolloutStep =
  /** Play these hosts of this batch, then report them. */
  | { kind: 'play'; batch: number; hosts: string[] }
  /** The batch before `batch` is still being played by these shards. */
  | { kind: 'wait'; batch: number; shards: number[] }
  /** The failure budget is spent: play nothing more. */
  | { kind: 'stop'; batch: number }
  /** This shard has played its part of every batch. */
  | { kind: 'done' };

/**
 * What shard `shard` does next. Its next batch is the first one it has hosts
 * in and has not reported; it may play it only when every earlier batch is
 * done (by every shard) and the budget is not spent.
 */
export function nextStep(record: RolloutRecord, shard: number): RolloutStep {
  const batch = record.ends.findIndex((_, k) => shardPart(record, k, shard).length > 0 && !reported(record, k, shard));
  if (budgetSpent(record)) return { kind: 'stop', batch: Math.max(0, batchReached(record)) };
  if (batch === -1) return { kind: 'done' };
  for (let earlier = 0; earlier < batch; earlier += 1) {
    const shards = shardsPending(record, earlier);
    if (shards.length > 0) return { kind: 'wait', batch: earlier, shards };
  }
  return { kind: 'play', batch, hosts: shardPart(record, batch, shard) };
}

/** The shard's report of its part of a batch, appended; a second report of the same part is refused. */
export function reportBatch(
  record: RolloutRecord,
  report: { batch: number; shard: number; at: string; hosts: number; failed: RolloutFailure[] },
): RolloutRecord {
  if (reported(record, report.batch, report.shard))
    throw new UsageError(
      `shard ${report.shard} already reported batch ${report.batch + 1} of converge run ${record.runId}`,
      'give each run of the converge its own run id',
    );
  return { ...record, reports: [...record.reports, report] };
}

/** The last batch (0-based) any host was played in; -1 before the first report. */
export function batchReached(record: RolloutRecord): number {
  return record.reports.reduce((reached, r) => Math.max(reached, r.batch), -1);
}

/** Hosts never played: those of batches no shard reported for them. */
export function untouchedHosts(record: RolloutRecord): string[] {
  const touched = new Set<string>();
  for (const r of record.reports) for (const host of shardPart(record, r.batch, r.shard)) touched.add(host);
  return record.hosts.filter((host) => !touched.has(host));
}

/** What the fold records of a rollout (in the run's converge record). */
export const rolloutSummarySchema = z.object({
  rollout: z.string(),
  maxFailures: z.string(),
  allowedFailures: z.number().int().nonnegative(),
  batches: z.number().int().positive(),
  /** 1-based, for people; 0 when no batch was played. */
  batchReached: z.number().int().nonnegative(),
  /** The failures exceeded the budget: no shard started another batch. */
  stopped: z.boolean(),
  failed: z.array(failedHostSchema),
  /** Hosts no shard played (their batch never started, or their shard never ran it). */
  untouched: z.array(z.string()),
});
export type RolloutSummary = z.infer<typeof rolloutSummarySchema>;

export function summarizeRollout(record: RolloutRecord): RolloutSummary {
  return {
    rollout: record.rollout,
    maxFailures: record.maxFailures,
    allowedFailures: record.allowedFailures,
    batches: record.ends.length,
    batchReached: batchReached(record) + 1,
    stopped: budgetSpent(record),
    failed: failuresOf(record),
    untouched: untouchedHosts(record),
  };
}
