/**
 * The options every command shares (docs/architecture.md, "Entry points"), parsed once into a typed
 * settings object, and the context a use case runs in.
 */
import { rmSync } from 'node:fs';
import { Command, Option } from 'commander';
import { z } from 'zod';
import { UsageError } from '../domain/errors.js';
import { DEFAULT_LEDGER_BRANCH, GitLedgerStore } from '../ledger/git-store.js';
import { resolveLedgerLocation } from '../ledger/location.js';
import { parseDuration } from '../domain/duration.js';
import type { AppContext } from '../app/runtime/context.js';
import type { ProgressListener } from '../app/runtime/progress.js';
import { SecretRegistry } from '../app/runtime/secrets.js';
import { jobContext } from '../app/job/run-ci-job.js';
import { describeZodIssues } from '../ledger/records.js';
import { JsonProgress, TerminalProgress } from './terminal.js';
import { interruptOnSignals } from '../adapters/signals.js';
import { makePrivateDir } from '../adapters/private-dir.js';
import { inertJson, inertLines } from '../domain/runner-log.js';

export interface GlobalSettings {
  ledger: string | undefined;
  ledgerInit: boolean;
  ledgerBranch: string;
  /** How long a ledger write keeps retrying while other writers win the race on its record. */
  ledgerRetryForMs: number;
  json: boolean;
}

export function addLedgerOptions(command: Command): Command {
  return command
    .addOption(
      new Option(
        '--ledger <url-or-path>',
        'git URL or path of an existing ledger repository (default: the enclosing git repository, or .exocomp/ledger.git)',
      ),
    )
    .addOption(
      new Option('--ledger-init', 'create the --ledger path as a bare repository when it does not exist yet').default(
        false,
      ),
    )
    .addOption(
      new Option(
        '--ledger-branch <name>',
        'ledger name: records live on the branches <name>-records/* (see docs/ledger.md)',
      ).default(DEFAULT_LEDGER_BRANCH),
    )
    .addOption(
      new Option(
        '--ledger-retry-for <duration>',
        'how long a ledger write retries while other writers change the same record',
      ).default('5m'),
    )
    .addOption(new Option('--json', 'machine-readable output').default(false));
}

const ledgerOptions = z.object({
  ledger: z.string().optional(),
  ledgerInit: z.boolean().default(false),
  ledgerBranch: z.string().default(DEFAULT_LEDGER_BRANCH),
  ledgerRetryFor: z.string().default('5m').transform(parseDuration),
  json: z.boolean().default(false),
});

/** The ledger options and --json every command that reads the ledger shares. */
export function globalSettings(options: Record<string, unknown>): GlobalSettings {
  const o = parseOptions(ledgerOptions, options);
  return {
    ledger: o.ledger,
    ledgerInit: o.ledgerInit,
    ledgerBranch: o.ledgerBranch,
    ledgerRetryForMs: o.ledgerRetryFor,
    json: o.json,
  };
}

/**
 * A command's options parsed with its zod schema (docs/architecture.md,
 * "Entry points"). A domain rule that refuses a value inside a transform throws
 * its own UsageError; a value of the wrong shape is bad usage here.
 */
export function parseOptions<S extends z.ZodType>(schema: S, options: Record<string, unknown>): z.output<S> {
  const parsed = schema.safeParse(options);
  if (!parsed.success)
    throw new UsageError(`bad options: ${describeZodIssues(parsed.error)}`, 'run the command with --help for usage');
  return parsed.data;
}

export interface Io {
  out: (line: string) => void;
  err: (line: string) => void;
  /** Every secret the command learns; `main` redacts them (in every form) from all it prints. */
  secrets?: SecretRegistry;
}

/** The io every command writes through: each line leaves redacted, whatever produced it. */
export function redactingIo(
  io: Io,
  secrets: SecretRegistry = io.secrets ?? new SecretRegistry(),
): Io & { secrets: SecretRegistry } {
  return { out: (line) => io.out(secrets.redact(line)), err: (line) => io.err(secrets.redact(line)), secrets };
}

/**
 * The process's stdout and stderr. In a GitHub Actions step (a `run:` step
 * sets GITHUB_ACTIONS=true), nothing printed — tool and host output among it —
 * may become a workflow command: every line goes out inert
 * (src/domain/runner-log.ts), and `--json` output stays the same JSON.
 */
export function processIo(env: NodeJS.ProcessEnv, options: { json: boolean }): Io {
  const inGitHubStep = env.GITHUB_ACTIONS === 'true';
  const text = (line: string) => (inGitHubStep ? inertLines(line) : line);
  const json = (line: string) => (inGitHubStep ? inertJson(line) : line);
  return {
    out: (line) => process.stdout.write(`${options.json ? json(line) : text(line)}\n`),
    err: (line) => process.stderr.write(`${text(line)}\n`),
  };
}

export async function buildContext(settings: GlobalSettings, io: Io): Promise<AppContext> {
  const cwd = process.cwd();
  const location = await resolveLedgerLocation({ ledger: settings.ledger, cwd, init: settings.ledgerInit });
  const progress: ProgressListener = settings.json ? new JsonProgress(io.out) : new TerminalProgress(io.err);
  // One clock for the use cases and the ledger's commit dates.
  const now = () => new Date();
  const gitStore = new GitLedgerStore({
    remote: location.remote,
    branch: settings.ledgerBranch,
    retryForMs: settings.ledgerRetryForMs,
    now,
  });
  // The core's context, always behind the secret guard: a command that learned no secret still refuses a record that carries a registered one.
  return jobContext(
    {
      ledger: { store: gitStore },
      secrets: io.secrets ?? new SecretRegistry(),
      progress,
      now,
      cwd,
      env: process.env,
      interrupt: cliInterrupt(),
    },
    settings.ledgerBranch,
  );
}

let privateDir: Promise<string> | undefined;

/** This run's private (0700) directory for key copies, made once and removed when the process exits. */
export function runPrivateDir(): Promise<string> {
  privateDir ??= makePrivateDir('run').then((dir) => {
    process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
    return dir;
  });
  return privateDir;
}

let interrupt: AbortSignal | undefined;

/**
 * Ctrl-C and SIGTERM stop the running step, which is recorded as interrupted.
 * Ctrl-C in a terminal already reached the tool (the terminal signals the whole
 * foreground process group), so it is not sent twice: a second SIGINT makes
 * tofu abandon its work. A signal from elsewhere is forwarded as SIGINT.
 */
function cliInterrupt(): AbortSignal {
  interrupt ??= interruptOnSignals((received) => (received === 'SIGINT' && process.stdin.isTTY ? undefined : 'SIGINT'));
  return interrupt;
}
