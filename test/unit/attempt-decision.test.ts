/**
 * Issue 39, item 6: the approval of this attempt from GitHub's review log, whose order GitHub does not document —
 * the same verdict whichever way the log is ordered, oldest first or newest first.
 */
import { describe, expect, it } from 'vitest';
import { attemptDecision } from '../../src/platform/github/approval.js';
import type { RunApproval } from '../../src/platform/github/port.js';

const run = { runId: 42, slug: 'acme/infra' };
const review = (state: RunApproval['state'], user: string): RunApproval => ({
  state,
  user,
  environments: ['production'],
  comment: `${state} by ${user}`,
});
const bothOrders = (log: RunApproval[]) => [log, [...log].reverse()];

describe('attemptDecision', () => {
  it('a re-run approved after an earlier attempt was rejected: the approval, in either order (newest first too)', () => {
    for (const log of bothOrders([review('rejected', 'bob'), review('approved', 'carol')]))
      expect(attemptDecision(log, 'production', run)).toMatchObject({ state: 'approved', user: 'carol' });
  });

  it('several approvals by one person: that person', () => {
    for (const log of bothOrders([review('approved', 'carol'), review('rejected', 'bob'), review('approved', 'carol')]))
      expect(attemptDecision(log, 'production', run).user).toBe('carol');
  });

  it('approvals by several people: which one is this attempt’s cannot be told, so it refuses, naming them', () => {
    for (const log of bothOrders([review('approved', 'alice'), review('approved', 'carol')]))
      expect(() => attemptDecision(log, 'production', run)).toThrow(/by alice, carol|by carol, alice/);
  });

  it('only a rejection: refused as rejected; nothing: refused as unapproved', () => {
    expect(() => attemptDecision([review('rejected', 'bob')], 'production', run)).toThrow('bob rejected');
    expect(() => attemptDecision([], 'production', run)).toThrow('has no approval for environment "production"');
  });
});
