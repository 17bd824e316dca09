/**
 * The resume sweeper (docs/architecture.md, "Leases"): a workflow whose running step is held by
 * a CI run that has completed was interrupted (runner lost, job cancelled);
 * its continuation is dispatched. A step whose holder's run is still live, or
 * cannot be judged, is never touched.
 */
import type { AppContext } from '../../app/context.js';
import { approvedButUnstarted, stepsHeldByCi } from '../../app/interrupted.js';
import type { HolderProbe } from '../../app/lease.js';
import type { Workflow } from '../../domain/workflow.js';
import { continuationRef } from './approval.js';
import type { GitHubPort } from './port.js';
import { workflowFileOf, type RunContext } from './run-context.js';

export interface SweepEntry {
  id: string;
  step: string;
  action: 'dispatched' | 'would-dispatch' | 'live' | 'unknown' | 'no-target';
  workflow?: string;
  ref?: string;
}

export async function sweep(
  app: AppContext,
  github: GitHubPort,
  run: RunContext,
  probe: HolderProbe,
  options: { continueWorkflow: string | undefined; dryRun: boolean; unstartedAfterMs: number },
): Promise<SweepEntry[]> {
  const entries: SweepEntry[] = [];
  for (const workflow of await approvedButUnstarted(app, options.unstartedAfterMs)) {
    entries.push(await continueWorkflow(github, run, workflow, 'apply', options));
  }
  for (const held of await stepsHeldByCi(app, 'ci', probe)) {
    if (held.holder !== 'gone') {
      entries.push({ id: held.workflow.id, step: held.step, action: held.holder });
      continue;
    }
    entries.push(await continueWorkflow(github, run, held.workflow, held.step, options));
  }
  return entries;
}

async function continueWorkflow(
  github: GitHubPort,
  run: RunContext,
  workflow: Workflow,
  step: string,
  options: { continueWorkflow: string | undefined; dryRun: boolean },
): Promise<SweepEntry> {
  const target = options.continueWorkflow ?? workflowFileOf(workflow.trigger.workflowRef);
  if (!target) return { id: workflow.id, step, action: 'no-target' };
  const ref = continuationRef(workflow, run);
  if (!options.dryRun) await github.dispatchWorkflow(run.repository, target, ref, { 'workflow-id': workflow.id });
  return { id: workflow.id, step, action: options.dryRun ? 'would-dispatch' : 'dispatched', workflow: target, ref };
}
