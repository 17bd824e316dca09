/** Local mode: the decision is `exocomp approval decide` in the ledger; the run ends awaiting it, or waits for it. */
import type { ApprovalGate } from '../../ports/approval-gate.js';
import { waitForDecision } from '../approvals.js';

export function localGate(options: { wait: boolean; pollMs?: number }): ApprovalGate {
  return {
    mode: 'local',
    decideNow: async () => undefined,
    awaitDecision: async (app, workflow) =>
      options.wait
        ? waitForDecision(app, workflow.id, options.pollMs === undefined ? {} : { pollMs: options.pollMs })
        : undefined,
    howToDecide: (workflow) => `awaiting approval: exocomp approval decide ${workflow.id} --approve (or --reject)`,
  };
}
