/**
 * A thin adapter over the git CLI. Every command runs non-interactively (no
 * terminal or askpass prompts, English messages so callers can classify them,
 * no automatic gc/maintenance), and credentials travel only through the
 * environment (`GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_n`/`GIT_CONFIG_VALUE_n`),
 * never through arguments or URLs, so they do not show in process lists or
 * error messages.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ExocompError } from '../domain/errors.js';
import { redact, runProcess, type RunResult } from './process.js';

export interface GitCommandOptions {
  /** Standard input of the command. */
  input?: string | Buffer | undefined;
  /** Extra environment for this command only (e.g. GIT_INDEX_FILE). */
  env?: Readonly<Record<string, string>>;
  timeoutMs?: number | undefined;
  /** Return stdout unredacted, also as bytes (`stdoutBytes`), for object contents whose sizes are parsed. */
  rawStdout?: boolean;
}

export interface GitCli {
  /** Values that must never appear in clear in anything derived from git's output. */
  readonly secrets: readonly string[];
  /** Runs `git <args>`; never rejects for a non-zero exit (see runProcess). */
  run(args: readonly string[], options?: GitCommandOptions): Promise<RunResult>;
}

export type GitConfigEntry = readonly [key: string, value: string];

export interface GitCliOptions {
  /** The repository to operate on (GIT_DIR). When omitted, git discovers it from `cwd`. */
  gitDir?: string;
  cwd?: string | undefined;
  /** Configuration passed through the environment (e.g. an auth header); never in arguments. */
  config?: readonly GitConfigEntry[];
  /** Extra environment for every command (e.g. GIT_SSH_COMMAND). */
  extraEnv?: Readonly<Record<string, string>>;
  /** Secret values to redact from all output (config values given here are not redacted automatically). */
  secrets?: readonly string[];
}

/** Settings that keep git from doing background or interactive work on our behalf. */
const QUIET_CONFIG: readonly string[] = [
  'gc.auto=0',
  'maintenance.auto=false',
  'commit.gpgSign=false',
  'fetch.writeCommitGraph=false',
  'fetch.recurseSubmodules=false',
  'push.recurseSubmodules=no',
  'push.followTags=false',
  'init.defaultBranch=main',
  'advice.detachedHead=false',
  'advice.fetchShowForcedUpdates=false',
];

/** Variables that would make git operate on another repository or index than the one we name. */
const REPOSITORY_VARIABLES = [
  'GIT_DIR',
  'GIT_WORK_TREE',
  'GIT_INDEX_FILE',
  'GIT_OBJECT_DIRECTORY',
  'GIT_ALTERNATE_OBJECT_DIRECTORIES',
  'GIT_COMMON_DIR',
  'GIT_NAMESPACE',
  'GIT_QUARANTINE_PATH',
];

export class ProcessGitCli implements GitCli {
  readonly secrets: readonly string[];
  private readonly options: GitCliOptions;
  private readonly baseEnv: NodeJS.ProcessEnv;

  constructor(options: GitCliOptions = {}) {
    this.options = options;
    this.secrets = [...(options.secrets ?? [])];
    this.baseEnv = buildGitEnv(options);
  }

  async run(args: readonly string[], options: GitCommandOptions = {}): Promise<RunResult> {
    const configArgs = QUIET_CONFIG.flatMap((entry) => ['-c', entry]);
    let result: RunResult;
    try {
      result = await runProcess('git', [...configArgs, ...args], {
        cwd: this.options.cwd ?? this.options.gitDir,
        env: options.env ? { ...this.baseEnv, ...options.env } : this.baseEnv,
        ...(options.input === undefined ? {} : { input: options.input }),
        ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
        secrets: options.rawStdout ? [] : this.secrets,
        ...(options.rawStdout ? { keepStdoutBytes: true } : {}),
      });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
        throw new ExocompError('tool-missing', 'git is not installed (or not on PATH)', {
          help: 'install git (e.g. apt-get install git) and re-run',
          cause: error,
        });
      }
      throw error;
    }
    return options.rawStdout ? { ...result, stderr: redact(result.stderr, this.secrets) } : result;
  }
}

