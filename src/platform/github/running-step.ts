/**
 * What the main step of a chain action tells its post step (./post-step.ts)
 * through GITHUB_STATE: the step it is running, while it runs. The runner
 * reads the state file even when the main step was killed, and hands the
 * last value written to the post step as STATE_<key>.
 */
import * as core from '@actions/core';
import { z } from 'zod';
import { STEP_NAMES } from '../../domain/workflow.js';
import type { ProgressEvent } from '../../app/runtime/progress.js';
import type { ActionName } from './inputs.js';

/** The actions whose `action.yml` declares this post step: the ones that run chain steps. */
export const CHAIN_ACTIONS = [
  'provision',
  'apply',
  'ssh-wait',
  'onboard',
  'configure',
] as const satisfies readonly ActionName[];
export type ChainAction = (typeof CHAIN_ACTIONS)[number];

export function isChainAction(name: ActionName): name is ChainAction {
  return (CHAIN_ACTIONS as readonly string[]).includes(name);
}

/** The GITHUB_STATE key; the runner hands its value to the post step as the variable STATE_<key>. */
export const STATE_KEY = 'exocompRunningStep';

const runningStepSchema = z.object({
  action: z.enum(CHAIN_ACTIONS),
  workflow: z.string().min(1),
  step: z.enum(STEP_NAMES),
  /** The lease holder the main step armed the step with. */
  holder: z.string().min(1),
});
export type RunningStep = z.infer<typeof runningStepSchema>;

/**
 * Keeps GITHUB_STATE naming the step the main step is running: set once the
 * step is armed (`running` in the ledger under `holder`), cleared once its
 * outcome is recorded. The last value written is what the post step gets.
 */
export class RunningStepMemo {
  private holder: string | undefined;

  constructor(private readonly action: ChainAction) {}

  /** The lease holder of this job; steps started before it is known are not remembered. */
  heldBy(holder: string): void {
    this.holder = holder;
  }

  observe(event: ProgressEvent): void {
    if (event.type === 'step-started' && this.holder !== undefined) {
      const running: RunningStep = {
        action: this.action,
        workflow: event.workflow,
        step: event.step,
        holder: this.holder,
      };
      core.saveState(STATE_KEY, JSON.stringify(running));
    }
    if (event.type === 'step-succeeded' || event.type === 'step-failed') core.saveState(STATE_KEY, '');
  }
}

/** The step the main step left running, or undefined when it recorded every step it started. */
export function rememberedStep(): RunningStep | undefined {
  const saved = core.getState(STATE_KEY);
  if (saved === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(saved);
  } catch {
    value = undefined;
  }
  const parsed = runningStepSchema.safeParse(value);
  if (!parsed.success) {
    core.warning(
      `the main step left unreadable state (${STATE_KEY}); nothing was recorded — the resume sweeper continues the workflow once this run is over`,
    );
    return undefined;
  }
  return parsed.data;
}
