/**
 * The checks on a run's file inputs that need the file system: playbooks (key
 * files: src/adapters/ssh-keys.ts). Entry points call them while parsing, before the first ledger
 * write; the rules themselves are pure (src/domain).
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { UsageError } from '../../domain/errors.js';
import { quoteValue } from '../../domain/names.js';
import { playbookTextProblem } from '../../domain/playbook.js';

const COLLECTION_PLAYBOOK = /^[a-z0-9_]+\.[a-z0-9_]+\.(?!ya?ml$)[a-z0-9_]+$/;

function statOrRefuse(path: string, what: string, shown: string) {
  try {
    return statSync(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new UsageError(
      `${what} ${shown} ${code === 'ENOENT' ? 'does not exist' : `cannot be read (${code ?? 'error'})`}`,
      code === 'ENOENT'
        ? 'check the path (relative paths are taken from the current directory)'
        : 'check the path and its permissions',
    );
  }
}

/** Refuses a playbook that is missing, not a file, or not a list of plays. */
export function checkPlaybookFile(file: string, what: string, cwd = process.cwd()): void {
  // ansible-playbook also runs a playbook of an installed collection by its name (ns.collection.play).
  if (COLLECTION_PLAYBOOK.test(file) && !existsSync(resolve(cwd, file))) return;
  const shown = quoteValue(file);
  const stats = statOrRefuse(resolve(cwd, file), what, shown);
  if (!stats.isFile())
    throw new UsageError(
      `${what} ${shown} is a directory, not a playbook file`,
      'pass the path of a playbook file (e.g. site.yml)',
    );
  let text: string;
  try {
    text = readFileSync(resolve(cwd, file), 'utf8');
  } catch (error) {
    throw new UsageError(
      `${what} ${shown} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
      'check its permissions',
    );
  }
  const problem = playbookTextProblem(text);
  if (problem !== undefined)
    throw new UsageError(
      `${what} ${shown}: ${problem}`,
      'a playbook is a YAML list of plays, e.g. "- hosts: all" followed by its tasks',
    );
}
