/**
 * The last line of defence for "a secret never reaches the ledger branch": a
 * store decorator that looks at every file and the message of every commit
 * before it is written. A registered secret found there, in any form tools print
 * it, is replaced by *** in what is committed, and a warning names the file —
 * never the secret. Redaction upstream should have caught it; this one says so.
 */
import type { LedgerChange, LedgerSnapshot, LedgerStore, UpdateOptions } from '../../ledger/store.js';
import type { SecretRegistry } from './secrets.js';

export class SecretGuardedStore implements LedgerStore {
  constructor(
    private readonly inner: LedgerStore,
    private readonly secrets: SecretRegistry,
    private readonly warn: (message: string) => void,
  ) {}

  get description(): string {
    return this.inner.description;
  }

  read(): Promise<LedgerSnapshot> {
    return this.inner.read();
  }

  /** A migration rewrites what is already on the branch; it adds nothing of this run's. */
  migrate(): Promise<number> {
    return this.inner.migrate();
  }

  update<T>(mutate: (snapshot: LedgerSnapshot) => LedgerChange<T>, options?: UpdateOptions): Promise<T> {
    return this.inner.update((snapshot) => {
      const change = mutate(snapshot);
      const exposed: string[] = [];
      const writes = new Map<string, string | null>();
      for (const [path, text] of change.writes) {
        if (text !== null && this.secrets.exposes(text)) {
          exposed.push(path);
          writes.set(path, this.secrets.redact(text));
        } else {
          writes.set(path, text);
        }
      }
      let message = change.message;
      if (this.secrets.exposes(message)) {
        exposed.push('the commit message');
        message = this.secrets.redact(message);
      }
      if (exposed.length === 0) return change;
      this.warn(
        `a secret was about to be written to the ledger in ${exposed.join(', ')}; the redacted text was stored instead`,
      );
      return { ...change, writes, message };
    }, options);
  }
}
