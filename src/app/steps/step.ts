/**
 * What every step of the chain is given and returns; the steps depend on this,
 * not on the chain that walks them.
 */
import type { ResolvedInventory } from '../../domain/standing-inventory.js';
import type { Workflow } from '../../domain/workflow.js';
import type { RecordsChange } from '../../ledger/records.js';
import type { AppContext } from '../context.js';
import type { RunInputs } from '../run-inputs.js';

export interface StepContext {
  app: AppContext;
  workflow: Workflow;
  inputs: RunInputs;
  info(message: string): void;
  warn(message: string): void;
  /**
   * Aborted when this runner lost the step's lease to another runner (the step
   * must stop its work and record nothing more), or when the run was
   * interrupted (the step stops and is recorded as interrupted).
   */
  signal: AbortSignal;
  /**
   * tf:<name> as this run's apply wrote it, when apply ran earlier in this
   * run: the steps that act on the apply's hosts take it instead of reading it
   * back. Absent (a resume, a per-step job), they read the ledger.
   */
  inventory?: () => ResolvedInventory;
}

/**
 * What a step hands back: the detail line its success records, and records it
 * made that are written in the same commit as that success (apply's capture).
 */
export interface StepResult {
  detail: string;
  records?: RecordsChange;
  /** tf:<name> as `records` write it, for the later steps of this run (StepContext.inventory). */
  inventory?: () => ResolvedInventory;
}

/** A step returns its detail line (or a StepResult), or throws an ExocompError. */
export type StepAction = (context: StepContext) => Promise<string | StepResult>;
