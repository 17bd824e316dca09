/** Key-file helpers built on ssh-keygen: the one place that runs it (key pairs, user certificates, KRLs). */
import { readFileSync, statSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ExocompError, UsageError } from '../domain/errors.js';
import { judgeKeyFile } from '../domain/key-file.js';
import { validityArgument, type ValidityWindow } from '../domain/user-ca.js';
import { runProcess, type RunResult } from './process.js';

async function sshKeygen(args: readonly string[]): Promise<RunResult> {
  return runProcess('ssh-keygen', args).catch((error: unknown) => {
    throw new ExocompError('tool-missing', `cannot run ssh-keygen: ${(error as Error).message}`, {
      help: 'install openssh-client',
    });
  });
}

/** The public half (`type base64 comment`) of a private key file. */
export async function publicKeyOf(privateKeyPath: string): Promise<string> {
  const result = await sshKeygen(['-y', '-f', privateKeyPath]);
  if (result.code !== 0) {
    throw new ExocompError(
      'usage',
      `cannot read the private key ${privateKeyPath}: ${result.stderr.trim() || `ssh-keygen exited ${result.code}`}`,
      {
        help: 'pass an unencrypted OpenSSH private key file (ssh-keygen -t ed25519 -N "")',
      },
    );
  }
  return result.stdout.trim();
}

/**
 * Reads a private key file named by `role` (an option or input), refusing one
 * ssh would refuse or that cannot work unattended, with the fix in the message.
 */
export function readPrivateKeyFile(path: string, role: string): string {
  let text: string;
  let facts: { isFile: boolean; mode: number };
  try {
    const info = statSync(path);
    facts = { isFile: info.isFile(), mode: info.mode & 0o777 };
    text = facts.isFile ? readFileSync(path, 'utf8') : '';
  } catch (error) {
    throw new UsageError(
      `cannot read ${role} ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
      'pass an existing private key file, e.g. one made by exocomp keys init',
    );
  }
  const problem = judgeKeyFile({ role, path, text, ...facts });
  if (problem) throw new UsageError(problem.message, problem.help);
  return text;
}

/** A new ed25519 key pair without a passphrase: `path` (0600) and `path.pub`. */
export async function generateKeyPair(path: string, comment: string): Promise<void> {
  const result = await sshKeygen(['-q', '-t', 'ed25519', '-N', '', '-C', comment, '-f', path]);
  if (result.code !== 0)
    throw new ExocompError('tool-failed', `ssh-keygen could not write ${path}: ${result.stderr.trim()}`);
}

/** The SHA256 fingerprint (`SHA256:…`) of a public or private key file. */
export async function fingerprintOf(keyPath: string): Promise<string> {
  const result = await sshKeygen(['-l', '-E', 'sha256', '-f', keyPath]);
  const fingerprint = /\bSHA256:[A-Za-z0-9+/]+/.exec(result.stdout)?.[0];
  if (result.code !== 0 || fingerprint === undefined)
    throw new ExocompError('tool-failed', `ssh-keygen could not fingerprint ${keyPath}: ${result.stderr.trim()}`);
  return fingerprint;
}

export interface UserCertificateRequest {
  /** The user CA's private key file (0600). */
  caKeyPath: string;
  /** The key to certify (its `.pub` is signed; the certificate is written beside as `-cert.pub`). */
  keyPath: string;
  keyId: string;
  principal: string;
  serial: string;
  validity: ValidityWindow;
  /** CIDR list the certificate may be used from (critical option source-address). */
  sourceAddress?: string | undefined;
}

/**
 * Signs `keyPath.pub` as a user certificate (ssh-keygen -s, ssh-keygen(1) "CERTIFICATES"): one principal, one key
 * id, a serial, a validity window, optionally bound to source addresses. Written as `keyPath-cert.pub`, where ssh
 * and ssh-add look for it beside the key. The CA key's path, never its text, reaches the command line.
 */
export async function signUserKey(request: UserCertificateRequest): Promise<string> {
  const args = [
    '-q',
    ...['-s', request.caKeyPath],
    ...['-I', request.keyId],
    ...['-n', request.principal],
    ...['-z', request.serial],
    ...['-V', validityArgument(request.validity)],
    ...(request.sourceAddress ? ['-O', `source-address=${request.sourceAddress}`] : []),
    `${request.keyPath}.pub`,
  ];
  const result = await sshKeygen(args);
  if (result.code !== 0)
    throw new ExocompError('tool-failed', `ssh-keygen could not sign the run's key: ${result.stderr.trim()}`, {
      help: 'check that the user CA key is an unencrypted OpenSSH private key (exocomp keys init --user-ca)',
    });
  return `${request.keyPath}-cert.pub`;
}

/**
 * A key revocation list (ssh-keygen -k, ssh-keygen(1) "KEY REVOCATION LISTS") revoking `specification`'s serials
 * and key ids for each CA in `caPublicKeys`, as bytes; made in `dir` (the caller's private directory). An empty
 * specification gives a valid empty KRL: sshd refuses every key when its RevokedKeys file cannot be read.
 */
export async function buildKrl(dir: string, caPublicKeys: readonly string[], specification: string): Promise<Buffer> {
  const krl = join(dir, 'revoked.krl');
  const spec = join(dir, 'revoked.spec');
  await writeFile(spec, specification, { mode: 0o600 });
  const first = await sshKeygen(['-k', '-f', krl]);
  if (first.code !== 0)
    throw new ExocompError('tool-failed', `ssh-keygen could not make a KRL: ${first.stderr.trim()}`);
  for (const [index, caLine] of caPublicKeys.entries()) {
    if (specification === '') break;
    const caFile = join(dir, `ca-${index}.pub`);
    await writeFile(caFile, `${caLine}\n`, { mode: 0o600 });
    const result = await sshKeygen(['-k', '-u', '-s', caFile, '-f', krl, spec]);
    if (result.code !== 0)
      throw new ExocompError('tool-failed', `ssh-keygen could not add to the KRL: ${result.stderr.trim()}`);
  }
  return readFile(krl);
}