function buildGitEnv(options: GitCliOptions): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  if (options.gitDir !== undefined) {
    for (const name of REPOSITORY_VARIABLES) delete env[name];
    env.GIT_DIR = options.gitDir;
  }
  // Fail instead of waiting for a human: no terminal prompt, no askpass helper.
  env.GIT_TERMINAL_PROMPT = '0';
  env.GIT_ASKPASS = '';
  env.SSH_ASKPASS = '';
  if (env.GIT_SSH_COMMAND === undefined && env.GIT_SSH === undefined) env.GIT_SSH_COMMAND = 'ssh -o BatchMode=yes';
  // Callers classify git's messages; translations would defeat that.
  env.LC_ALL = 'C';
  delete env.LANGUAGE;
  Object.assign(env, options.extraEnv ?? {});
  // Append to any configuration the caller's environment already passes this way.
  const config = options.config ?? [];
  if (config.length > 0) {
    const existing = Number.parseInt(env.GIT_CONFIG_COUNT ?? '0', 10);
    const offset = Number.isFinite(existing) && existing > 0 ? existing : 0;
    config.forEach(([key, value], index) => {
      env[`GIT_CONFIG_KEY_${offset + index}`] = key;
      env[`GIT_CONFIG_VALUE_${offset + index}`] = value;
    });
    env.GIT_CONFIG_COUNT = String(offset + config.length);
  }
  return env;
}

/** What a failing git call said that matters: the lines that say why it failed. */
const FAILURE_LINE = /^(?:fatal|error|remote): |^!\t/;
/** What git says on the side (`warning:`, `hint:`): never why a call failed. */
const ASIDE_LINE = /^(?:warning|hint): /;

/**
 * A failed git call as people should read it: its exit status and its `fatal:`/`error:` lines (with the
 * remote's `remote:` lines and a push's rejected refs), or, when it printed none, whatever else it said
 * but its warnings and hints. At most 12 lines, joined by ` | `.
 */
export function gitFailureText(result: Pick<RunResult, 'code' | 'signal' | 'stdout' | 'stderr'>): string {
  const lines = `${result.stderr}\n${result.stdout}`
    .split('\n')
    .map((line) => line.trimEnd())
    .filter((line) => line.trim() !== '' && !ASIDE_LINE.test(line.trimStart()));
  const failures = lines.filter((line) => FAILURE_LINE.test(line.trimStart()));
  const said = (failures.length > 0 ? failures : lines).map((line) => line.trim()).slice(0, 12);
  const status = result.signal ? `git was ended by ${result.signal}` : `git exited with status ${result.code}`;
  return said.length > 0 ? `${said.join(' | ')} (${status})` : `${status} without a word`;
}

/**
 * The configuration and secrets for HTTPS access with a token, the way
 * actions/checkout does it: an `http.<url>.extraheader` with basic auth. Both
 * the token and its base64 form are secrets (either may show up in output).
 */
export function httpAuthConfig(
  token: string,
  urlPrefix = 'https://github.com/',
  username = 'x-access-token',
): { config: GitConfigEntry[]; secrets: string[] } {
  const basic = Buffer.from(`${username}:${token}`, 'utf8').toString('base64');
  return {
    config: [[`http.${urlPrefix}.extraheader`, `AUTHORIZATION: basic ${basic}`]],
    secrets: [token, basic],
  };
}

/** True for a remote written as a URL (`scheme://…`) or in scp form (`host:path`), false for a local path. */
export function isRemoteUrl(remote: string): boolean {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(remote)) return true;
  const colon = remote.indexOf(':');
  const slash = remote.indexOf('/');
  return colon > 0 && (slash === -1 || colon < slash);
}

/** A remote as it may be shown to people: URL credentials removed, secrets masked. */
export function redactRemote(remote: string, secrets: readonly string[] = []): string {
  const withoutCredentials = remote.replace(/^(https?|ftps?):\/\/[^/@]*@/i, '$1://***@');
  return redact(withoutCredentials, secrets);
}

const PUSH_PROBE_REF = 'refs/exocomp/push-probe';

/**
 * Whether these credentials may push to `remote`, found without writing
 * anything: a dry-run delete of a ref that does not exist makes git ask the
 * remote for its receive-pack advertisement, which a forge refuses to a token
 * that may not push, and sends nothing. `said` is git's redacted output on refusal.
 */
export async function probePushAccess(options: {
  remote: string;
  scratchRoot: string;
  config?: readonly GitConfigEntry[];
  extraEnv?: Readonly<Record<string, string>>;
  secrets: readonly string[];
}): Promise<{ ok: true } | { ok: false; said: string }> {
  const scratch = await mkdtemp(join(options.scratchRoot, 'exocomp-probe-'));
  try {
    const common = { config: options.config ?? [], extraEnv: options.extraEnv ?? {}, secrets: options.secrets };
    const init = await new ProcessGitCli({ cwd: scratch, ...common }).run(['init', '--quiet', '--bare', '.']);
    if (init.code !== 0) throw new ExocompError('tool-failed', `git init failed: ${gitFailureText(init)}`);
    const probe = await new ProcessGitCli({ gitDir: scratch, ...common }).run(
      ['push', '--dry-run', '--porcelain', options.remote, `:${PUSH_PROBE_REF}`],
      {
        timeoutMs: 120_000,
      },
    );
    return probe.code === 0
      ? { ok: true }
      : { ok: false, said: redact(`${probe.stderr}\n${probe.stdout}`, options.secrets) };
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
