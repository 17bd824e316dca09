/**
 * The approval-gate port: how a workflow whose approval is pending gets its
 * decision. The core (continueWorkflow) owns when the gate is asked, planning
 * for approval, and refusing a rejected workflow; a gate only says whether the
 * decision can be had now. A new mode is a new implementation in
 * src/app/approval/gates/ (or in a platform folder), never an edit of the core.
 */
import type { Workflow } from '../../domain/workflow.js';
import type { AppContext } from '../runtime/context.js';

export interface ApprovalGate {
  /** The mode's name (`local`, `environment`, `dispatch`, …), for messages. */
  readonly mode: string;
  /**
   * Decides now when this mode can, recording the decision in the ledger and
   * returning the updated workflow; undefined when the decision is made
   * elsewhere, later. Throws (an `approval` ExocompError) to refuse.
   */
  decideNow(app: AppContext, workflow: Workflow): Promise<Workflow | undefined>;
  /**
   * Called after the plan awaiting approval is recorded: blocks until the
   * decision is in the ledger and returns the decided workflow; undefined when
   * this run ends awaiting approval instead.
   */
  awaitDecision(app: AppContext, workflow: Workflow): Promise<Workflow | undefined>;
  /** What to tell the requester while the decision is pending. */
  howToDecide(workflow: Workflow): string;
}
