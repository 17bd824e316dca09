/**
 * Starting a workflow's continuation in CI (a dispatch-mode approval, the
 * resume sweeper): the platform starts the run, and the workflow records it —
 * when, how often, and which run when the platform says — so the sweeper can
 * tell a continuation still queued from one that ended without starting the
 * chain (src/domain/continuation.ts).
 */
import { describeError } from '../../domain/errors.js';
import { recordContinuation, type Workflow } from '../../domain/workflow.js';
import type { AppContext } from '../runtime/context.js';
import type { CiPlatform, StartedContinuation } from '../ports/ci-platform.js';
import { saveWorkflow } from '../provision/workflows.js';

/**
 * Starts the continuation of `workflow` and records it. The run is started
 * first: when the record cannot be written, the continuation runs anyway and
 * only a warning says that the sweeper will judge it by its age.
 */
export async function startContinuation(
  app: AppContext,
  platform: Pick<CiPlatform, 'dispatchContinuation' | 'log'>,
  workflow: Workflow,
  target: string | undefined,
): Promise<StartedContinuation> {
  const started = await platform.dispatchContinuation(workflow, target);
  const what = started.run ? `run ${started.run.id}` : `${started.target} on ${started.ref}`;
  try {
    await saveWorkflow(
      app,
      workflow.id,
      (w) => recordContinuation(w, started.run, app.now()),
      `${workflow.id}: continuation started (${what})`,
    );
  } catch (error) {
    platform.log.warning(
      `started the continuation of ${workflow.id} (${what}) but could not record it in the ledger: ${describeError(error).split('\n')[0]}; the resume sweeper judges it by its age`,
    );
  }
  return started;
}
