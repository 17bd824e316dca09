/**
 * The ledger store: a set of text files (records) at one revision, changed only
 * by whole-snapshot compare-and-swap updates. The git-branch implementation is
 * the only one in production; the interface lets domain/use-case tests run
 * against an in-memory store.
 */
export interface LedgerSnapshot {
  /** The revision this snapshot was read at (a commit id), or null for an empty ledger. */
  readonly revision: string | null;
  /**
   * The text of a file, or undefined when it does not exist. A file whose
   * record cannot be read (its ref is not a commit, its bytes are not UTF-8)
   * throws a LedgerRecordError naming it: never undefined.
   */
  read(path: string): string | undefined;
  /** Paths of the files under a folder prefix (e.g. 'workflows/'), sorted; unreadable records included. */
  list(prefix: string): string[];
  /** The git ref a file lives on, for messages (undefined when the store has no refs). */
  refOf?(path: string): string | undefined;
}

/** The outcome of one mutation attempt: files to write (null deletes) and the commit message. */
export interface LedgerChange<T> {
  writes: ReadonlyMap<string, string | null>;
  message: string;
  result: T;
  /**
   * On this snapshot the change read records it does not write (an apply's
   * capture that retires pins reads the other inventories): it is then never
   * pushed on a snapshot that was only last seen (UpdateOptions.readsOnlyItsWrites).
   */
  readOthers?: boolean;
}

export interface UpdateOptions {
  /**
   * The change reads only the records it writes, unless its result says
   * `readOthers`. A store may then try it first on the snapshot it last saw,
   * without asking the remote: the push is the compare-and-swap of exactly
   * those records, so a stale snapshot costs a rejected push and a retry on a
   * fresh read, never a wrong write.
   */
  readsOnlyItsWrites?: boolean;
}

export interface LedgerStore {
  /** A human-readable description of where the ledger lives (never contains credentials). */
  readonly description: string;
  /** The latest snapshot of the ledger. */
  read(): Promise<LedgerSnapshot>;
  /**
   * Applies `mutate` to the latest snapshot and commits its writes as one commit,
   * pushed without force. When the push is rejected because someone else wrote
   * first, `mutate` is applied again to the new snapshot (with jittered backoff),
   * a bounded number of times. `mutate` must be pure with respect to the snapshot:
   * it may run several times. Throwing from `mutate` aborts without writing.
   * A change with no writes commits nothing and returns its result.
   */
  update<T>(mutate: (snapshot: LedgerSnapshot) => LedgerChange<T>, options?: UpdateOptions): Promise<T>;
  /**
   * Brings a ledger written in an older layout to the current one, keeping its
   * history (any write does this too), and returns how many files it holds.
   */
  migrate(): Promise<number>;
}
