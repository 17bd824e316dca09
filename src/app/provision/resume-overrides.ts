/**
 * `provision resume <id> --ssh-wait 10m --playbook site.yml`: the settings its
 * own help suggests changing, recorded in the ledger as one commit that says
 * what changed, before the workflow continues.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { formatDuration } from '../../domain/duration.js';
import { UsageError } from '../../domain/errors.js';
import { overrideWorkflow, type ResumeOverrides } from '../../domain/workflow.js';
import { requireWorkflow } from '../../ledger/records.js';
import type { AppContext } from '../runtime/context.js';
import { continueWorkflow, type ContinueOutcome, type ContinueRequest } from './continue-workflow.js';
import { saveWorkflow } from './workflows.js';

export async function applyResumeOverrides(app: AppContext, id: string, overrides: ResumeOverrides): Promise<string[]> {
  // Checked before anything is written: a resume with a playbook that does not exist changes nothing.
  if (overrides.playbook !== undefined && !existsSync(resolve(app.cwd, overrides.playbook))) {
    throw new UsageError(`playbook ${overrides.playbook} does not exist`, 'pass the path of a playbook file');
  }
  const current = requireWorkflow(await app.store.read(), id);
  const preview = overrideWorkflow(current, overrides, app.now(), formatDuration);
  if (preview.changes.length === 0) return [];
  let changes: string[] = [];
  await saveWorkflow(
    app,
    id,
    (w) => {
      const result = overrideWorkflow(w, overrides, app.now(), formatDuration);
      changes = result.changes;
      return result.workflow;
    },
    `${id}: resume with ${preview.changes.join(', ')}`,
  );
  return changes;
}

/** `provision resume`: records the overrides (each change a progress line), then continues the workflow from where the ledger says it stands. */
export async function resumeWorkflow(
  app: AppContext,
  request: Omit<ContinueRequest, 'create' | 'scope'> & { overrides: ResumeOverrides },
): Promise<ContinueOutcome> {
  const { overrides, ...continuing } = request;
  for (const change of await applyResumeOverrides(app, request.workflowId, overrides))
    app.progress.emit({ type: 'info', message: `recorded: ${change}` });
  return continueWorkflow(app, continuing);
}
