import { constants } from 'node:fs';
import { access, stat, writeFile } from 'node:fs/promises';
import { basename, delimiter, isAbsolute, join, resolve } from 'node:path';
import { z } from 'zod';
import { ExocompError } from '../domain/errors.js';
import { LOCK_ERROR_SUMMARY, parseStateLock, stateLockedError } from '../domain/state-lock.js';
import {
  collectStrings,
  planFingerprint,
  planJsonSchema,
  sensitiveStringsInPlan,
  summarizePlan,
  type PlanJson,
  type PlanSummary,
} from '../domain/plan.js';
import { stateIdentitySchema, type StateIdentity } from '../domain/provenance.js';
import {
  diagnosticHeadline,
  diagnosticLines,
  readUiLine,
  readValidateJson,
  redactDiagnostic,
  type TofuDiagnostic,
} from '../domain/tofu-diagnostics.js';
import { redact, runProcess } from './process.js';

export const VARS_FILE = 'exocomp.auto.tfvars.json';

const INSTALL_HELP = 'install OpenTofu (https://opentofu.org/docs/intro/install/) or pass --tofu-binary <path>';

/**
 * Finds the OpenTofu/Terraform executable: `--tofu-binary` when given (it must
 * be an executable file), else `tofu` on PATH, else `terraform` on PATH.
 */
export async function locateTofu({
  tofuBinary,
  env,
}: {
  tofuBinary?: string | undefined;
  env: NodeJS.ProcessEnv;
}): Promise<string> {
  if (tofuBinary !== undefined) {
    const path = resolve(tofuBinary);
    if (!(await isExecutableFile(path))) {
      throw new ExocompError('tool-missing', `--tofu-binary ${tofuBinary} is not an executable file`, {
        help: INSTALL_HELP,
      });
    }
    return path;
  }
  const dirs = (env.PATH ?? '').split(delimiter).filter((dir) => dir !== '' && isAbsolute(dir));
  for (const name of ['tofu', 'terraform']) {
    for (const dir of dirs) {
      const candidate = join(dir, name);
      if (await isExecutableFile(candidate)) return candidate;
    }
  }
  throw new ExocompError('tool-missing', 'no tofu or terraform on PATH', { help: INSTALL_HELP });
}

