/** Real-git fixtures for the ledger tests: temp dirs, bare remotes, plain git commands. */
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runProcess, type RunResult } from '../../src/adapters/process.js';

/** The files test/ledger/writer.ts writes: one array every writer appends to, and one file per writer. */
export const SHARED_FILE = 'workflows/shared.json';
export const ownFile = (writer: string): string => `writers/${writer}.json`;

const TEST_IDENTITY = {
  GIT_AUTHOR_NAME: 'test',
  GIT_AUTHOR_EMAIL: 'test@example.invalid',
  GIT_COMMITTER_NAME: 'test',
  GIT_COMMITTER_EMAIL: 'test@example.invalid',
};

/** Runs git and fails the test when it exits non-zero, unless `allowFailure`. */
export async function git(
  args: readonly string[],
  options: { cwd?: string; input?: string; allowFailure?: boolean } = {},
): Promise<RunResult> {
  const result = await runProcess('git', ['-c', 'init.defaultBranch=main', ...args], {
    ...(options.cwd ? { cwd: options.cwd } : {}),
    ...(options.input === undefined ? {} : { input: options.input }),
    env: { ...process.env, ...TEST_IDENTITY, GIT_TERMINAL_PROMPT: '0', LC_ALL: 'C' },
  });
  if (result.code !== 0 && !options.allowFailure) {
    throw new Error(`git ${args.join(' ')} failed (${result.code}): ${result.stderr}`);
  }
  return result;
}

export async function makeTempDir(): Promise<{ path: string; remove: () => Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), 'exocomp-ledger-test-'));
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}

export async function makeBareRemote(dir: string, name = 'remote.git'): Promise<string> {
  const path = join(dir, name);
  await git(['init', '--quiet', '--bare', path]);
  return path;
}

/** Every ledger ref of a repository with its commit (the old branch and each record's branch), or null when there is none. */
export async function ledgerRefs(gitDir: string, branch = 'exocomp-ledger'): Promise<string | null> {
  const result = await git([
    '--git-dir',
    gitDir,
    'for-each-ref',
    '--format=%(objectname) %(refname)',
    `refs/heads/${branch}`,
    `refs/heads/${branch}-records/`,
  ]);
  return result.stdout.trim() === '' ? null : result.stdout.trim();
}

/** `git show <record branch>:<path>` in a repository, as a user would read a record. */
export async function showRecord(
  gitDir: string,
  record: string,
  path = record,
  branch = 'exocomp-ledger',
): Promise<string> {
  return (await git(['--git-dir', gitDir, 'show', `${branch}-records/${record}:${path}`])).stdout;
}

/**
 * A bare remote whose pre-receive hook rejects (and logs) every update that is
 * not a fast-forward, so a forced push could not go unnoticed.
 */
export async function remoteWithGuardHook(dir: string, name: string): Promise<{ remote: string; hookLog: string }> {
  const remote = await makeBareRemote(dir, name);
  const hookLog = join(dir, `${name}.hook.log`);
  await writeFile(
    join(remote, 'hooks', 'pre-receive'),
    [
      '#!/bin/sh',
      'zero=0000000000000000000000000000000000000000',
      'status=0',
      'while read old new ref; do',
      '  if [ "$old" != "$zero" ] && ! git merge-base --is-ancestor "$old" "$new"; then',
      `    echo "REJECTED non-ff $ref $old $new" >> '${hookLog}'`,
      '    status=1',
      '  else',
      `    echo "ok $ref $old $new" >> '${hookLog}'`,
      '  fi',
      'done',
      'exit $status',
      '',
    ].join('\n'),
    { mode: 0o755 },
  );
  return { remote, hookLog };
}

export async function readHookLog(hookLog: string): Promise<string[]> {
  return existsSync(hookLog) ? (await readFile(hookLog, 'utf8')).split('\n').filter(Boolean) : [];
}

const WRITER_SOURCE = join(import.meta.dirname, 'writer.ts');
let writerBundle: Promise<string> | undefined;

/**
 * The writer script (test/ledger/writer.ts) bundled once per test process, to run with plain node: under
 * `--import tsx` every writer process compiled the ledger code again (~2–3 s of CPU per process on the CI
 * machine, times 16–35 processes per file).
 */
export function writerScript(): Promise<string> {
  writerBundle ??= (async () => {
    const dir = await mkdtemp(join(tmpdir(), 'exocomp-test-writer-'));
    process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
    const outfile = join(dir, 'writer.mjs');
    // Imported here, not at the top: writer.ts imports this module too.
    const { build } = await import('esbuild');
    await build({
      entryPoints: [WRITER_SOURCE],
      outfile,
      bundle: true,
      platform: 'node',
      target: 'node20',
      format: 'esm',
      // Bundled dependencies that are CommonJS call require().
      banner: { js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);" },
      logLevel: 'error',
    });
    return outfile;
  })();
  return writerBundle;
}
const PROJECT_ROOT = join(import.meta.dirname, '..', '..');

export interface WriterSpec {
  writer: string;
  cacheDir: string;
  updates: number;
  retryForMs?: number;
  /** `shared` (default): every update also appends to one shared record; `own`: only the writer's own record. */
  mode?: 'shared' | 'own';
}

export interface WriterOutcome extends RunResult {
  writer: string;
  /** How many times the writer's mutation ran (updates plus retries), when it finished. */
  attempts: number | undefined;
}

/**
 * Runs writer processes (test/ledger/writer.ts) against one remote and starts
 * their updates together: each says "ready" once loaded, and all wait for a
 * go file created when the last one is ready.
 */
export async function runWriterFleet(
  remote: string,
  specs: readonly WriterSpec[],
  goFile: string,
): Promise<WriterOutcome[]> {
  const script = await writerScript();
  let ready = 0;
  // A writer that dies before saying "ready" must not keep the others waiting.
  const markReady = () => {
    if (++ready === specs.length) writeFileSync(goFile, '');
  };
  const runs = specs.map(async (spec) => {
    let announced = false;
    const result = await runProcess(
      process.execPath,
      [
        script,
        remote,
        spec.cacheDir,
        spec.writer,
        String(spec.updates),
        String(spec.retryForMs ?? 'default'),
        spec.mode ?? 'shared',
        goFile,
      ],
      {
        cwd: PROJECT_ROOT,
        onOutput: (chunk, stream) => {
          if (stream === 'stdout' && !announced && chunk.includes('ready\n')) {
            announced = true;
            markReady();
          }
        },
      },
    );
    if (!announced) markReady();
    return result;
  });
  const results = await Promise.all(runs);
  return results.map((result, index) => {
    const summary = result.stdout.split('\n').find((line) => line.startsWith('{'));
    return {
      ...result,
      writer: specs[index]?.writer ?? '',
      attempts: summary ? (JSON.parse(summary) as { attempts: number }).attempts : undefined,
    };
  });
}
