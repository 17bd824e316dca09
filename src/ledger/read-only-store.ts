/**
 * A ledger a job may read but not change: a preview (a pull request's plan)
 * records nothing, whatever runs inside it. A change with writes is refused
 * before anything is pushed; a change without writes returns its result.
 */
import { ExocompError } from '../domain/errors.js';
import type { LedgerChange, LedgerSnapshot, LedgerStore } from './store.js';

export function readOnlyStore(store: LedgerStore, why: string): LedgerStore {
  return {
    description: `${store.description} (read-only: ${why})`,
    read: () => store.read(),
    async update<T>(mutate: (snapshot: LedgerSnapshot) => LedgerChange<T>): Promise<T> {
      const change = mutate(await store.read());
      if (change.writes.size > 0) {
        throw new ExocompError(
          'internal',
          `${why} records nothing, yet it tried to write ${[...change.writes.keys()].join(', ')} (${change.message})`,
          {
            help: 'nothing was written; report this as a bug',
          },
        );
      }
      return change.result;
    },
    migrate: () =>
      Promise.reject(new ExocompError('internal', `${why} records nothing: the ledger is not migrated here`)),
  };
}
