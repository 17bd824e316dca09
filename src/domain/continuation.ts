/**
 * When the resume sweeper starts a continuation of a workflow whose chain is
 * not moving — approved but never started, or its running step's holder gone
 * (docs/github.md, "Continuations and the resume sweeper"). A continuation
 * whose run the platform reports queued or in progress is left alone; one
 * whose run ended without moving the chain is started again, a bounded number
 * of times; without a run to judge, the age of the last start decides.
 */
import type { Continuation } from './workflow.js';

/** Continuations started without the chain moving after which the sweeper stops starting more. */
export const MAX_CONTINUATIONS = 3;

/**
 * `start` a continuation; one is `continuing` (its run is queued or in
 * progress, or it started less than the grace ago and cannot be judged);
 * `wait` (nothing started yet and the grace has not passed); `gave-up` after
 * MAX_CONTINUATIONS that ended without moving the chain.
 */
export type ContinuationVerdict = 'start' | 'continuing' | 'wait' | 'gave-up';

export interface ContinuationFacts {
  /** The continuation recorded on the workflow, if any. */
  continuation: Continuation | undefined;
  /** When the chain last moved (the approval, or the held step's lease): a continuation started before it is done with. */
  movedAt: string;
  /** The platform's word on the recorded continuation's run: ended, still queued or running (false), or unknown/none (undefined). */
  runEnded: boolean | undefined;
  now: Date;
  /** How long a start with no run to judge is given before another. */
  graceMs: number;
  /** How long after `movedAt` the first continuation is started: the grace for an approval (its own continuation may be queued), 0 for a gone holder. */
  firstAfterMs: number;
}

export function continuationVerdict(facts: ContinuationFacts): ContinuationVerdict {
  const now = facts.now.getTime();
  const current =
    facts.continuation !== undefined && Date.parse(facts.continuation.at) >= Date.parse(facts.movedAt)
      ? facts.continuation
      : undefined;
  if (current === undefined) return now - Date.parse(facts.movedAt) >= facts.firstAfterMs ? 'start' : 'wait';
  if (facts.runEnded === false) return 'continuing';
  const over = facts.runEnded === true || now - Date.parse(current.at) >= facts.graceMs;
  if (!over) return 'continuing';
  return current.dispatches >= MAX_CONTINUATIONS ? 'gave-up' : 'start';
}
