/** Who may approve (src/app/approval/gates/approver.ts): the one rule the dispatch, environment and GitLab manual modes share. */
import { describe, expect, it } from 'vitest';
import { isSelfApproval, judgeSelfApproval, requireRightToDecide } from '../../src/app/approval/gates/approver.js';
import type { AppContext } from '../../src/app/runtime/context.js';
import { RecordingProgress } from '../../src/app/runtime/progress.js';
import { MemoryLedgerStore } from '../../src/ledger/memory-store.js';
import { fakeCiPlatform } from '../support/fake-ci-platform.js';
import { sampleWorkflow, T0 } from '../support/workflows.js';

const workflow = sampleWorkflow('edge-1', { requireApproval: true });
const say = { refused: 'refused: the requester approved', help: 'ask someone else' };

function app(): AppContext & { progress: RecordingProgress } {
  return {
    store: new MemoryLedgerStore(),
    ledgerBranch: 'exocomp-ledger',
    now: () => T0,
    cwd: '/nonexistent',
    env: {},
    progress: new RecordingProgress(),
  };
}

describe('judgeSelfApproval', () => {
  it('is about the requester only: someone else approving passes under every policy, with nothing said', () => {
    for (const policy of ['refuse', 'warn', 'allow'] as const) {
      const context = app();
      expect(() => judgeSelfApproval(context, `not-${workflow.requester}`, workflow, policy, say)).not.toThrow();
      expect(context.progress.events).toEqual([]);
    }
  });

  it('refuses the requester as an approval error in the mode’s own words', () => {
    const context = app();
    expect(() => judgeSelfApproval(context, workflow.requester, workflow, 'refuse', say)).toThrow(
      expect.objectContaining({ kind: 'approval', message: say.refused, help: say.help }),
    );
  });

  it('lets the requester through with a warning when told to warn, and silently when allowed', () => {
    const warned = app();
    judgeSelfApproval(warned, workflow.requester, workflow, 'warn', {
      ...say,
      warned: 'self-approved: fix the environment',
    });
    expect(warned.progress.events).toEqual([{ type: 'warning', message: 'self-approved: fix the environment' }]);
    const defaulted = app();
    judgeSelfApproval(defaulted, workflow.requester, workflow, 'warn', say);
    expect(defaulted.progress.events).toEqual([
      { type: 'warning', message: `${workflow.requester} approved workflow edge-1, which they requested` },
    ]);
    const allowed = app();
    judgeSelfApproval(allowed, workflow.requester, workflow, 'allow', say);
    expect(allowed.progress.events).toEqual([]);
  });

  it('compares names exactly', () => {
    expect(isSelfApproval('alice', 'alice')).toBe(true);
    expect(isSelfApproval('alice', 'Alice')).toBe(false);
    expect(isSelfApproval('alice', 'bob')).toBe(false);
  });
});

describe('requireRightToDecide', () => {
  it('passes someone the platform lets decide, and refuses anyone else with the platform’s reason', async () => {
    await expect(
      requireRightToDecide(fakeCiPlatform({ mayDecide: true }), 'bob', {
        kind: 'permission',
        because: 'needs write',
        help: 'ask',
      }),
    ).resolves.toBeUndefined();
    await expect(
      requireRightToDecide(fakeCiPlatform({ mayDecide: false }), 'bob', {
        kind: 'approval',
        because: 'needs a protected branch',
        help: 'protect it',
      }),
    ).rejects.toMatchObject({
      kind: 'approval',
      message: 'bob has read access; needs a protected branch',
      help: 'protect it',
    });
  });
});
