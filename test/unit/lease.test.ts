import { describe, expect, it } from 'vitest';
import type { Lease } from '../../src/domain/workflow.js';
import { holderFacts } from '../../src/app/runtime/lease.js';

const lease = (holder: string): Lease => ({
  holder,
  origin: { kind: 'local', hostname: 'runner', pid: 1 },
  acquiredAt: '2026-01-01T00:00:00.000Z',
  heartbeatAt: '2026-01-01T00:00:00.000Z',
  ttlMs: 60_000,
});

describe('holderFacts: a probe of a holder counts only for the lease it probed', () => {
  it.each([
    ['the same holder, judged gone', lease('a'), lease('a'), true, { holderGone: true }],
    ['the same holder, judged alive', lease('a'), lease('a'), false, { holderGone: false }],
    ['the same holder, not judged', lease('a'), lease('a'), undefined, {}],
    ['another holder took the lease since the probe', lease('a'), lease('b'), true, {}],
    ['the lease was released since the probe', lease('a'), undefined, true, {}],
    ['nothing was probed', undefined, lease('a'), undefined, {}],
  ] as const)('%s', (_why, probed, current, gone, facts) => {
    expect(holderFacts(probed, current, gone)).toEqual(facts);
  });
});
