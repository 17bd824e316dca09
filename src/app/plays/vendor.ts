/** `playbook vendor`: collections installed once into the project, so no run needs Galaxy. */
import { mkdir, readdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { ExocompError } from '../../domain/errors.js';
import { runProcess } from '../../adapters/process.js';
import { vendoredCollectionsPath } from './play.js';

export async function vendorCollections(
  cwd: string,
  requirements: string,
): Promise<{ path: string; collections: string[] }> {
  const path = vendoredCollectionsPath(cwd);
  await mkdir(path, { recursive: true });
  const result = await runProcess(
    'ansible-galaxy',
    ['collection', 'install', '-r', resolve(cwd, requirements), '-p', path, '--force'],
    { cwd },
  ).catch((error: unknown) => {
    throw new ExocompError('tool-missing', `cannot run ansible-galaxy: ${(error as Error).message}`, {
      help: 'install ansible-core',
    });
  });
  if (result.code !== 0) {
    throw new ExocompError(
      'tool-failed',
      `ansible-galaxy collection install exited ${result.code}: ${result.stderr.trim().split('\n').slice(-3).join(' | ')}`,
      {
        help: 'check the requirements file; collections can be given as local tarballs (type: file) when Galaxy is unreachable',
      },
    );
  }
  const root = join(path, 'ansible_collections');
  const collections: string[] = [];
  for (const ns of await readdir(root).catch(() => [])) {
    for (const name of await readdir(join(root, ns)).catch(() => [])) collections.push(`${ns}.${name}`);
  }
  return { path, collections: collections.sort() };
}
