/**
 * When the resume sweeper starts a continuation (src/domain/continuation.ts)
 * and how a started one is recorded (recordContinuation) — issue 10 item 4:
 * the continuation's run id decides before the age rule does.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { continuationVerdict, MAX_CONTINUATIONS, type ContinuationFacts } from '../../src/domain/continuation.js';
import { recordContinuation, startStep, type Continuation } from '../../src/domain/workflow.js';
import { localLease, sampleWorkflow, T0 } from '../support/workflows.js';

const MIN = 60_000;
const at = (minutes: number) => new Date(T0.getTime() + minutes * MIN).toISOString();
const started = (minutes: number, dispatches = 1, runId: number | undefined = 7): Continuation => ({
  at: at(minutes),
  dispatches,
  ...(runId === undefined ? {} : { runId, runUrl: `u/${runId}` }),
});

/** Approved at T0, judged 10 minutes later with a 30-minute grace, unless the case says otherwise. */
function verdict(facts: Partial<ContinuationFacts>) {
  return continuationVerdict({
    continuation: undefined,
    movedAt: at(0),
    runEnded: undefined,
    now: new Date(at(10)),
    graceMs: 30 * MIN,
    firstAfterMs: 30 * MIN,
    ...facts,
  });
}

describe('continuationVerdict', () => {
  it('with nothing started: waits out the first grace, then starts', () => {
    expect(verdict({})).toBe('wait');
    expect(verdict({ now: new Date(at(30)) })).toBe('start');
    // A gone holder's step: at once.
    expect(verdict({ firstAfterMs: 0 })).toBe('start');
  });

  it('leaves a continuation whose run is queued or running alone, however old', () => {
    expect(verdict({ continuation: started(1), runEnded: false, now: new Date(at(600)) })).toBe('continuing');
  });

  it('starts again, at once, when the continuation’s run ended without moving the chain', () => {
    expect(verdict({ continuation: started(1), runEnded: true })).toBe('start');
  });

  it('falls back to the age of the last start when no run can be judged (no run id, or the platform cannot tell)', () => {
    for (const continuation of [started(1, 1, undefined), started(1)]) {
      expect(verdict({ continuation, runEnded: undefined })).toBe('continuing');
      expect(verdict({ continuation, runEnded: undefined, now: new Date(at(31)) })).toBe('start');
    }
  });

  it(`gives up after ${MAX_CONTINUATIONS} continuations that ended, but not while the last one runs`, () => {
    expect(verdict({ continuation: started(1, MAX_CONTINUATIONS), runEnded: true })).toBe('gave-up');
    expect(verdict({ continuation: started(1, MAX_CONTINUATIONS), runEnded: false })).toBe('continuing');
    expect(verdict({ continuation: started(1, MAX_CONTINUATIONS - 1), runEnded: true })).toBe('start');
  });

  it('ignores a continuation started before the chain last moved (it did its work)', () => {
    const old = started(-5, MAX_CONTINUATIONS);
    expect(verdict({ continuation: old, runEnded: false, firstAfterMs: 0 })).toBe('start');
    expect(verdict({ continuation: old, runEnded: true })).toBe('wait');
  });

  it('never starts one while the recorded run is live, whatever the times and counts', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 10_000 }),
        fc.integer({ min: 1, max: 10 }),
        fc.integer({ min: 0, max: 10_000 }),
        (startMin, dispatches, nowAfter) => {
          const v = verdict({
            continuation: started(startMin, dispatches),
            runEnded: false,
            now: new Date(at(startMin + nowAfter)),
          });
          expect(v).toBe('continuing');
        },
      ),
    );
  });
});

describe('recordContinuation', () => {
  const approved = sampleWorkflow('edge-1', { requireApproval: true });

  it('records when, which run, and counts the starts since the chain last moved', () => {
    const first = recordContinuation(approved, { id: 11, url: 'u/11' }, new Date(at(1)));
    expect(first.continuation).toEqual({ at: at(1), dispatches: 1, runId: 11, runUrl: 'u/11' });
    const second = recordContinuation(first, undefined, new Date(at(40)));
    expect(second.continuation).toEqual({ at: at(40), dispatches: 2 });
  });

  it('counts from one again once a step was armed after the last start', () => {
    const first = recordContinuation(approved, { id: 11, url: 'u/11' }, new Date(at(1)));
    const moved = startStep(
      { ...first, approval: { required: false, state: 'not-required' } },
      'apply',
      localLease('job'),
      new Date(at(2)),
    );
    expect(recordContinuation(moved, { id: 12, url: 'u/12' }, new Date(at(50))).continuation).toMatchObject({
      dispatches: 1,
      runId: 12,
    });
  });
});
