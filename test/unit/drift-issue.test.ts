import { describe, expect, it } from 'vitest';
import { configurationDrift, infrastructureDrift, type DriftReport } from '../../src/domain/drift.js';
import { decideDriftIssue, driftIssueMarker, findDriftIssue } from '../../src/domain/drift-issue.js';
import { planJsonSchema } from '../../src/domain/plan.js';

const BOT = 'github-actions[bot]';
const RUN = 'https://github.example/acme/infra/actions/runs/1';

function report(kind: 'clean' | 'drift' | 'failed'): DriftReport {
  const plan = planJsonSchema.parse({
    format_version: '1.2',
    resource_changes: kind === 'drift' ? [{ address: 'r.a', change: { actions: ['update'] } }] : [],
  });
  return {
    workspace: 'edge',
    checkedAt: '2026-11-30T23:00:00.000Z',
    infrastructure:
      kind === 'failed'
        ? { ok: false, error: 'tofu plan failed' }
        : { ok: true, value: infrastructureDrift(plan, 'f', []) },
    configuration: {
      ok: true,
      value: configurationDrift({ checkedHosts: ['web1'], results: [], keyMismatches: [], unreachableBeforePlay: [] }),
    },
  };
}

describe('the sticky drift issue', () => {
  const ours = { number: 7, body: `${driftIssueMarker('edge')}\nold`, author: BOT };

  it('is found by marker and author, never an issue someone else wrote with the marker', () => {
    const forged = { number: 3, body: `${driftIssueMarker('edge')}\nforged`, author: 'mallory' };
    const otherWorkspace = { number: 5, body: `${driftIssueMarker('edgy')}\n`, author: BOT };
    expect(findDriftIssue([forged, otherWorkspace, ours], 'edge', BOT)).toBe(ours);
    expect(findDriftIssue([forged], 'edge', BOT)).toBeUndefined();
  });

  it.each<[string, 'clean' | 'drift' | 'failed', boolean, string]>([
    ['drift, none open', 'drift', false, 'open'],
    ['drift, one open', 'drift', true, 'update'],
    ['clean, one open', 'clean', true, 'close'],
    ['clean, none open', 'clean', false, 'none'],
    ['a failed check, one open', 'failed', true, 'update'],
    ['a failed check, none open', 'failed', false, 'none'],
  ])('%s → %s', (_label, kind, open, expected) => {
    const action = decideDriftIssue(report(kind), open ? ours : undefined, RUN);
    expect(action.kind).toBe(expected);
    if (action.kind === 'open' || action.kind === 'update') {
      expect(action.body.startsWith(driftIssueMarker('edge'))).toBe(true);
      expect(action.body).toContain(RUN);
    }
    if (action.kind === 'close') expect(action.comment).toContain('No drift any more');
  });
});
