/** `exocomp ledger check`: every record that cannot be used, with what to do about it. Reads only. */
import { checkRecords } from '../../ledger/records.js';
import type { AppContext } from '../runtime/context.js';

export interface RecordProblem {
  /** The file's path on the ledger. */
  file: string;
  /** The ref it lives on. */
  ref: string | null;
  /** `corrupt`: its ref or bytes are broken; `malformed`: it does not parse or match its schema. */
  damage: 'corrupt' | 'malformed';
  reason: string;
  fix: string;
}

export async function checkLedger(
  app: AppContext,
): Promise<{ ledger: string; files: number; problems: RecordProblem[] }> {
  const snapshot = await app.store.read();
  const problems = checkRecords(snapshot).map((error) => ({
    file: error.file,
    ref: error.ref ?? null,
    damage: error.damage,
    reason: error.reason,
    fix: error.fix,
  }));
  return { ledger: app.store.description, files: snapshot.list('').length, problems };
}
