/**
 * A ledger record that cannot be used: its ref is not a commit, its text is not
 * UTF-8, or it does not parse or match its schema. Only that record is
 * unreadable; the error names its path and ref and how to restore it.
 */
import { ExocompError } from '../domain/errors.js';

export interface RecordErrorOptions {
  /** The git ref the record lives on, when known. */
  ref?: string | undefined;
  /** `corrupt`: the ref or the bytes are broken (not something exocomp could have written); default `malformed`. */
  damage?: 'corrupt' | 'malformed';
  /** What to do, when the default (restore the file from its branch's history) does not fit. */
  help?: string;
}

export class LedgerRecordError extends ExocompError {
  readonly file: string;
  readonly reason: string;
  readonly ref: string | undefined;
  readonly damage: 'corrupt' | 'malformed';
  /** What to do about it, as the error's help says. */
  readonly fix: string;

  constructor(file: string, reason: string, options: RecordErrorOptions = {}) {
    const fix = options.help ?? restoreHelp(file, options.ref);
    const damage = options.damage ?? 'malformed';
    super('ledger-record', `${damage} ledger record ${file}: ${reason}${options.ref ? ` (ref ${options.ref})` : ''}`, {
      help: fix,
    });
    this.name = 'LedgerRecordError';
    this.file = file;
    this.reason = reason;
    this.ref = options.ref;
    this.damage = damage;
    this.fix = fix;
  }

  /** The same error, naming the ref it was read from (kept when it already names one). */
  on(ref: string | undefined): LedgerRecordError {
    if (ref === undefined || this.ref !== undefined) return this;
    return new LedgerRecordError(this.file, this.reason, {
      ref,
      damage: this.damage,
      help: restoreHelp(this.file, ref),
    });
  }
}

function restoreHelp(file: string, ref: string | undefined): string {
  const branch = ref ?? 'its ledger branch';
  return (
    `nothing was overwritten and every other record stays usable; find the last good version with ` +
    `\`git log -p ${ref ?? '<branch>'} -- ${file}\`, commit it back onto ${branch} and push without force ` +
    '(`exocomp ledger check` lists every such record)'
  );
}
