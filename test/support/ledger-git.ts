/**
 * The ledger as a user sees it with plain git (docs/ledger.md): each record on
 * its own branch `<ledger>-records/<record>`. Tests read it, and change it
 * behind exocomp's back, the way a person would.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runProcess } from '../../src/adapters/process.js';
import { recordOf } from '../../src/ledger/layout.js';

export const LEDGER_BRANCH = 'exocomp-ledger';

const IDENTITY = {
  GIT_AUTHOR_NAME: 't',
  GIT_AUTHOR_EMAIL: 't@t.invalid',
  GIT_COMMITTER_NAME: 't',
  GIT_COMMITTER_EMAIL: 't@t.invalid',
};

/** The branch a ledger file lives on. */
export function recordBranch(path: string, branch = LEDGER_BRANCH): string {
  return `${branch}-records/${recordOf(path)}`;
}

async function git(gitDir: string, args: string[], options: { input?: string; env?: Record<string, string> } = {}) {
  return runProcess('git', ['--git-dir', gitDir, ...args], {
    env: { ...process.env, ...IDENTITY, ...options.env },
    ...(options.input === undefined ? {} : { input: options.input }),
  });
}

/** `git show <record branch>:<path>`; undefined when the record or the file does not exist. */
export async function ledgerFile(gitDir: string, path: string, branch = LEDGER_BRANCH): Promise<string | undefined> {
  const shown = await git(gitDir, ['show', `${recordBranch(path, branch)}:${path}`]);
  return shown.code === 0 ? shown.stdout : undefined;
}

/** Every ledger ref with its commit, one per line (a value that changes with any write), or '' for an empty ledger. */
export async function ledgerRefs(gitDir: string, branch = LEDGER_BRANCH): Promise<string> {
  const listed = await git(gitDir, [
    'for-each-ref',
    '--format=%(objectname) %(refname)',
    `refs/heads/${branch}`,
    `refs/heads/${branch}-records/`,
  ]);
  return listed.stdout.trim();
}

/** The subjects of every ledger commit, oldest first, across all records. */
export async function ledgerMessages(gitDir: string, branch = LEDGER_BRANCH): Promise<string[]> {
  const refs = (await ledgerRefs(gitDir, branch))
    .split('\n')
    .filter(Boolean)
    .map((line) => line.split(' ')[1] ?? '');
  if (refs.length === 0) return [];
  const log = await git(gitDir, ['log', '--reverse', '--date-order', '--format=%s', ...refs]);
  return log.code === 0 ? log.stdout.split('\n').filter(Boolean) : [];
}

/** `git log -p` of every ledger record, newest first, as a reviewer would read the whole trail. */
export async function ledgerHistory(gitDir: string, branch = LEDGER_BRANCH): Promise<string> {
  const refs = (await ledgerRefs(gitDir, branch))
    .split('\n')
    .filter(Boolean)
    .map((line) => line.split(' ')[1] ?? '');
  if (refs.length === 0) return '';
  const log = await git(gitDir, ['log', '-p', '--no-color', '--format=commit %H%n%B', ...refs]);
  return log.code === 0 ? log.stdout : '';
}

/** `git log <args> <record branch> -- <path>` for one ledger file. */
export async function ledgerFileLog(
  gitDir: string,
  path: string,
  args: string[],
  branch = LEDGER_BRANCH,
): Promise<string> {
  const log = await git(gitDir, ['log', ...args, recordBranch(path, branch), '--', path]);
  return log.stdout;
}

/**
 * Commits straight to the records' branches of a bare repository, behind
 * exocomp's back (null deletes a file): one commit per record touched.
 */
export async function commitToLedger(
  gitDir: string,
  files: Record<string, string | null>,
  message: string,
  branch = LEDGER_BRANCH,
): Promise<void> {
  const work = await mkdtemp(join(tmpdir(), 'exocomp-tamper-'));
  try {
    const byBranch = new Map<string, [string, string | null][]>();
    for (const [path, text] of Object.entries(files)) {
      const target = recordBranch(path, branch);
      byBranch.set(target, [...(byBranch.get(target) ?? []), [path, text]]);
    }
    for (const [target, changes] of byBranch) {
      const env = { GIT_INDEX_FILE: join(work, 'index') };
      await rm(env.GIT_INDEX_FILE, { force: true });
      const head = (await git(gitDir, ['rev-parse', '--verify', '-q', `refs/heads/${target}`])).stdout.trim();
      if (head !== '') await git(gitDir, ['read-tree', head], { env });
      for (const [path, text] of changes) {
        // Mode 0 removes an entry; --force-remove would need a work tree.
        if (text === null)
          await git(gitDir, ['update-index', '--index-info'], { env, input: `0 ${'0'.repeat(40)}\t${path}\n` });
        else {
          const blob = (await git(gitDir, ['hash-object', '-w', '--stdin'], { input: text })).stdout.trim();
          await git(gitDir, ['update-index', '--add', '--cacheinfo', `100644,${blob},${path}`], { env });
        }
      }
      const tree = (await git(gitDir, ['write-tree'], { env })).stdout.trim();
      const commit = (
        await git(gitDir, ['commit-tree', tree, ...(head === '' ? [] : ['-p', head]), '-m', message])
      ).stdout.trim();
      const updated = await git(gitDir, ['update-ref', `refs/heads/${target}`, commit, ...(head === '' ? [] : [head])]);
      if (updated.code !== 0) throw new Error(`cannot update ${target}: ${updated.stderr}`);
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
