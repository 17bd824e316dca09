/**
 * A concurrency lock (`--concurrency-key K`): a lease recorded at `locks/<K>.json`
 * on the ledger branch, so two runs with one key never overlap, wherever they run.
 * The lease has the shape of a workflow step's lease and is judged the same way
 * (`judgeLease`): dead when its holder is known gone or its heartbeat expired.
 * Pure: callers establish the facts and persist the returned records.
 */
import { z } from 'zod';
import { ExocompError, UsageError } from './errors.js';
import { quoteValue, RECORD_NAME_MAX_LENGTH, recordNameProblem } from './names.js';
import { judgeLease, leaseSchema, type Lease, type LeaseFacts } from './workflow.js';

export const LOCK_SCHEMA_VERSION = 1;
export const CONCURRENCY_KEY_MAX_LENGTH = RECORD_NAME_MAX_LENGTH;

export const lockRecordSchema = z.object({
  schemaVersion: z.literal(LOCK_SCHEMA_VERSION),
  key: z.string(),
  lease: leaseSchema,
  /** What the holder is doing, for the message a waiting run prints (never holds a secret). */
  purpose: z.string(),
});
export type LockRecord = z.infer<typeof lockRecordSchema>;

/** A key names a ledger record (the record-name rule) and a CI concurrency group: keep it to a plain word. */
export function parseConcurrencyKey(raw: string): string {
  const problem = recordNameProblem(raw);
  if (problem !== undefined) {
    throw new UsageError(
      `invalid concurrency key ${quoteValue(raw)}: ${problem}`,
      `a concurrency key is 1-${CONCURRENCY_KEY_MAX_LENGTH} characters of a-z, 0-9, '.', '_' and '-', starting with a letter or digit, without '..' and not ending with '.'`,
    );
  }
  return raw;
}

export type LockDecision =
  { kind: 'acquire'; record: LockRecord; replaced?: Lease } | { kind: 'held'; record: LockRecord };

/**
 * Decides whether `candidate` may take the lock `current` (undefined when free).
 * `facts` are about `current`'s holder; a dead lease is replaced and reported.
 */
export function decideAcquire(
  key: string,
  current: LockRecord | undefined,
  candidate: Lease,
  purpose: string,
  now: Date,
  facts: LeaseFacts = {},
): LockDecision {
  const record: LockRecord = { schemaVersion: LOCK_SCHEMA_VERSION, key, lease: candidate, purpose };
  if (current === undefined) return { kind: 'acquire', record };
  if (current.lease.holder === candidate.holder)
    return { kind: 'acquire', record: { ...record, lease: { ...candidate, acquiredAt: current.lease.acquiredAt } } };
  if (judgeLease(current.lease, now, facts) === 'dead') return { kind: 'acquire', record, replaced: current.lease };
  return { kind: 'held', record: current };
}

/** The record with a fresh heartbeat, or undefined when `holder` no longer holds the lock. */
export function renewLock(current: LockRecord | undefined, holder: string, now: Date): LockRecord | undefined {
  if (current?.lease.holder !== holder) return undefined;
  return { ...current, lease: { ...current.lease, heartbeatAt: now.toISOString() } };
}

/** Whether `holder` may delete the record: only its own lease is released. */
export function holdsLock(current: LockRecord | undefined, holder: string): boolean {
  return current?.lease.holder === holder;
}

export function describeHolder(record: LockRecord): string {
  const { lease } = record;
  const { origin } = lease;
  const where =
    origin.kind === 'local'
      ? `pid ${origin.pid} on ${origin.hostname}`
      : origin.kind === 'gitlab'
        ? `gitlab job ${origin.jobId} of pipeline ${origin.pipelineId} in ${origin.project}`
        : `${origin.platform} run ${origin.runId} (attempt ${origin.runAttempt}) of ${origin.repository}`;
  return `${lease.holder} (${where}, ${record.purpose}; since ${lease.acquiredAt}, heartbeat ${lease.heartbeatAt})`;
}

export class LockHeldError extends ExocompError {
  readonly record: LockRecord;
  constructor(record: LockRecord, waitedFor: string) {
    super(
      'lease-held',
      `concurrency key ${record.key} is held by ${describeHolder(record)}; gave up after waiting ${waitedFor}`,
      {
        help: 'try again when that run has finished, or wait longer with --concurrency-wait; a lease whose holder is gone or whose heartbeat expired is taken over automatically',
      },
    );
    this.name = 'LockHeldError';
    this.record = record;
  }
}
