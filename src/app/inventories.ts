/** Reads `tf:<name>` from the ledger, failing closed (docs/architecture.md, "The standing inventory"). */
import { resolveStandingInventory, InventoryUnusableError, type ResolvedInventory } from '../domain/standing-inventory.js';
import { LedgerRecordError, readInventoryFile, readInventoryRecord } from '../ledger/records.js';
import type { LedgerSnapshot } from '../ledger/store.js';

export function loadStandingInventory(snapshot: LedgerSnapshot, name: string): ResolvedInventory {
  let record;
  try {
    record = readInventoryRecord(snapshot, name);
  } catch (error) {
    if (error instanceof LedgerRecordError) {
      throw new InventoryUnusableError(
        'corrupt',
        `inventory tf:${name} is corrupt: ${error.message}`,
        're-apply the workspace, or restore the record from the ledger branch history',
      );
    }
    throw error;
  }
  return resolveStandingInventory(name, record, readInventoryFile(snapshot, name));
}
