/**
 * `provision status`: what the ledger holds — one workflow, or every workflow
 * with the drift checks of each workspace and the ticks each schedule missed.
 * Records that cannot be read are listed, never rewritten.
 */
import type { DriftHistory } from '../../domain/drift-history.js';
import { missedTicksOf } from '../../domain/schedule-fires.js';
import { viewWorkflow, type WorkflowView } from '../../domain/render.js';
import type { Workflow } from '../../domain/workflow.js';
import { listDriftHistories, listScheduleFires, listWorkflows, requireWorkflow } from '../../ledger/records.js';
import type { AppContext } from '../runtime/context.js';

export interface LedgerStatus {
  workflows: Workflow[];
  drift: DriftHistory[];
  schedules: Array<{ name: string; cron: string; fires: number; missedTicks: Date[] }>;
  errors: Array<{ file: string; reason: string; message: string }>;
  /** Where the ledger is, for messages. */
  where: string;
  now: Date;
}

export async function workflowStatus(app: AppContext, id: string): Promise<WorkflowView> {
  return viewWorkflow(await workflowRecord(app, id), app.now());
}

/** The workflow record `id` (a face renders it its own way); refuses an id the ledger does not hold. */
export async function workflowRecord(app: AppContext, id: string): Promise<Workflow> {
  return requireWorkflow(await app.store.read(), id);
}

export async function ledgerStatus(app: AppContext): Promise<LedgerStatus> {
  const snapshot = await app.store.read();
  const now = app.now();
  const listed = listWorkflows(snapshot);
  const drift = listDriftHistories(snapshot);
  return {
    workflows: listed.workflows,
    drift: drift.histories,
    schedules: listScheduleFires(snapshot).map((f) => ({
      name: f.name,
      cron: f.cron,
      fires: f.fires.length,
      missedTicks: missedTicksOf(f, now),
    })),
    errors: [...listed.errors, ...drift.errors],
    where: app.store.description,
    now,
  };
}
