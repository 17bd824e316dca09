/** Key-file helpers built on ssh-keygen. */
import { readFileSync, statSync } from 'node:fs';
import { ExocompError, UsageError } from '../domain/errors.js';
import { judgeKeyFile } from '../domain/key-file.js';
import { runProcess } from './process.js';

/** The public half (`type base64 comment`) of a private key file. */
export async function publicKeyOf(privateKeyPath: string): Promise<string> {
  const result = await runProcess('ssh-keygen', ['-y', '-f', privateKeyPath]).catch((error: unknown) => {
    throw new ExocompError('tool-missing', `cannot run ssh-keygen: ${(error as Error).message}`, {
      help: 'install openssh-client',
    });
  });
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
  const result = await runProcess('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', comment, '-f', path]).catch(
    (error: unknown) => {
      throw new ExocompError('tool-missing', `cannot run ssh-keygen: ${(error as Error).message}`, {
        help: 'install openssh-client',
      });
    },
  );
  if (result.code !== 0)
    throw new ExocompError('tool-failed', `ssh-keygen could not write ${path}: ${result.stderr.trim()}`);
}
