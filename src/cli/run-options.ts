/**
 * Options of commands that run work (docs/architecture.md, "Entry points"), parsed once into typed
 * settings with zod before anything touches the ledger.
 */
import { readFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import { z } from 'zod';
import { UsageError } from '../domain/errors.js';
import { defaultWorkspaceName, parseWorkspaceName } from '../domain/names.js';
import { parseScheduleTick, type ScheduleTick } from '../domain/schedule-fires.js';
import { KEY_VARIABLES } from '../domain/key-variables.js';
import { HOST_KEY_MODES, hostKeyModeSchema } from '../domain/host-trust.js';
import { FLEET_AUTH_MODES, fleetAuthModeSchema, sourceAddressSchema } from '../domain/user-ca.js';
import { parseDuration } from '../domain/duration.js';
import type { AppContext } from '../app/runtime/context.js';
import { parseMapping, parseRunSecrets } from '../app/plays/mappings.js';
import { playProgress } from '../app/runtime/progress.js';
import type { RunInputs } from '../app/plays/run-inputs.js';
import { SecretRegistry } from '../app/runtime/secrets.js';
import { readRunInputs } from '../app/job/run-ci-job.js';
import { describeZodIssues } from '../ledger/records.js';
import type { AnsibleEvent } from '../domain/play-events.js';
import { runPrivateDir, type Io } from './common.js';

export function addKeyOptions(command: Command): Command {
  return command
    .addOption(
      new Option(
        '--fleet-key <file>',
        'private key of the fleet user (its public half is onboarded; the key drives plays)',
      ),
    )
    .addOption(
      new Option('--bootstrap-key <file>', 'private key the onboarding play connects with (as the inventory user)'),
    )
    .addOption(
      new Option('--seal-key <value>', 'key that seals/unseals sensitive outputs (default: $EXOCOMP_SEAL_KEY)'),
    )
    .addOption(
      new Option(
        '--user-ca-key <file>',
        'user CA private key: the fleet user logs in with a certificate this run signs, valid for --certificate-lifetime (docs/keys.md)',
      ),
    )
    .addOption(
      new Option(
        '--fleet-auth <mode>',
        'what onboarding makes a host accept for the fleet user: key (default), cert (the user CA only) or both',
      ).choices([...FLEET_AUTH_MODES]),
    )
    .addOption(
      new Option('--certificate-lifetime <duration>', "how long the run's fleet certificate is valid (default 1h)"),
    )
    .addOption(
      new Option(
        '--certificate-source-address <cidrs>',
        "addresses the run's fleet certificate may be used from (its source-address option), e.g. 203.0.113.7/32",
      ),
    )
    .addOption(new Option('--run-secrets <file>', 'YAML/JSON mapping of environment name → value handed to the play'));
}

/** Tofu options of commands that only plan (drift): no --allow-local-state, since nothing is applied. */
export function addTofuOptions(command: Command): Command {
  return command
    .addOption(new Option('--tofu-binary <path>', 'OpenTofu/Terraform binary (default: tofu, else terraform, on PATH)'))
    .addOption(
      new Option(
        '--workspace-name <name>',
        'name of the standing inventory tf:<name> (default: the workspace directory name)',
      ),
    )
    .addOption(
      new Option(
        '--vars-file <file>',
        'YAML/JSON mapping of input variables, written to exocomp.auto.tfvars.json and kept in the ledger for resume (no secrets: use TF_VAR_* for sensitive variables)',
      ),
    );
}

/** Tofu options of commands that apply a workspace. */
export function addApplyOptions(command: Command): Command {
  return addTofuOptions(command).addOption(allowLocalStateOption());
}

export function allowLocalStateOption(): Option {
  return new Option(
    '--allow-local-state',
    'in CI (GitHub Actions, GitLab CI), apply a workspace without a remote state backend (its state stays on the runner)',
  ).default(false);
}

export function allowDestroyOption(): Option {
  return new Option(
    '--allow-destroy',
    'let a plan destroy or replace hosts, or destroy more resources than the workspace policy allows (.exocomp/policy.yml); without it such a plan is refused before it is applied or recorded for approval',
  ).default(false);
}

export function protectOption(): Option {
  return new Option(
    '--protect <pattern>',
    "an address pattern (`*` any run; `module.db` covers what is under it) the plan may not change, beside the policy's protect list; repeatable",
  )
    .argParser((value: string, previous: string[] = []) => [...previous, value])
    .default([]);
}

/** `--schedule-name` and `--schedule-cron`: a scheduled run records its fire, so missed ticks show (docs/drift.md). */
export function addScheduleOptions(command: Command): Command {
  return command
    .addOption(
      new Option('--schedule-name <name>', 'record this run as a tick of this schedule (with --schedule-cron)'),
    )
    .addOption(
      new Option('--schedule-cron <cron>', "the schedule's cron, five fields as CI writes it (or the six-field form)"),
    );
}

export function scheduleTickOf(options: {
  scheduleName?: string | undefined;
  scheduleCron?: string | undefined;
}): ScheduleTick | undefined {
  return parseScheduleTick(options.scheduleName, options.scheduleCron, {
    name: '--schedule-name',
    cron: '--schedule-cron',
  });
}

export function addPlayOptions(command: Command): Command {
  return command
    .addOption(new Option('--check', 'run the play in check mode').default(false))
    .addOption(new Option('--limit <pattern>', 'limit the play to hosts matching the pattern'))
    .addOption(new Option('--tags <tags>', 'only run tasks with these tags'));
}

function readMappingFile(file: string, what: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw new UsageError(
      `cannot read ${what} file ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
      `pass an existing file`,
    );
  }
}

export function readRunSecrets(file: string | undefined): Record<string, string> {
  return file === undefined ? {} : parseRunSecrets(readMappingFile(file, 'run-secrets'), `run-secrets file ${file}`);
}

export function readVars(file: string | undefined): Record<string, unknown> | undefined {
  return file === undefined ? undefined : parseMapping(readMappingFile(file, 'vars'), `vars file ${file}`);
}

const keyOptionsSchema = z.object({
  fleetKey: z.string().optional(),
  bootstrapKey: z.string().optional(),
  sealKey: z.string().optional(),
  userCaKey: z.string().optional(),
  fleetAuth: fleetAuthModeSchema.optional(),
  certificateLifetime: z.string().optional(),
  certificateSourceAddress: sourceAddressSchema.optional(),
  runSecrets: z.string().optional(),
  tofuBinary: z.string().optional(),
  allowLocalState: z.boolean().optional(),
  allowDestroy: z.boolean().optional(),
  protect: z.array(z.string().min(1)).optional(),
  hostKeys: hostKeyModeSchema.optional(),
  bastion: z.string().optional(),
});

/** `--host-keys`: how first contact is trusted (domain/host-trust.ts). */
export function hostKeysOption(): Option {
  return new Option(
    '--host-keys <mode>',
    "auto (default; on resume: the workflow's own): the workspace's known keys or host CA where given, trust on first use elsewhere; known: refuse hosts without; tofu: trust on first use everywhere",
  ).choices([...HOST_KEY_MODES]);
}

/** `--bastion`: the jump host every SSH host is reached through (domain/bastion.ts). */
export function bastionOption(): Option {
  return new Option(
    '--bastion <[user@]host[:port]>',
    "reach every SSH host through this bastion (its key pinned first; no ssh options); on resume: the workflow's own",
  );
}

/**
 * Builds the never-persisted run inputs and registers every secret value
 * before anything is printed. Keys go through the one key-material reader
 * (src/app/keys/key-material.ts): each is copied into this run's private
 * 0600 file, so a key file others can read works, with a warning to fix it.
 */
export async function runInputs(
  options: Record<string, unknown>,
  env: NodeJS.ProcessEnv,
  rotateHostKeys: string[],
  io: Io,
  inGitLabJob = false,
): Promise<RunInputs> {
  const secrets = io.secrets ?? new SecretRegistry();
  // A GitLab runner writes File variables 0666 (docs/gitlab.md) and nobody can chmod them: the private copy is
  // all that matters there, as in the provision jobs.
  const warn = inGitLabJob ? undefined : (message: string) => io.err(`warning: ${message}`);
  const parsed = keyOptionsSchema.safeParse(options);
  if (!parsed.success) throw new UsageError(`bad options: ${describeZodIssues(parsed.error)}`);
  const o = parsed.data;
  const rawSeal = (o.sealKey ?? env[KEY_VARIABLES.seal]) || undefined;
  const inputs = await readRunInputs(
    {
      keys: { fleet: o.fleetKey, bootstrap: o.bootstrapKey, seal: rawSeal, userCa: o.userCaKey },
      ...(o.fleetAuth ? { fleetAuth: o.fleetAuth } : {}),
      ...(o.certificateLifetime ? { certificateLifetimeMs: parseDuration(o.certificateLifetime) } : {}),
      ...(o.certificateSourceAddress ? { certificateSourceAddress: o.certificateSourceAddress } : {}),
      runSecrets: readRunSecrets(o.runSecrets),
      rotateHostKeys,
      ...(o.tofuBinary ? { tofuBinary: o.tofuBinary } : {}),
      allowLocalState: o.allowLocalState ?? false,
      allowDestroy: o.allowDestroy ?? false,
      protect: o.protect ?? [],
      ...(o.hostKeys ? { hostKeys: o.hostKeys } : {}),
      ...(o.bastion !== undefined ? { bastion: o.bastion } : {}),
    },
    {
      cwd: process.cwd(),
      secrets,
      // Made only when a key is copied into it.
      privateDir: o.fleetKey || o.bootstrapKey || o.userCaKey ? await runPrivateDir() : '',
      keyNames: {
        fleet: '--fleet-key',
        bootstrap: '--bootstrap-key',
        userCa: '--user-ca-key',
        seal: o.sealKey === undefined ? KEY_VARIABLES.seal : '--seal-key',
      },
      bastionName: '--bastion',
      ...(warn ? { warn } : {}),
    },
  );
  return inputs;
}

export function workspaceNameFor(workspacePath: string, explicit: string | undefined): string {
  return explicit !== undefined ? parseWorkspaceName(explicit) : defaultWorkspaceName(workspacePath);
}

/**
 * How a play started from the CLI reports: every line redacted; a person reads
 * ansible's own output on stderr, a program (--json) reads the play's events, and a
 * job's log (`lines`: --gitlab-job) one line per task and host, as the provision jobs print them.
 */
export function playReporting(
  context: AppContext,
  secrets: SecretRegistry,
  json: boolean,
  io: Io,
  lines = false,
): {
  secrets: SecretRegistry;
  info(message: string): void;
  warn(message: string): void;
  onOutput?: (line: string) => void;
  onEvent?: (event: AnsibleEvent) => void;
} {
  return {
    secrets,
    info: (message) => context.progress.emit({ type: 'info', message: secrets.redact(message) }),
    warn: (message) => context.progress.emit({ type: 'warning', message: secrets.redact(message) }),
    ...(json || lines
      ? { onEvent: playProgress(context.progress) }
      : { onOutput: (line: string) => io.err(line.trimEnd()) }),
  };
}

/**
 * `--gitlab-job`: the CLI runs inside a GitLab CI job (the converge and drift templates pass it): the job's log gets
 * one line per task and host, the runner's File variables are taken as GitLab writes them, and a lease names the job.
 */
export function gitlabJobOption(): Option {
  return new Option(
    '--gitlab-job',
    'inside a GitLab CI job (the templates pass it): one log line per task and host, the lease held by the job',
  ).default(false);
}