async function isExecutableFile(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

export const outputsSchema = z.record(
  z.string(),
  z.object({
    sensitive: z.boolean(),
    type: z.unknown(),
    value: z.unknown(),
  }),
);

export type TofuOutputs = Record<string, { value: unknown; sensitive: boolean; type: unknown }>;

export interface PlanResult {
  summary: PlanSummary;
  /** planFingerprint of the saved plan. */
  fingerprint: string;
  plan: PlanJson;
}

/** What use cases need from OpenTofu; TofuDriver is the real one, tests may use a double. */
export interface TofuPort {
  /** Writes `exocomp.auto.tfvars.json` into the workspace; does nothing for an empty set. */
  writeVars(vars: Record<string, unknown>): Promise<void>;
  init(): Promise<void>;
  validate(): Promise<void>;
  /** Plans into `planFile` (absolute, or relative to the workspace) and reads the saved plan back. */
  plan(planFile: string): Promise<PlanResult>;
  /** `plan -detailed-exitcode` into `planFile`: exit 2 (changes) is an answer, not a failure. */
  planDetailed(planFile: string): Promise<PlanResult & { changes: boolean }>;
  /** `plan -detailed-exitcode` into `planFile`, without reading the plan back: whether it changes anything. */
  planChanges(planFile: string): Promise<boolean>;
  showPlan(planFile: string): Promise<PlanJson>;
  /** Applies a saved plan (a saved plan needs no approval flag). */
  apply(planFile: string): Promise<void>;
  outputs(): Promise<TofuOutputs>;
  /** The current state's lineage and serial (`state pull`); undefined when the workspace has no state yet. */
  stateIdentity(): Promise<StateIdentity | undefined>;
}

export interface TofuDriverOptions {
  binary: string;
  workspaceDir: string;
  /** The child's environment (complete, not merged with process.env). */
  env: NodeJS.ProcessEnv;
  /** Values redacted from progress lines and error messages. */
  secrets?: readonly string[];
  /** Called with each line the command prints, secrets redacted. */
  onOutput?: ((line: string, stream: 'stdout' | 'stderr') => void) | undefined;
  /** Called with each diagnostic (error or warning) of validate, plan and apply, secrets redacted; its lines go to onOutput too. */
  onDiagnostic?: ((diagnostic: TofuDiagnostic) => void) | undefined;
  /** Stops the running command when aborted; every later command then throws the signal's reason. */
  signal?: AbortSignal | undefined;
}

const STDERR_TAIL_LINES = 20;

/**
 * How long tofu told to stop (SIGINT) may take to stop on its own, releasing its state lock, before it is killed.
 * GitHub's runner sends a cancelled step SIGINT, then SIGTERM 7.5 s later (our process then exits at once), and kills
 * the process tree 2.5 s after that (docs.github.com/en/actions/reference/workflow-cancellation-reference): 6 s leaves
 * the step time to record its interruption inside that window. GitLab's shell executor sends the job's process group
 * SIGTERM and SIGKILL only after its graceful-kill timeout (gitlab-runner MR 1770), so tofu stops on its own there too.
 */
export const TOFU_STOP_GRACE_MS = 6_000;

export class TofuDriver implements TofuPort {
  private readonly binary: string;
  private readonly workspaceDir: string;
  private readonly env: NodeJS.ProcessEnv;
  private readonly onOutput: TofuDriverOptions['onOutput'];
  private readonly onDiagnostic: TofuDriverOptions['onDiagnostic'];
  private readonly signal: AbortSignal | undefined;
  /** Grows as plans and outputs reveal sensitive values. */
  private readonly secrets: string[] = [];

  constructor(options: TofuDriverOptions) {
    this.binary = options.binary;
    this.workspaceDir = options.workspaceDir;
    this.env = options.env;
    this.onOutput = options.onOutput;
    this.onDiagnostic = options.onDiagnostic;
    this.signal = options.signal;
    this.addSecrets(options.secrets ?? []);
  }

  async writeVars(vars: Record<string, unknown>): Promise<void> {
    if (Object.keys(vars).length === 0) return;
    // Vars can hold credentials: readable by the owner only.
    await writeFile(join(this.workspaceDir, VARS_FILE), `${JSON.stringify(vars, null, 2)}\n`, { mode: 0o600 });
  }

  async init(): Promise<void> {
    await this.run(['init', '-input=false', '-no-color']);
  }

  async validate(): Promise<void> {
    await this.run(['validate', '-json', '-no-color'], { output: 'validate-json' });
  }

  async plan(planFile: string): Promise<PlanResult> {
    await this.run(['plan', '-input=false', '-no-color', '-json', `-out=${planFile}`], { output: 'ui-json' });
    const plan = await this.showPlan(planFile);
    return { summary: summarizePlan(plan), fingerprint: planFingerprint(plan), plan };
  }

  async planDetailed(planFile: string): Promise<PlanResult & { changes: boolean }> {
    const changes = await this.planChanges(planFile);
    const plan = await this.showPlan(planFile);
    return { summary: summarizePlan(plan), fingerprint: planFingerprint(plan), plan, changes };
  }

  async planChanges(planFile: string): Promise<boolean> {
    const { code } = await this.runWithCode(
      ['plan', '-input=false', '-no-color', '-json', '-detailed-exitcode', `-out=${planFile}`],
      [0, 2],
      { output: 'ui-json' },
    );
    return code === 2;
  }

  async showPlan(planFile: string): Promise<PlanJson> {
    const stdout = await this.run(['show', '-json', planFile], { output: 'data' });
    const plan = this.parseJson('show -json', stdout, planJsonSchema);
    this.addSecrets(sensitiveStringsInPlan(plan));
    return plan;
  }

  async apply(planFile: string): Promise<void> {
    await this.run(['apply', '-input=false', '-no-color', '-json', planFile], { output: 'ui-json' });
  }

  async outputs(): Promise<TofuOutputs> {
    const stdout = await this.run(['output', '-json'], { output: 'data' });
    const outputs = this.parseJson('output -json', stdout, outputsSchema) as TofuOutputs;
    const revealed: string[] = [];
    for (const output of Object.values(outputs)) {
      if (output.sensitive) collectStrings(output.value, revealed);
    }
    this.addSecrets(revealed);
    return outputs;
  }

  async stateIdentity(): Promise<StateIdentity | undefined> {
    // `state pull` prints the raw state (https://opentofu.org/docs/cli/commands/state/pull/), and nothing
    // (its "Empty state" note goes to stderr) when there is none. Only two fields are kept: the state holds secrets.
    const stdout = await this.run(['state', 'pull'], { output: 'data' });
    if (stdout.trim() === '') return undefined;
    return this.parseJson('state pull', stdout, stateIdentitySchema);
  }

  private get toolName(): string {
    return basename(this.binary);
  }

  /**
   * Runs one command in the workspace and returns its stdout. `data` output
   * (JSON with sensitive values in clear) is neither streamed nor redacted: it
   * is parsed, never shown. Everything that is shown is redacted here, line by
   * line, so a secret split across output chunks is still caught.
   */
  private async run(args: string[], { output = 'text' }: { output?: OutputKind } = {}): Promise<string> {
    return (await this.runWithCode(args, [0], { output })).stdout;
  }

  /**
   * Runs one command; an exit code outside `okCodes` is a failure, described
   * by its error diagnostics when it printed any.
   */
  private async runWithCode(
    args: string[],
    okCodes: readonly number[],
    { output = 'text' }: { output?: OutputKind } = {},
  ): Promise<{ stdout: string; code: number }> {
    const command = `${this.toolName} ${args[0]}`;
    const diagnostics: TofuDiagnostic[] = [];
    const streamed = output === 'text' || output === 'ui-json';
    const splitters = streamed
      ? {
          stdout: this.lineSplitter('stdout', output === 'ui-json' ? diagnostics : undefined),
          stderr: this.lineSplitter('stderr'),
        }
      : undefined;
    this.signal?.throwIfAborted();
    let result;
    try {
      result = await runProcess(this.binary, args, {
        cwd: this.workspaceDir,
        env: { ...this.env, TF_IN_AUTOMATION: '1', TF_INPUT: '0' },
        ...(splitters && { onOutput: (chunk: string, stream: 'stdout' | 'stderr') => splitters[stream].push(chunk) }),
        signal: this.signal,
        stopGraceMs: TOFU_STOP_GRACE_MS,
      });
    } catch (error) {
      throw new ExocompError('tool-missing', `cannot run ${command}: ${(error as Error).message}`, {
        help: INSTALL_HELP,
        cause: error,
      });
    }
    splitters?.stdout.flush();
    splitters?.stderr.flush();
    // Stopped on purpose: the reason is the error, not the exit code of the interrupted command.
    this.signal?.throwIfAborted();
    if (output === 'validate-json') {
      for (const diagnostic of readValidateJson(result.stdout) ?? []) this.report(diagnostic, 'stdout', diagnostics);
    }
    if (!okCodes.includes(result.code) || result.signal !== null) {
      const how =
        result.signal !== null ? `was ended by signal ${result.signal}` : `failed with exit code ${result.code}`;
      const errors = diagnostics.filter((d) => d.severity === 'error');
      // A lock another run left held is named, with the command that releases it, rather than described as a failure.
      const lockError = errors.find((d) => d.summary === LOCK_ERROR_SUMMARY);
      const lock = lockError === undefined ? undefined : parseStateLock(lockError.detail ?? '');
      if (lock) throw stateLockedError(this.toolName, this.workspaceDir, lock);
      const described =
        errors.length > 0
          ? errors
              .flatMap((d) => [diagnosticHeadline(d), ...(d.detail ? [`  ${d.detail.split('\n').join('\n  ')}`] : [])])
              .join('\n')
          : this.tailOf(result.stderr.trim() === '' ? shownText(result.stdout, output) : result.stderr);
      throw new ExocompError('tool-failed', `${command} ${how}${described === '' ? '' : `:\n${described}`}`, {
        help: `fix the workspace or its inputs and run again; the full output of ${command} is in the log above`,
        ...(errors.length > 0 ? { detail: errors.map(diagnosticHeadline).join('\n') } : {}),
      });
    }
    return { stdout: result.stdout, code: result.code };
  }

  /** A diagnostic, redacted: shown as tofu's text, kept for the failure, and told to onDiagnostic. */
  private report(diagnostic: TofuDiagnostic, stream: 'stdout' | 'stderr', kept: TofuDiagnostic[]): void {
    const redacted = redactDiagnostic(diagnostic, (text) => this.redact(text));
    kept.push(redacted);
    for (const line of diagnosticLines(redacted)) this.onOutput?.(line, stream);
    this.onDiagnostic?.(redacted);
  }

  private parseJson<T>(subcommand: string, stdout: string, schema: z.ZodType<T>): T {
    let data: unknown;
    try {
      data = JSON.parse(stdout);
    } catch {
      throw new ExocompError('tool-failed', `${this.toolName} ${subcommand} printed something that is not JSON`, {
        help: 'use OpenTofu ≥ 1.6 or Terraform ≥ 1.0 and make sure no wrapper script adds text to its output',
      });
    }
    const parsed = schema.safeParse(data);
    if (!parsed.success) {
      // Paths only: the issues' messages could quote values.
      const where = parsed.error.issues.map((issue) => issue.path.join('.') || '(root)').join(', ');
      throw new ExocompError(
        'tool-failed',
        `${this.toolName} ${subcommand} printed JSON of an unexpected shape (at ${where})`,
        {
          help: 'use OpenTofu ≥ 1.6 or Terraform ≥ 1.0',
        },
      );
    }
    return parsed.data;
  }

  private tailOf(text: string): string {
    const lines = text.trimEnd().split('\n');
    return this.redact(lines.slice(-STDERR_TAIL_LINES).join('\n'));
  }

  private redact(text: string): string {
    return redact(text, this.secrets);
  }

  private addSecrets(values: readonly string[]): void {
    for (const value of values) {
      // Lines are redacted one at a time: a multi-line secret must be caught line by line too.
      for (const form of [value, ...value.split('\n').map((line) => line.trim())]) {
        if (form.length >= 4 && !this.secrets.includes(form)) this.secrets.push(form);
      }
    }
    // Longest first, so a secret that contains another is replaced whole.
    this.secrets.sort((a, b) => b.length - a.length);
  }

  /**
   * Splits output into lines and shows each, redacted; with `diagnostics`, each line is a JSON UI message, shown as
   * its text, its diagnostic kept there.
   */
  private lineSplitter(
    stream: 'stdout' | 'stderr',
    diagnostics?: TofuDiagnostic[],
  ): { push(chunk: string): void; flush(): void } {
    let pending = '';
    const show = (line: string) => {
      const message = diagnostics === undefined ? undefined : readUiLine(line);
      if (message === undefined) this.onOutput?.(this.redact(line), stream);
      else if (message.diagnostic) this.report(message.diagnostic, stream, diagnostics ?? []);
      else for (const text of message.text) this.onOutput?.(this.redact(text), stream);
    };
    return {
      push: (chunk) => {
        const lines = (pending + chunk).split('\n');
        pending = lines.pop() ?? '';
        lines.forEach(show);
      },
      flush: () => {
        if (pending !== '') show(pending);
        pending = '';
      },
    };
  }
}

/**
 * How a command's stdout is treated: `text` is shown line by line; `ui-json` is OpenTofu's streaming JSON UI
 * (plan, apply), shown as its messages' text; `validate-json` is validate's one document of diagnostics; `data`
 * is machine output with sensitive values in clear, parsed and never shown.
 */
type OutputKind = 'text' | 'ui-json' | 'validate-json' | 'data';

/** The text a stdout showed (a JSON UI message as its text), for a failure's tail. */
function shownText(stdout: string, output: OutputKind): string {
  if (output !== 'ui-json') return stdout;
  return stdout
    .split('\n')
    .flatMap((line) => readUiLine(line)?.text ?? [line])
    .join('\n');
}
