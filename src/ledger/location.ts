/**
 * Where the ledger lives when the user does not say: a branch of the enclosing
 * git repository (pushing to a branch that is not checked out works in a
 * non-bare repository too), or a bare repository under `.exocomp/` when the
 * working directory is in no repository.
 */
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { ExocompError } from '../domain/errors.js';
import { gitFailureText, isRemoteUrl, ProcessGitCli, redactRemote } from '../adapters/git.js';

export interface LedgerLocation {
  /** What to fetch from and push to: a git URL or an absolute path. */
  remote: string;
  /** Where that is, for people (never contains credentials). */
  description: string;
}

export const EMBEDDED_LEDGER_DIR = join('.exocomp', 'ledger.git');

export async function resolveLedgerLocation(options: {
  ledger?: string | undefined;
  cwd: string;
  init?: boolean;
}): Promise<LedgerLocation> {
  if (options.ledger !== undefined && options.ledger !== '') {
    if (isRemoteUrl(options.ledger)) return { remote: options.ledger, description: redactRemote(options.ledger) };
    const remote = resolve(options.cwd, options.ledger);
    await requireRepository(remote, options.ledger, options.init === true);
    return { remote, description: redactRemote(remote) };
  }
  const git = new ProcessGitCli({ cwd: options.cwd });
  const found = await git.run(['rev-parse', '--path-format=absolute', '--git-common-dir']);
  if (found.code === 0) {
    const gitDir = found.stdout.trim();
    return { remote: gitDir, description: `the enclosing git repository (${gitDir})` };
  }
  if (!/not a git repository/i.test(found.stderr)) {
    throw new ExocompError(
      'tool-failed',
      `cannot tell whether ${options.cwd} is inside a git repository: ${gitFailureText(found)}`,
      {
        help: 'fix the repository, or name the ledger explicitly with --ledger <git url or path>',
      },
    );
  }
  const embedded = resolve(options.cwd, EMBEDDED_LEDGER_DIR);
  if (!existsSync(join(embedded, 'HEAD'))) {
    await mkdir(embedded, { recursive: true });
    const created = await git.run(['init', '--quiet', '--bare', embedded]);
    if (created.code !== 0) {
      throw new ExocompError(
        'tool-failed',
        `cannot create the ledger repository ${embedded}: ${gitFailureText(created)}`,
        {
          help: 'make the directory writable, or name the ledger explicitly with --ledger <git url or path>',
        },
      );
    }
  }
  return { remote: embedded, description: `the bare repository ${embedded}` };
}

/** A --ledger path must be a git repository; with --ledger-init a missing one is created bare. */
async function requireRepository(path: string, given: string, init: boolean): Promise<void> {
  const git = new ProcessGitCli({ cwd: '/' });
  if (existsSync(path) && (await git.run(['-C', path, 'rev-parse', '--git-dir'])).code === 0) return;
  if (!init) {
    throw new ExocompError('usage', `--ledger ${given} is not a git repository`, {
      help: `create one with: git init --bare ${given} (or pass --ledger-init), or point --ledger at an existing repository or git URL`,
    });
  }
  await mkdir(path, { recursive: true });
  const created = await git.run(['init', '--quiet', '--bare', path]);
  if (created.code !== 0) {
    throw new ExocompError('tool-failed', `cannot create the ledger repository ${given}: ${gitFailureText(created)}`, {
      help: 'make the directory writable, or create the repository yourself',
    });
  }
}
