/**
 * A converge fanned out over shards (issue 12 item 3): each shard records which
 * hosts it ran and which of them failed; a final fold reads every shard of the
 * run and makes one converge record and one summary — which hosts failed, on
 * which shard, and which shards never reported.
 */
import { z } from 'zod';
import { rolloutSummarySchema, type RolloutSummary } from './rollout.js';
import { formatShard, shardOf, type ShardSpec } from './shard.js';

export const SHARD_RESULT_SCHEMA_VERSION = 1;

const shardSpecSchema = z.object({ index: z.number().int().positive(), total: z.number().int().positive() });

export const shardResultSchema = z.object({
  schemaVersion: z.literal(SHARD_RESULT_SCHEMA_VERSION),
  /** The standing inventory's name. */
  name: z.string(),
  runId: z.string(),
  shard: shardSpecSchema,
  at: z.string(),
  hosts: z.array(z.string()),
  failedHosts: z.array(z.object({ host: z.string(), reason: z.enum(['failed', 'unreachable']) })),
  /** ansible-playbook's exit code (0 when the shard named no hosts and ran nothing). */
  code: z.number().int(),
  runUrl: z.string().optional(),
  /** The run whose failed and unreached hosts this run replays (`--failed-only --from-run`). */
  repairs: z.string().optional(),
});
export type ShardResult = z.infer<typeof shardResultSchema>;

export const CONVERGE_HISTORY_SCHEMA_VERSION = 1;
export const CONVERGE_HISTORY_LIMIT = 50;

export const convergeRunSchema = z.object({
  runId: z.string(),
  at: z.string(),
  ok: z.boolean(),
  shards: z.number().int().positive(),
  hosts: z.array(
    z.object({ host: z.string(), shard: z.number().int().positive(), ok: z.boolean(), reason: z.string().optional() }),
  ),
  missingShards: z.array(z.number().int().positive()),
  failedShards: z.array(z.number().int().positive()),
  /** A rolling converge's batches, budget, and where it stopped. */
  rollout: rolloutSummarySchema.optional(),
  /** The run whose failed and unreached hosts this run replayed. */
  repairs: z.string().optional(),
});
export type ConvergeRun = z.infer<typeof convergeRunSchema>;

export const convergeHistorySchema = z.object({
  schemaVersion: z.literal(CONVERGE_HISTORY_SCHEMA_VERSION),
  name: z.string(),
  runs: z.array(convergeRunSchema),
});
export type ConvergeHistory = z.infer<typeof convergeHistorySchema>;

/** Per-host outcome from ansible's stats (the events callback's `stats` event). */
export function failedHostsOf(stats: Record<string, Record<string, number>>): ShardResult['failedHosts'] {
  return Object.entries(stats)
    .filter(([, counts]) => (counts.unreachable ?? 0) > 0 || (counts.failures ?? 0) > 0)
    .map(([host, counts]) => ({
      host,
      reason: (counts.unreachable ?? 0) > 0 ? ('unreachable' as const) : ('failed' as const),
    }))
    .sort((a, b) => (a.host < b.host ? -1 : a.host > b.host ? 1 : 0));
}

/**
 * Folds the shard results of one run. A shard that never reported, or whose
 * play failed without naming a host (a broken playbook), fails the run.
 */
export function foldShardResults(
  runId: string,
  total: number,
  results: readonly ShardResult[],
  at: string,
  rollout?: RolloutSummary,
): ConvergeRun {
  const byShard = new Map<number, ShardResult>();
  for (const result of results)
    if (result.runId === runId && result.shard.total === total) byShard.set(result.shard.index, result);
  const hosts: ConvergeRun['hosts'] = [];
  const missingShards: number[] = [];
  const failedShards: number[] = [];
  for (let index = 1; index <= total; index += 1) {
    const result = byShard.get(index);
    if (result === undefined) {
      missingShards.push(index);
      continue;
    }
    // A rollout's record says why more exactly (a failed health check, a broken play).
    const failed = new Map<string, string>(result.failedHosts.map((f) => [f.host, f.reason]));
    for (const f of rollout?.failed ?? []) if (failed.has(f.host)) failed.set(f.host, f.reason);
    for (const host of result.hosts) {
      const reason = failed.get(host);
      hosts.push({ host, shard: index, ok: reason === undefined, ...(reason ? { reason } : {}) });
    }
    if (result.code !== 0 || failed.size > 0) failedShards.push(index);
  }
  hosts.sort((a, b) => (a.host < b.host ? -1 : a.host > b.host ? 1 : 0));
  const repairs = [...byShard.values()].find((r) => r.repairs !== undefined)?.repairs;
  return {
    runId,
    at,
    ok: missingShards.length === 0 && failedShards.length === 0 && !rollout?.stopped,
    shards: total,
    hosts,
    missingShards,
    failedShards,
    ...(rollout ? { rollout } : {}),
    ...(repairs !== undefined ? { repairs } : {}),
  };
}

