/** Housekeeping of the ledger itself. */
import type { AppContext } from '../runtime/context.js';

/** Moves a ledger in the old single-branch layout to one branch per record (ADR 0013); returns how many files it holds. */
export async function migrateLedger(app: AppContext): Promise<{ files: number; ledger: string }> {
  return { files: await app.store.migrate(), ledger: app.store.description };
}
