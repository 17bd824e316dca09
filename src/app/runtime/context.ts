/**
 * What every use case gets from its entry point: the ledger, a clock, the
 * environment it may read, and a progress port. Entry points build it; use
 * cases never reach for process.* themselves.
 */
import type { LedgerStore } from '../../ledger/store.js';
import type { ProgressListener } from './progress.js';

export interface AppContext {
  store: LedgerStore;
  /** The ledger branch name, for messages. */
  ledgerBranch: string;
  now: () => Date;
  cwd: string;
  env: NodeJS.ProcessEnv;
  progress: ProgressListener;
  /** Aborted (with an InterruptedError) when the run is told to stop: the running step stops and is recorded as interrupted. */
  interrupt?: AbortSignal;
}
