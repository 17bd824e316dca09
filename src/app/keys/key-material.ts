/**
 * Key material, read once for every face. A key arrives as a path (a GitLab
 * File variable, a secret a workflow wrote to a file, a CLI flag) or as a
 * value (a masked variable, a GitHub secret); both are accepted.
 *
 * An SSH private key is copied into the run's own private directory (0600):
 * the runner's file is never trusted and never chmodded. GitLab writes File
 * variables world-readable (0666, https://docs.gitlab.com/ci/variables/#use-file-type-cicd-variables
 * says the runner writes the value to a temporary file), and ssh refuses such a
 * key; the copy is what ssh reads.
 *
 * A seal key given as a path is read from the file; a value that looks like a
 * path but names no file is refused — it is never used as a key itself (a
 * path is a predictable string on every runner).
 */
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { UsageError } from '../../domain/errors.js';
import { judgeKeyFile } from '../../domain/key-file.js';
import { quoteValue } from '../../domain/names.js';
import { parseSealKey } from '../../domain/seal.js';
import type { SecretRegistry } from '../runtime/secrets.js';

const PRIVATE_KEY = /^\s*-----BEGIN [A-Z ]*PRIVATE KEY-----/;
/**
 * A string that reads as a file path: absolute (./ ../ ~/ too), or relative
 * with a file extension, without base64 padding (`openssl rand -base64 32`,
 * the documented seal key, always ends in `=`).
 */
const PATH_LIKE = /^(?:(?:~|\.{1,2})?\/[^\s=]*|[^\s=]*\/[^\s=/]*\.[A-Za-z]{1,5})$/;
/** One line without blanks: a value that may name a file. */
const ONE_WORD = /^\S{1,4096}$/;

export interface KeyMaterialSource {
  /** The input that gave it, for messages: `EXOCOMP_FLEET_KEY`, `the fleet-private-key input`, `--fleet-key`. */
  role: string;
  /** What was given: the key itself or the path of a file holding it. */
  given: string;
  /** The directory (relative paths). */
  cwd: string;
}

/** What a value that is a path holds, or undefined when it names no file (any other failure is a refusal). */
async function readIfFile(source: KeyMaterialSource): Promise<{ text: string; mode: number } | undefined> {
  if (!ONE_WORD.test(source.given.trim())) return undefined;
  const path = resolve(source.cwd, source.given.trim());
  const info = await stat(path).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT' || error.code === 'ENOTDIR' || error.code === 'ENAMETOOLONG') return undefined;
    throw new UsageError(
      `${source.role}${shown(source.given)} cannot be read (${error.code ?? error.message})`,
      'check the path and its permissions',
    );
  });
  if (info === undefined) return undefined;
  if (!info.isFile())
    throw new UsageError(
      `${source.role}${shown(source.given)} is not a file`,
      'pass the key file itself, or the key as a value',
    );
  const text = await readFile(path, 'utf8').catch((error: NodeJS.ErrnoException) => {
    throw new UsageError(
      `${source.role}${shown(source.given)} cannot be read (${error.code ?? error.message})`,
      'make the file readable by the user the job runs as',
    );
  });
  return { text, mode: info.mode & 0o777 };
}

/** A short word of path characters with no long base64-like run: safe to show, unlike a mistyped secret. */
const SHOWABLE = /^(?!.*[A-Za-z0-9]{40})[\w.~/-]{1,200}$/;

/** Shown in a refusal only when it reads as a path: anything else might be a mistyped secret. */
function shown(given: string): string {
  const word = given.trim();
  return PATH_LIKE.test(word) || SHOWABLE.test(word) ? ` ${quoteValue(word)}` : '';
}

/**
 * The SSH private key `source` gives, as a 0600 file `name` in `privateDir`
 * (made by the caller, removed with the run); its text is registered as a
 * secret first. Refuses, before anything is recorded, a value that is neither
 * a private key nor a readable file, and a key a run cannot use (public half,
 * passphrase). A file others may read still works (the copy is private);
 * `warnOpen`, where the person who keeps the file can fix it (the CLI), hears of it.
 */
export async function privateKeyFile(
  source: KeyMaterialSource,
  privateDir: string,
  name: string,
  secrets: SecretRegistry,
  warnOpen?: (message: string) => void,
): Promise<string> {
  const isValue = PRIVATE_KEY.test(source.given);
  const file = isValue ? undefined : await readIfFile(source);
  const text = isValue ? source.given : file?.text;
  if (text === undefined)
    throw new UsageError(
      `${source.role}${shown(source.given)} is neither an SSH private key nor the path of a readable file`,
      'give the private key itself (a masked variable or secret) or the path of a file holding it (a File variable)',
    );
  secrets.add(text, text.trim());
  const path = isValue ? '' : source.given.trim();
  // Judged as the private copy it becomes: the runner's file mode does not matter.
  const problem = judgeKeyFile({ role: source.role, path, isFile: true, mode: 0o600, text });
  if (problem) throw new UsageError(problem.message, problem.help);
  if (file && (file.mode & 0o077) !== 0)
    warnOpen?.(
      `${source.role} ${path} can be read by others (mode 0${file.mode.toString(8)}); the run uses a private copy, but keep the key itself private: chmod 600 ${path}`,
    );
  const copy = join(privateDir, name);
  // OpenSSH refuses a private key file without its final newline.
  await writeFile(copy, text.endsWith('\n') ? text : `${text}\n`, { mode: 0o600, flag: 'wx' });
  return copy;
}

/**
 * The seal key `source` gives: the value itself, or the contents of the file it
 * names. A path to nothing is refused (never used as the key); the key is
 * format-checked and registered as a secret.
 */
export async function sealKeyOf(source: KeyMaterialSource, secrets: SecretRegistry): Promise<string> {
  const given = source.given;
  const fromFile = given.trim() === '' ? undefined : (await readIfFile(source))?.text;
  if (fromFile === undefined && PATH_LIKE.test(given.trim()))
    throw new UsageError(
      `${source.role} ${quoteValue(given.trim())} looks like a file path, but no file is there; a path is never used as the seal key`,
      'give the seal key itself (a masked variable or secret), or the path of an existing file holding it (a File variable)',
    );
  const key = parseSealKey(fromFile ?? given);
  secrets.add(key);
  return key;
}
