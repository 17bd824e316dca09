/** Real-git fixtures for the ledger tests: temp dirs, bare remotes, plain git commands. */
import { writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
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
export async function git(args: readonly string[], options: { cwd?: string; input?: string; allowFailure?: boolean } = {}): Promise<RunResult> {
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

/** The commit a branch points at in a repository, or null when it does not exist. */
export async function branchTip(gitDir: string, branch = 'exocomp-ledger'): Promise<string | null> {
  const result = await git(['--git-dir', gitDir, 'rev-parse', '--verify', '--quiet', `refs/heads/${branch}`], { allowFailure: true });
  return result.code === 0 ? result.stdout.trim() : null;
}

export const WRITER_SCRIPT = join(import.meta.dirname, 'writer.ts');
const PROJECT_ROOT = join(import.meta.dirname, '..', '..');

export interface WriterSpec {
  writer: string;
  cacheDir: string;
  updates: number;
  maxAttempts?: number;
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
export async function runWriterFleet(remote: string, specs: readonly WriterSpec[], goFile: string): Promise<WriterOutcome[]> {
  let ready = 0;
  // A writer that dies before saying "ready" must not keep the others waiting.
  const markReady = () => {
    if (++ready === specs.length) writeFileSync(goFile, '');
  };
  const runs = specs.map(async (spec) => {
    let announced = false;
    const result = await runProcess(
      process.execPath,
      ['--import', 'tsx', WRITER_SCRIPT, remote, spec.cacheDir, spec.writer, String(spec.updates), String(spec.maxAttempts ?? ''), goFile],
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
