/**
 * Optional integrations (the status comment or note, the merge-request
 * lookup, the drift issue, liveness lookups) never fail a job: a refused or
 * unreachable API is a notice naming what to grant, and the job's own work
 * goes on. Required calls (the ledger push) are not wrapped: they fail fast.
 */
import { describeError, InterruptedError, UnansweredError } from '../../domain/errors.js';
import type { CiLog } from '../ports/ci-platform.js';
import type { SecretRegistry } from './secrets.js';

/**
 * The result of `work`, or undefined after a notice saying what was skipped, why, and what to grant when a grant
 * would help (not when the API gave no answer); an API already said to be silent is a log line, not a notice.
 */
export async function optionalCall<T>(
  log: Pick<CiLog, 'notice'> & Partial<Pick<CiLog, 'info'>>,
  secrets: SecretRegistry,
  what: { skipped: string; grant: string | undefined },
  work: () => Promise<T>,
): Promise<T | undefined> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof InterruptedError) throw error;
    const silent = error instanceof UnansweredError;
    const grant = what.grant && !silent ? `; to get it, grant ${what.grant}` : '';
    const message = secrets.redact(`${what.skipped} (optional, the job goes on): ${describeError(error)}${grant}`);
    if (silent && error.quiet && log.info) log.info(message);
    else if (!(silent && error.quiet)) log.notice(message);
    return undefined;
  }
}
