/**
 * Optional integrations (the status comment or note, the merge-request
 * lookup, the drift issue, liveness lookups) never fail a job: a refused or
 * unreachable API is a notice naming what to grant, and the job's own work
 * goes on. Required calls (the ledger push) are not wrapped: they fail fast.
 */
import { describeError, InterruptedError } from '../../domain/errors.js';
import type { CiLog } from '../ports/ci-platform.js';
import type { SecretRegistry } from './secrets.js';

/** The result of `work`, or undefined after a notice saying what was skipped and what would make it work. */
export async function optionalCall<T>(
  log: Pick<CiLog, 'notice'>,
  secrets: SecretRegistry,
  what: { skipped: string; grant: string | undefined },
  work: () => Promise<T>,
): Promise<T | undefined> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof InterruptedError) throw error;
    const grant = what.grant ? `; to get it, grant ${what.grant}` : '';
    log.notice(secrets.redact(`${what.skipped} (optional, the job goes on): ${describeError(error)}${grant}`));
    return undefined;
  }
}
