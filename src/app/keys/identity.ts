/**
 * `--ssh-identity <path>`: one key file granted to a run (the play gets a 0600
 * private copy of it as its identity), never a directory — the rest of a keys
 * directory stays out of the run's reach.
 */
import { readFile, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { UsageError } from '../../domain/errors.js';
import { quoteValue } from '../../domain/names.js';

/** Checks the path names a readable regular file and returns its absolute path and contents. */
export async function grantIdentityFile(path: string, cwd: string): Promise<{ path: string; contents: string }> {
  const absolute = resolve(cwd, path);
  const info = await stat(absolute).catch((error: NodeJS.ErrnoException) => {
    throw new UsageError(
      `--ssh-identity ${quoteValue(path)} cannot be used: ${error.code ?? error.message}`,
      'pass an existing private key file',
    );
  });
  if (info.isDirectory()) {
    throw new UsageError(
      `--ssh-identity ${quoteValue(path)} is a directory: a run is granted one key file, never a directory`,
      'pass the private key file itself, e.g. --ssh-identity ~/.ssh/id_ed25519',
    );
  }
  if (!info.isFile())
    throw new UsageError(
      `--ssh-identity ${quoteValue(path)} is not a regular file`,
      'pass the private key file itself',
    );
  const contents = await readFile(absolute, 'utf8').catch((error: NodeJS.ErrnoException) => {
    throw new UsageError(
      `--ssh-identity ${quoteValue(path)} cannot be read: ${error.code ?? error.message}`,
      'pass a private key file this user can read',
    );
  });
  return { path: absolute, contents };
}
