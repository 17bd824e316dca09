/** Which inventory a drift job checks: one rule for the drift action and `exocomp drift` (schedule ticks: missed-ticks.test.ts). */
import { describe, expect, it } from 'vitest';
import { driftTarget } from '../../src/app/drift/drift-job.js';
import { thrown } from '../support/errors.js';

describe('driftTarget', () => {
  it('checks the inventory named after the workspace directory by default', () => {
    expect(driftTarget({ workspacePath: 'infra/edge', targetName: '--inventory' })).toEqual({ name: 'edge' });
  });

  it('takes an explicit workspace name, and a target over both', () => {
    expect(driftTarget({ workspacePath: 'infra/edge', workspaceName: 'edge-eu', targetName: 'target' })).toEqual({
      name: 'edge-eu',
    });
    expect(
      driftTarget({ workspacePath: 'infra/edge', workspaceName: 'edge-eu', target: 'tf:fleet', targetName: 'target' }),
    ).toEqual({ name: 'fleet' });
  });

  it('carries the schedule tick the face parsed (parseScheduleTick), to be recorded with the check', () => {
    const schedule = { name: 'edge-drift', cron: '17 3 * * *' };
    expect(driftTarget({ workspacePath: '.', workspaceName: 'edge', schedule, targetName: 'target' })).toEqual({
      name: 'edge',
      schedule,
    });
  });

  it.each([['a file target', { target: 'hosts.yml' }, /--inventory "hosts.yml" is not a standing inventory/]])(
    'refuses %s as bad usage',
    (_what, inputs, message) => {
      const error = thrown(() => driftTarget({ workspacePath: 'infra/edge', targetName: '--inventory', ...inputs }));
      expect(error.kind).toBe('usage');
      expect(error.message).toMatch(message);
    },
  );
});
