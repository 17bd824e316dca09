/** Key-file helpers built on ssh-keygen. */
import { ExocompError } from '../domain/errors.js';
import { runProcess } from './process.js';

/** The public half (`type base64 comment`) of a private key file. */
export async function publicKeyOf(privateKeyPath: string): Promise<string> {
  const result = await runProcess('ssh-keygen', ['-y', '-f', privateKeyPath]).catch((error: unknown) => {
    throw new ExocompError('tool-missing', `cannot run ssh-keygen: ${(error as Error).message}`, { help: 'install openssh-client' });
  });
  if (result.code !== 0) {
    throw new ExocompError('usage', `cannot read the private key ${privateKeyPath}: ${result.stderr.trim() || `ssh-keygen exited ${result.code}`}`, {
      help: 'pass an unencrypted OpenSSH private key file (ssh-keygen -t ed25519 -N "")',
    });
  }
  return result.stdout.trim();
}
