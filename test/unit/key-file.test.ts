import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { judgeKeyFile } from '../../src/domain/key-file.js';

const dir = mkdtempSync(join(tmpdir(), 'exo-keyfile-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const keygen = (name: string, passphrase = '') => {
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', passphrase, '-f', join(dir, name)]);
  return { priv: readFileSync(join(dir, name), 'utf8'), pub: readFileSync(join(dir, `${name}.pub`), 'utf8') };
};
const clear = keygen('clear');
const locked = keygen('locked', 'a passphrase');
const facts = (over: Partial<Parameters<typeof judgeKeyFile>[0]> = {}) => ({
  role: '--fleet-key',
  path: 'keys/fleet',
  isFile: true,
  mode: 0o600,
  text: clear.priv,
  ...over,
});

describe('judgeKeyFile', () => {
  it('accepts an unencrypted private key only readable by its owner', () => {
    expect(judgeKeyFile(facts())).toBeUndefined();
    expect(judgeKeyFile(facts({ mode: 0o400 }))).toBeUndefined();
  });

  it('says which permissions are too open and the chmod that fixes them', () => {
    expect(judgeKeyFile(facts({ mode: 0o644 }))).toEqual({
      message: 'permissions 0644 of --fleet-key keys/fleet are too open: ssh refuses a private key others can read',
      help: 'chmod 600 keys/fleet',
    });
    expect(judgeKeyFile(facts({ mode: 0o640 }))?.message).toMatch(/^permissions 0640 /);
  });

  it('names a public key, a passphrase, a directory and a file that is no key', () => {
    expect(judgeKeyFile(facts({ text: clear.pub }))?.message).toBe('--fleet-key keys/fleet is a public key');
    expect(judgeKeyFile(facts({ text: locked.priv }))?.help).toBe(
      'remove the passphrase: ssh-keygen -p -N "" -f keys/fleet (keep the file 0600, or store it only as a CI secret)',
    );
    expect(judgeKeyFile(facts({ isFile: false }))?.message).toBe('--fleet-key keys/fleet is not a file');
    expect(judgeKeyFile(facts({ text: 'hello' }))?.message).toBe('--fleet-key keys/fleet is not an SSH private key');
  });

  it('speaks of an input, not a path, when the key came as a secret value', () => {
    expect(judgeKeyFile(facts({ role: 'the fleet-private-key input', path: '', text: clear.pub }))?.message).toBe(
      'the fleet-private-key input is a public key',
    );
  });
});
