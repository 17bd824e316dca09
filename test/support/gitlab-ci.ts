/**
 * Runs a project's .gitlab-ci.yml with gitlab-ci-local (a real GitLab CI
 * interpreter: includes, spec inputs, rules, needs, artifacts, dotenv reports)
 * with the shell executor, the real CLI (dist/cli.js) first on PATH as `exocomp`.
 */
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runProcess, type RunResult } from '../../src/adapters/process.js';
import { scaled } from './time.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const gitlabCiLocal = path.join(repoRoot, 'node_modules/.bin/gitlab-ci-local');

/** A directory holding an `exocomp` that runs this checkout's bundle, as the published package's bin does. */
export async function exocompBin(dir: string): Promise<string> {
  await mkdir(dir, { recursive: true });
  const bin = path.join(dir, 'exocomp');
  await writeFile(bin, `#!/bin/sh\nexec '${process.execPath}' '${path.join(repoRoot, 'dist/cli.js')}' "$@"\n`);
  await chmod(bin, 0o755);
  return dir;
}

export interface PipelineRun {
  /** The project directory (a git repository whose origin is the GitLab double). */
  cwd: string;
  /** CI/CD variables (`--variable`): predefined ones given here override gitlab-ci-local's. */
  variables: Record<string, string>;
  /** Run only these jobs (and, with needs, what they need). */
  jobs?: string[];
  /** Manual jobs to run (`--manual`). */
  manual?: string[];
  /** Another pipeline file than .gitlab-ci.yml. */
  file?: string;
  env: NodeJS.ProcessEnv;
  timeoutMs?: number;
}

/** gitlab-ci-local's arguments for these variables, jobs and manual jobs. */
export function pipelineArgs(
  variables: Record<string, string>,
  jobs: string[] = [],
  manual: string[] = [],
  file?: string,
): string[] {
  // Jobs name an image; the shell executor runs them here instead, each in its own copy of the project (as runners do).
  const args = [
    '--force-shell-executor',
    '--shell-isolation',
    ...(file ? ['--file', file] : []),
    ...jobs,
    ...manual.flatMap((job) => ['--manual', job]),
  ];
  for (const [key, value] of Object.entries(variables)) args.push('--variable', `${key}=${value}`);
  return args;
}

export async function runPipeline(run: PipelineRun): Promise<RunResult> {
  return runProcess(gitlabCiLocal, pipelineArgs(run.variables, run.jobs, run.manual, run.file), {
    cwd: run.cwd,
    env: run.env,
    // Bounded like every wait in the tests: a loaded machine (EXOCOMP_TEST_TIME_FACTOR) gives the pipeline more time.
    timeoutMs: scaled(run.timeoutMs ?? 300_000),
  });
}
