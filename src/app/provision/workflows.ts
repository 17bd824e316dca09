/** Read-modify-write of one workflow record as one ledger commit. */
import type { Workflow } from '../../domain/workflow.js';
import { RecordWrites, requireWorkflow, type RecordsChange } from '../../ledger/records.js';
import type { AppContext } from '../runtime/context.js';

/**
 * The change reads the workflow record only, and writes it only, so the store
 * may try it on the copy it last saw (the push then succeeds only if the record
 * did not change since). The message may depend on the changed workflow.
 * `also` adds records written in the same commit; when it says it read other
 * records, the write reads the ledger first.
 */
export async function saveWorkflow(
  app: AppContext,
  id: string,
  change: (workflow: Workflow) => Workflow,
  message: string | ((next: Workflow) => string),
  also?: RecordsChange,
): Promise<Workflow> {
  return app.store.update(
    (snapshot) => {
      const next = change(requireWorkflow(snapshot, id));
      const said = typeof message === 'string' ? message : message(next);
      const extra = also?.(snapshot);
      return {
        writes: (extra?.writes ?? new RecordWrites()).workflow(next),
        message: extra ? `${said}; ${extra.message}` : said,
        result: next,
        ...(extra?.readOthers ? { readOthers: true } : {}),
      };
    },
    { readsOnlyItsWrites: true },
  );
}
