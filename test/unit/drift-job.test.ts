/** Which inventory a drift job checks and which schedule tick it records: one rule for the drift action and `exocomp drift`. */
import { describe, expect, it } from 'vitest';
import { driftTarget } from '../../src/app/drift-job.js';
import { thrown } from '../support/errors.js';

describe('driftTarget', () => {
  it('checks the inventory named after the workspace directory by default', () => {
    expect(driftTarget({ workspacePath: 'infra/edge', targetName: '--inventory' })).toEqual({ name: 'edge' });
  });

  it('takes an explicit workspace name, and a target over both', () => {
    expect(driftTarget({ workspacePath: 'infra/edge', workspaceName: 'edge-eu', targetName: 'target' })).toEqual({ name: 'edge-eu' });
    expect(driftTarget({ workspacePath: 'infra/edge', workspaceName: 'edge-eu', target: 'tf:fleet', targetName: 'target' })).toEqual({ name: 'fleet' });
  });

  it('records a tick with the five-field cron CI runs, whether CI gave five fields or the user the six-field form', () => {
    const five = driftTarget({ workspacePath: '.', workspaceName: 'edge', schedule: { name: 'edge-drift', cron: '17 3 * * *' }, targetName: 'target' });
    const six = driftTarget({ workspacePath: '.', workspaceName: 'edge', schedule: { name: 'edge-drift', cron: '0 17 3 * * *' }, targetName: '--inventory' });
    expect(five).toEqual({ name: 'edge', schedule: { name: 'edge-drift', cron: '17 3 * * *' } });
    expect(six).toEqual(five);
  });

  it.each([
    ['a file target', { target: 'hosts.yml' }, /--inventory "hosts.yml" is not a standing inventory/],
    ['a bad schedule name', { schedule: { name: 'Nightly!', cron: '17 3 * * *' } }, /schedule/],
    ['a cron descriptor', { schedule: { name: 'nightly', cron: '@daily' } }, /@daily are not supported/],
  ])('refuses %s as bad usage', (_what, inputs, message) => {
    const error = thrown(() => driftTarget({ workspacePath: 'infra/edge', targetName: '--inventory', ...inputs }));
    expect(error.kind).toBe('usage');
    expect(error.message).toMatch(message);
  });
});
