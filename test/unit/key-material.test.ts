/** Issue 23: one key-material reader for every face (src/app/keys/key-material.ts). */
import { chmod, mkdtemp, rm, stat, writeFile, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { privateKeyFile, sealKeyOf } from '../../src/app/keys/key-material.js';
import { SecretRegistry } from '../../src/app/runtime/secrets.js';
import { generateKeyPair } from '../support/loopback-host.js';

let dir: string;
let copies: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'exocomp-keymat-'));
  copies = await mkdtemp(join(tmpdir(), 'exocomp-keymat-copies-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
  await rm(copies, { recursive: true, force: true });
});

const SEAL = 'c2VhbC1rZXktZm9yLXRlc3RzLW9ubHktMDEyMzQ1Njc4OQ==';

describe('private keys', () => {
  it('copies a world-readable key file (a GitLab File variable) into a private 0600 file, leaving the original alone', async () => {
    const key = await generateKeyPair(dir, 'fleet');
    await chmod(key.privateKeyPath, 0o666);
    const warned: string[] = [];
    const secrets = new SecretRegistry();
    const copy = await privateKeyFile(
      { role: 'EXOCOMP_FLEET_KEY', given: key.privateKeyPath, cwd: dir },
      copies,
      'fleet-key',
      secrets,
      (m) => warned.push(m),
    );
    expect((await stat(copy)).mode & 0o777).toBe(0o600);
    expect((await stat(key.privateKeyPath)).mode & 0o777).toBe(0o666);
    const text = await readFile(key.privateKeyPath, 'utf8');
    expect(await readFile(copy, 'utf8')).toBe(text);
    expect(secrets.exposes(text)).toBe(true);
    expect(warned.join()).toContain(`chmod 600 ${key.privateKeyPath}`);
  });

  it('takes the key as a value (a secret), adding the final newline ssh needs', async () => {
    const key = await generateKeyPair(dir, 'fleet');
    const text = (await readFile(key.privateKeyPath, 'utf8')).trimEnd();
    const copy = await privateKeyFile(
      { role: 'the fleet-private-key input', given: text, cwd: dir },
      copies,
      'k',
      new SecretRegistry(),
    );
    expect(await readFile(copy, 'utf8')).toBe(`${text}\n`);
  });

  it('refuses, readably, a value that is neither a key nor a readable file, without showing a secret-looking value', async () => {
    const missing = privateKeyFile(
      { role: '--fleet-key', given: 'keys/missing', cwd: dir },
      copies,
      'k',
      new SecretRegistry(),
    );
    await expect(missing).rejects.toThrow(
      '--fleet-key "keys/missing" is neither an SSH private key nor the path of a readable file',
    );
    const blob = 'b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW';
    const refused = privateKeyFile(
      { role: 'EXOCOMP_FLEET_KEY', given: blob, cwd: dir },
      copies,
      'k',
      new SecretRegistry(),
    );
    await expect(refused).rejects.toThrow('EXOCOMP_FLEET_KEY is neither an SSH private key');
    await expect(refused).rejects.not.toThrow(blob.slice(0, 20));
  });

  it('refuses a public key given as a file, naming it', async () => {
    const key = await generateKeyPair(dir, 'fleet');
    await expect(
      privateKeyFile(
        { role: '--fleet-key', given: `${key.privateKeyPath}.pub`, cwd: dir },
        copies,
        'k',
        new SecretRegistry(),
      ),
    ).rejects.toThrow('is a public key');
  });
});

describe('the seal key', () => {
  it('is read from a file (a File variable) and as a value, the same key', async () => {
    const file = join(dir, 'EXOCOMP_SEAL_KEY');
    await writeFile(file, `${SEAL}\n`, { mode: 0o666 });
    const secrets = new SecretRegistry();
    expect(await sealKeyOf({ role: 'EXOCOMP_SEAL_KEY', given: file, cwd: dir }, secrets)).toBe(SEAL);
    expect(await sealKeyOf({ role: 'EXOCOMP_SEAL_KEY', given: SEAL, cwd: dir }, secrets)).toBe(SEAL);
    expect(secrets.exposes(SEAL)).toBe(true);
  });

  it('refuses a path that names no file: a path is never used as the key', async () => {
    for (const given of ['/builds/acme/infra.tmp/EXOCOMP_SEAL_KEY', './keys/seal.key', 'keys/production-seal.key'])
      await expect(sealKeyOf({ role: 'EXOCOMP_SEAL_KEY', given, cwd: dir }, new SecretRegistry())).rejects.toThrow(
        'looks like a file path, but no file is there',
      );
  });

  it('still refuses a value too short to be a seal key', async () => {
    await expect(sealKeyOf({ role: '--seal-key', given: 'short', cwd: dir }, new SecretRegistry())).rejects.toThrow(
      'too short',
    );
  });
});
