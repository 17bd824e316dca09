/** Read-modify-write of one workflow record as one ledger commit. */
import type { Workflow } from '../domain/workflow.js';
import { RecordWrites, requireWorkflow } from '../ledger/records.js';
import type { AppContext } from './context.js';

export async function saveWorkflow(app: AppContext, id: string, change: (workflow: Workflow) => Workflow, message: string): Promise<Workflow> {
  return app.store.update((snapshot) => {
    const next = change(requireWorkflow(snapshot, id));
    return { writes: new RecordWrites().workflow(next), message, result: next };
  });
}
