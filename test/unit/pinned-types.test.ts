import { describe, expect, it } from 'vitest';
import { pinnedTypesToScan, scanTypeOf, type Pin } from '../../src/domain/known-hosts.js';

const pin = (name: string, keyType: string, key: string): Pin => ({ name, keyType, key });

describe('pinned key types a narrow scan did not ask for', () => {
  const rsaOnly = [pin('old', 'ssh-rsa', 'AAAAr1'), pin('old', 'ecdsa-sha2-nistp256', 'AAAAe1')];

  it('asks for the pinned types of a host whose scan shares no key with its pins', () => {
    const scanned = new Map([['old', [pin('old', 'ssh-ed25519', 'AAAAd1')]]]);
    expect(pinnedTypesToScan(rsaOnly, scanned)).toEqual(new Map([['old', ['ecdsa', 'rsa']]]));
  });

  it('asks nothing for a host whose scan shares a key, a new host, or one scanned with its pinned types', () => {
    const pins = [pin('web', 'ssh-ed25519', 'AAAAd1'), pin('web', 'ssh-rsa', 'AAAAr1'), ...rsaOnly];
    const scanned = new Map([
      ['web', [pin('web', 'ssh-ed25519', 'AAAAd1')]],
      ['new', [pin('new', 'ssh-ed25519', 'AAAAd2')]],
      // Scanned with its pinned type and still different: a changed key, for reconcilePins to refuse.
      ['old', [pin('old', 'ssh-rsa', 'AAAAr9'), pin('old', 'ecdsa-sha2-nistp256', 'AAAAe9')]],
    ]);
    expect(pinnedTypesToScan(pins, scanned)).toEqual(new Map());
  });

  it('names key types as ssh-keyscan -t does', () => {
    expect(['ssh-ed25519', 'ssh-rsa', 'ecdsa-sha2-nistp384', 'sk-ssh-ed25519@openssh.com'].map(scanTypeOf)).toEqual([
      'ed25519',
      'rsa',
      'ecdsa',
      'ed25519-sk',
    ]);
  });
});