/**
 * The hosts a failed-only rerun of `run` plays, in the fleet's order: those
 * that failed, those its rollout never touched, and those of shards that never
 * reported — as far as the fleet still names them.
 */
export function hostsToRepair(run: ConvergeRun, fleet: readonly string[]): string[] {
  const failed = new Set(run.hosts.filter((h) => !h.ok).map((h) => h.host));
  for (const host of run.rollout?.untouched ?? []) failed.add(host);
  const reported = new Set(run.hosts.map((h) => h.host));
  const missing = new Set(run.missingShards);
  return fleet.filter((host) => failed.has(host) || (!reported.has(host) && missing.has(shardOf(host, run.shards))));
}

export function appendConvergeRun(
  previous: ConvergeHistory | undefined,
  name: string,
  run: ConvergeRun,
): ConvergeHistory {
  const runs = [...(previous?.runs ?? []).filter((r) => r.runId !== run.runId), run].slice(-CONVERGE_HISTORY_LIMIT);
  return { schemaVersion: CONVERGE_HISTORY_SCHEMA_VERSION, name, runs };
}

function shardLabel(index: number, total: number): string {
  return formatShard({ index, total } satisfies ShardSpec);
}

export function renderConvergeRunText(name: string, run: ConvergeRun): string {
  const failed = run.hosts.filter((h) => !h.ok);
  const head = run.ok
    ? `converged tf:${name}: ${run.hosts.length} host(s) over ${run.shards} shard(s)`
    : `converge of tf:${name} failed: ${failed.length} of ${run.hosts.length} host(s) failed` +
      (run.missingShards.length > 0
        ? `; shard(s) ${run.missingShards.map((i) => shardLabel(i, run.shards)).join(', ')} never reported`
        : '');
  const lines = [
    head,
    ...(run.repairs !== undefined ? [`repairs converge run ${run.repairs}`] : []),
    ...rolloutLines(run),
  ];
  for (const h of failed) lines.push(`  ${h.host} (shard ${shardLabel(h.shard, run.shards)}): ${h.reason ?? 'failed'}`);
  for (const index of run.failedShards.filter((i) => !failed.some((h) => h.shard === i))) {
    lines.push(`  shard ${shardLabel(index, run.shards)}: the play failed before any host did (see that job's log)`);
  }
  return lines.join('\n');
}

function rolloutLines(run: ConvergeRun): string[] {
  const r = run.rollout;
  if (r === undefined) return [];
  const reached = `rollout ${r.rollout} (max failures ${r.maxFailures}, ${r.allowedFailures} host(s) allowed): batch ${r.batchReached} of ${r.batches}`;
  const lines = [r.stopped ? `${reached}: stopped, ${r.failed.length} failed host(s)` : `${reached} reached`];
  if (r.untouched.length > 0) lines.push(`  never touched: ${r.untouched.length} host(s): ${countedList(r.untouched)}`);
  return lines;
}

function countedList(hosts: readonly string[], max = 10): string {
  return hosts.length <= max ? hosts.join(', ') : `${hosts.slice(0, max).join(', ')} and ${hosts.length - max} more`;
}

/** Markdown for the job summary; host names are escaped (inventory names are untrusted text). */
export function renderConvergeRunMarkdown(name: string, run: ConvergeRun, escape: (text: string) => string): string {
  const lines = [
    `### exocomp converge \`tf:${name}\` · ${run.shards} shard(s)`,
    '',
    run.ok ? `✓ ${run.hosts.length} host(s) converged` : `✗ failed`,
    '',
    ...rolloutLines(run).map((line) => `${escape(line.trim())}  `),
    ...(run.rollout ? [''] : []),
  ];
  lines.push('| host | shard | result |', '| --- | --- | --- |');
  for (const h of run.hosts)
    lines.push(`| ${escape(h.host)} | ${shardLabel(h.shard, run.shards)} | ${h.ok ? 'ok' : (h.reason ?? 'failed')} |`);
  for (const index of run.missingShards) lines.push(`| — | ${shardLabel(index, run.shards)} | never reported |`);
  return `${lines.join('\n')}\n`;
}
