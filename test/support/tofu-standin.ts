import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

/** Absolute path of the OpenTofu stand-in executable (pass it as `--tofu-binary`). */
export const standinPath: string = fileURLToPath(new URL('./tofu-standin/tofu', import.meta.url));

/** Fixture workspaces (Terraform JSON syntax); copy one to a temp dir before running tofu in it. */
export const fixtureWorkspacesDir: string = fileURLToPath(new URL('../fixtures/workspaces/', import.meta.url));

/** One line of the stand-in's invocation log (`EXOCOMP_TOFU_STANDIN_LOG`). */
export interface StandinInvocation {
  argv: string[];
  cwd: string;
  /** ISO timestamp */
  at: string;
  pid: number;
}

/** Every invocation logged to logFile, oldest first; [] when the file does not exist yet. */
export async function readStandinLog(logFile: string): Promise<StandinInvocation[]> {
  let text: string;
  try {
    text = await readFile(logFile, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as StandinInvocation);
}

/** The logged invocations of one subcommand (the first argument that is not a global option). */
export function invocationsOf(log: readonly StandinInvocation[], subcommand: string): StandinInvocation[] {
  return log.filter((entry) => entry.argv.find((arg) => !arg.startsWith('-')) === subcommand);
}
