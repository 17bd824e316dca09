/**
 * Issue 36 item 5: a lock left held is named from the lock error tofu/terraform print (statemgr.LockInfo), with the
 * exact force-unlock command for the binary and workspace directory.
 */
import { describe, expect, it } from 'vitest';
import { forceUnlockCommand, parseStateLock, stateLockedError } from '../../src/domain/state-lock.js';

/** The detail of terraform 1.11's "Error acquiring the state lock" diagnostic against the http backend. */
const DETAIL = [
  'Error message: HTTP remote state already locked: ID=9c1f7b0e-2a41-5d7c-8e1b-3f0a6c2d9e44',
  'Lock Info:',
  '  ID:        9c1f7b0e-2a41-5d7c-8e1b-3f0a6c2d9e44',
  '  Path:      ',
  '  Operation: OperationTypeApply',
  '  Who:       root@runner-7',
  '  Version:   1.11.4',
  '  Created:   2026-12-03 18:40:12.5 +0000 UTC',
  '  Info:      ',
  '',
  'Terraform acquires a state lock to protect the state from being written',
  'by multiple users at the same time.',
].join('\n');

describe('a held state lock', () => {
  it('is read from the lock error: its ID, holder, operation and time', () => {
    expect(parseStateLock(DETAIL)).toEqual({
      id: '9c1f7b0e-2a41-5d7c-8e1b-3f0a6c2d9e44',
      who: 'root@runner-7',
      operation: 'OperationTypeApply',
      created: '2026-12-03 18:40:12.5 +0000 UTC',
    });
  });

  it('takes the holder’s ID from the message when the info shown is the asking run’s (terraform’s http backend)', () => {
    const asking = DETAIL.replace('ID:        9c1f', 'ID:        0000').replace(
      'OperationTypeApply',
      'OperationTypePlan',
    );
    expect(parseStateLock(asking)).toEqual({ id: '9c1f7b0e-2a41-5d7c-8e1b-3f0a6c2d9e44' });
  });

  it('is not made up from text without lock info, nor from an ID that could be shell syntax', () => {
    expect(parseStateLock('Error: Failed to load state')).toBeUndefined();
    expect(parseStateLock('Lock Info:\n  ID:        $(reboot)\n')).toBeUndefined();
  });

  it('names the exact command for the binary and the workspace, quoting a directory that needs it', () => {
    const lock = { id: 'abc-1' };
    expect(forceUnlockCommand('terraform', '/srv/infra/edge', lock)).toBe(
      'terraform -chdir=/srv/infra/edge force-unlock abc-1',
    );
    expect(forceUnlockCommand('tofu', "/srv/it's here", lock)).toBe(
      "tofu -chdir='/srv/it'\\''s here' force-unlock abc-1",
    );
  });

  it('fails the run with a first line that names the lock, its holder and the command', () => {
    const error = stateLockedError('terraform', '/srv/edge', parseStateLock(DETAIL)!);
    const first = error.message.split('\n')[0];
    expect(first).toContain('lock ID 9c1f7b0e-2a41-5d7c-8e1b-3f0a6c2d9e44');
    expect(first).toContain('held by root@runner-7 for OperationTypeApply');
    expect(first).toContain('`terraform -chdir=/srv/edge force-unlock 9c1f7b0e-2a41-5d7c-8e1b-3f0a6c2d9e44`');
    expect(error.kind).toBe('tool-failed');
  });
});
