import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkPlaybookFile, checkPrivateKeyText, readPrivateKeyFile } from '../../src/app/input-checks.js';
import { playbookTextProblem } from '../../src/domain/playbook.js';
import { privateKeyModeProblem, privateKeyTextProblem } from '../../src/domain/private-key.js';
import { thrown } from '../support/errors.js';

const dir = mkdtempSync(join(tmpdir(), 'exocomp-input-checks-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A real key from ssh-keygen, so the format checks follow OpenSSH's own output. */
function keygen(name: string, passphrase: string, type = 'ed25519', format?: string): string {
  const path = join(dir, name);
  execFileSync('ssh-keygen', ['-q', '-t', type, '-N', passphrase, '-C', 'test', '-f', path, ...(format ? ['-m', format] : [])]);
  return path;
}

describe('private keys', () => {
  const plain = keygen('plain', '');
  const protectedKey = keygen('protected', 'secret passphrase');
  const pem = keygen('pem', '', 'ecdsa', 'PEM');
  const pemProtected = keygen('pem-protected', 'passw0rd', 'ecdsa', 'PEM');
  const pkcs8Protected = keygen('pkcs8-protected', 'passw0rd', 'ecdsa', 'PKCS8');

  it('accepts unencrypted OpenSSH and PEM keys', () => {
    expect(readPrivateKeyFile(plain, '--fleet-key')).toContain('OPENSSH PRIVATE KEY');
    expect(readPrivateKeyFile(pem, '--fleet-key')).toContain('EC PRIVATE KEY');
  });

  it.each([
    ['an OpenSSH key', () => protectedKey],
    ['a PEM key', () => pemProtected],
    ['a PKCS#8 key', () => pkcs8Protected],
  ])('refuses %s protected by a passphrase, saying how to use one through an agent', (_label, path) => {
    const error = thrown(() => readPrivateKeyFile(path(), '--bootstrap-key'));
    expect(error.exitCode).toBe(2);
    expect(error.message).toBe(`--bootstrap-key file "${path()}": it is protected by a passphrase`);
    expect(error.help).toContain('ssh-agent');
  });

  it('refuses a public key, an empty file and a directory', () => {
    expect(thrown(() => readPrivateKeyFile(`${plain}.pub`, '--fleet-key')).message).toMatch(/: it is a public key$/);
    const empty = join(dir, 'empty');
    writeFileSync(empty, '', { mode: 0o600 });
    expect(thrown(() => readPrivateKeyFile(empty, '--fleet-key')).message).toMatch(/: it is empty$/);
    expect(thrown(() => readPrivateKeyFile(dir, '--fleet-key')).message).toMatch(/ is not a file$/);
    expect(thrown(() => readPrivateKeyFile(join(dir, 'missing'), '--fleet-key')).message).toMatch(/ does not exist$/);
  });

  it('refuses a key others can read, with the chmod to run', () => {
    const open = keygen('open', '');
    chmodSync(open, 0o644);
    const error = thrown(() => readPrivateKeyFile(open, '--fleet-key'));
    expect(error.message).toBe(`--fleet-key file "${open}": permissions 0644 are too open (others can read the key)`);
    expect(error.help).toBe(`chmod 600 ${open}`);
    expect(privateKeyModeProblem(0o100600, 'k')).toBeUndefined();
    expect(privateKeyModeProblem(0o100640, 'k')?.problem).toMatch(/^permissions 0640/);
  });

  it('checks key text (an action input) without ever showing it', () => {
    const secret = '-----BEGIN OPENSSH PRIVATE KEY-----\nnot-base64-but-secret\n-----END OPENSSH PRIVATE KEY-----';
    const error = thrown(() => checkPrivateKeyText(secret, 'the fleet-private-key input'));
    expect(error.message).toBe('the fleet-private-key input: its OpenSSH private key block is damaged');
    expect(privateKeyTextProblem('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----')?.problem).toBe('it holds a CERTIFICATE block, not a private key');
    expect(privateKeyTextProblem('hello')?.problem).toMatch(/^it is not a private key/);
  });
});

describe('playbooks', () => {
  it.each([
    ['- hosts: all\n  tasks: []\n', undefined],
    ['- import_playbook: other.yml\n', undefined],
    ['hosts: all\n', 'it is not a list of plays (a playbook is a YAML list: - hosts: …)'],
    ['', 'it is not a list of plays (a playbook is a YAML list: - hosts: …)'],
    ['[]', 'it holds no plays'],
    ['- hosts: all\n- just text\n', 'play 2 is not a mapping (hosts:, tasks: …)'],
    ['- hosts: [all\n  tasks: x: y\n', 'it is not valid YAML (line 2)'],
  ])('%j → %s', (text, problem) => {
    expect(playbookTextProblem(text)).toBe(problem);
  });

  it('refuses a missing playbook, a directory and a file that is not YAML', () => {
    mkdirSync(join(dir, 'plays'));
    writeFileSync(join(dir, 'bad.yml'), '\t- {{ nope');
    expect(thrown(() => checkPlaybookFile(join(dir, 'nope.yml'), 'playbook')).message).toBe(`playbook "${join(dir, 'nope.yml')}" does not exist`);
    expect(thrown(() => checkPlaybookFile(join(dir, 'plays'), 'playbook')).message).toBe(`playbook "${join(dir, 'plays')}" is a directory, not a playbook file`);
    expect(thrown(() => checkPlaybookFile(join(dir, 'bad.yml'), 'playbook')).message).toMatch(/^playbook ".*bad.yml": it is not valid YAML/);
  });
});
