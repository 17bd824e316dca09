/**
 * Which steps and workflows CI jobs left behind (src/app/provision/interrupted.ts):
 * here, recording a step its job was killed in (issue 10 item 1, the post step).
 */
import { describe, expect, it } from 'vitest';
import { recordAbandonedStep } from '../../src/app/provision/interrupted.js';
import type { AppContext } from '../../src/app/runtime/context.js';
import { RecordingProgress } from '../../src/app/runtime/progress.js';
import { startStep, stepOf, succeedStep, type Workflow } from '../../src/domain/workflow.js';
import { LEDGER_PATHS, requireWorkflow, serializeRecord } from '../../src/ledger/records.js';
import { MemoryLedgerStore } from '../../src/ledger/memory-store.js';
import { localLease, sampleWorkflow, T0 } from '../support/workflows.js';

const later = new Date(T0.getTime() + 5_000);

function ledgerWith(workflow: Workflow) {
  const store = new MemoryLedgerStore({ files: { [LEDGER_PATHS.workflow(workflow.id)]: serializeRecord(workflow) } });
  const app: AppContext = {
    store,
    ledgerBranch: 'exocomp-ledger',
    now: () => later,
    cwd: '/nonexistent',
    env: {},
    progress: new RecordingProgress(),
  };
  return { store, app };
}

describe('recordAbandonedStep', () => {
  it('records a step still running under the holder as interrupted, with the reason, and releases its lease', async () => {
    const running = startStep(sampleWorkflow('edge-1'), 'apply', localLease('job-a'), T0);
    const { store, app } = ledgerWith(running);
    const recorded = await recordAbandonedStep(app, 'edge-1', 'apply', 'job-a', 'the job was killed');
    expect(recorded?.state).toBe('provision-failed');
    expect(recorded?.failure).toMatchObject({
      step: 'apply',
      kind: 'interrupted',
      summary: 'apply interrupted: the job was killed',
      at: later.toISOString(),
    });
    const saved = requireWorkflow(await store.read(), 'edge-1');
    expect(stepOf(saved, 'apply')).toMatchObject({ state: 'failed' });
    expect(stepOf(saved, 'apply').lease).toBeUndefined();
    expect(store.history().map((c) => c.message)).toContain('edge-1: apply failed (interrupted)');
  });

  it.each([
    [
      'recorded by its holder',
      (w: Workflow) => succeedStep(startStep(w, 'apply', localLease('job-a'), T0), 'apply', 'job-a', T0, 'applied'),
    ],
    ['taken over by another holder', (w: Workflow) => startStep(w, 'apply', localLease('job-b'), T0)],
    ['never started', (w: Workflow) => w],
  ])('writes nothing for a step %s', async (_case, shape) => {
    const { store, app } = ledgerWith(shape(sampleWorkflow('edge-1')));
    const commits = store.history().length;
    expect(await recordAbandonedStep(app, 'edge-1', 'apply', 'job-a', 'the job was killed')).toBeUndefined();
    expect(store.history()).toHaveLength(commits);
  });

  it('writes nothing for a workflow the ledger does not hold', async () => {
    const { store, app } = ledgerWith(sampleWorkflow('edge-1'));
    const commits = store.history().length;
    expect(await recordAbandonedStep(app, 'edge-9', 'apply', 'job-a', 'gone')).toBeUndefined();
    expect(store.history()).toHaveLength(commits);
  });
});
