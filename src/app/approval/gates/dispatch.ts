/**
 * Dispatch mode: this run plans and ends awaiting approval; someone other than
 * the requester decides in a run of their own (decideByDispatch), which starts
 * the continuation that applies the approved plan.
 */
import type { ApprovalGate } from '../../ports/approval-gate.js';

export function dispatchGate(): ApprovalGate {
  return {
    mode: 'dispatch',
    decideNow: async () => undefined,
    awaitDecision: async () => undefined,
    howToDecide: (workflow) => `workflow ${workflow.id} is awaiting approval; nothing was applied`,
  };
}
