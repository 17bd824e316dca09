/**
 * What every step of the chain is given and returns; the steps depend on this,
 * not on the chain that walks them.
 */
import type { ResolvedInventory } from '../../../domain/standing-inventory.js';
import type { Workflow } from '../../../domain/workflow.js';
import type { RecordsChange } from '../../../ledger/records.js';
import type { AppContext } from '../../runtime/context.js';
import type { LookAhead } from '../look-ahead.js';
import type { SshAgent } from '../../../adapters/ssh.js';
import type { ControlDir } from '../../../adapters/ansible.js';
import type { ScannedHostKeys } from '../../hosts/pins.js';
import type { RunInputs } from '../../plays/run-inputs.js';
import type { SshWaited } from './ssh-wait.js';

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
  /** What the earlier steps of this run handed on; empty in a resume or a per-step job, whose steps read the ledger. */
  handedOn: HandedOn;
  /** The next step runs in this run once this one succeeded (not a per-step job): worth starting what it will take. */
  nextRunsHere: boolean;
  /**
   * Hands over what the step leaves closing (a play's SSH connections, agent and
   * files): the chain awaits it once the step's outcome is written, before the next step.
   */
  deferClose(closing: Promise<void>): void;
}

/** What a step hands to the later steps of the same run, beside what it records. */
export interface HandedOn {
  /**
   * tf:<name> as apply's capture wrote it: the steps that act on the apply's
   * hosts take it instead of reading it back.
   */
  inventory?: () => ResolvedInventory;
  /** The wait for the captured hosts' banners, started by apply while its success is written, for ssh-wait to take. */
  sshWait?: LookAhead<SshWaited>;
  /** The hosts' keys, scanned once ssh-wait saw every banner (while the hand-over is written), for onboarding to pin. */
  hostKeys?: LookAhead<ScannedHostKeys>;
  /** An agent holding the fleet key, started by onboarding while it pins and plays, for configure's play. */
  fleetAgent?: LookAhead<SshAgent>;
  /** The fleet-login proof's connections, kept open by onboarding for configure's play to ride (no key exchange of its own). */
  fleetConnections?: LookAhead<ControlDir>;
}

/**
 * What a step hands back: the detail line its success records, and records it
 * made that are written in the same commit as that success (apply's capture).
 */
export interface StepResult {
  detail: string;
  records?: RecordsChange;
  /** Handed to the later steps of this run once the success is written. */
  handOn?: HandedOn;
}

/** A step returns its detail line (or a StepResult), or throws an ExocompError. */
export type StepAction = (context: StepContext) => Promise<string | StepResult>;
