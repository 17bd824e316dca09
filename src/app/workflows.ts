/** Read-modify-write of one workflow record as one ledger commit. */
import type { Workflow } from '../domain/workflow.js';
import { LEDGER_PATHS, requireWorkflow, serializeRecord } from '../ledger/records.js';
import type { AppContext } from './context.js';

export async function saveWorkflow(
  app: AppContext,
  id: string,
  change: (workflow: Workflow) => Workflow,
  message: string,
): Promise<Workflow> {
  return app.store.update((snapshot) => {
    const next = change(requireWorkflow(snapshot, id));
    return { writes: new Map([[LEDGER_PATHS.workflow(id), serializeRecord(next)]]), message, result: next };
  });
}
