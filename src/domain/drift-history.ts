/**
 * What the ledger keeps of drift checks: a bounded history per workspace (git
 * history keeps the rest). Schedule fires are in schedule-fires.ts.
 */
import { z } from 'zod';
import { driftHeadline, driftVerdict, type DriftReport } from './drift.js';

export const DRIFT_HISTORY_SCHEMA_VERSION = 1;
/** Runs kept in the record; older ones stay in the branch history. */
export const DRIFT_HISTORY_LIMIT = 50;

export const driftRunSchema = z.object({
  at: z.string(),
  verdict: z.enum(['clean', 'drift', 'failed']),
  headline: z.string(),
  infrastructureFingerprint: z.string().optional(),
  configurationFingerprint: z.string().optional(),
  runUrl: z.string().optional(),
  schedule: z.string().optional(),
});
export type DriftRun = z.infer<typeof driftRunSchema>;

export const driftHistorySchema = z.object({
  schemaVersion: z.literal(DRIFT_HISTORY_SCHEMA_VERSION),
  name: z.string(),
  runs: z.array(driftRunSchema),
});
export type DriftHistory = z.infer<typeof driftHistorySchema>;

export function driftRunOf(report: DriftReport, extra: { runUrl?: string; schedule?: string } = {}): DriftRun {
  return {
    at: report.checkedAt,
    verdict: driftVerdict(report),
    headline: driftHeadline(report),
    ...(report.infrastructure.ok ? { infrastructureFingerprint: report.infrastructure.value.fingerprint } : {}),
    ...(report.configuration.ok ? { configurationFingerprint: report.configuration.value.fingerprint } : {}),
    ...(extra.runUrl ? { runUrl: extra.runUrl } : {}),
    ...(extra.schedule ? { schedule: extra.schedule } : {}),
  };
}

export function appendDriftRun(previous: DriftHistory | undefined, name: string, run: DriftRun): DriftHistory {
  const runs = [...(previous?.runs ?? []), run].slice(-DRIFT_HISTORY_LIMIT);
  return { schemaVersion: DRIFT_HISTORY_SCHEMA_VERSION, name, runs };
}

/** The recent checks of one workspace; missed ticks are shown per schedule (schedule-fires.ts). */
export function renderDriftHistory(history: DriftHistory | undefined): string {
  if (history === undefined || history.runs.length === 0) return 'no drift checks recorded';
  const lines = history.runs
    .slice(-10)
    .reverse()
    .map(
      (run) =>
        `  ${run.at}  ${run.verdict.padEnd(7)} ${run.headline}${run.schedule ? `  (schedule ${run.schedule})` : ''}`,
    );
  return [`drift checks of tf:${history.name} (latest first, ${history.runs.length} recorded):`, ...lines].join('\n');
}
