/**
 * Every failure a user can meet is an ExocompError: a kind (stable, machine
 * readable), a message that says what went wrong, and help that says what to do
 * next. Entry points map `usage` to exit code 2 and everything else to 1.
 */
export type ErrorKind =
  | 'usage'
  | 'illegal-transition'
  | 'lease-held'
  | 'ledger-record'
  | 'ledger-unreachable'
  | 'api-unanswered'
  | 'ledger-conflict'
  | 'inventory'
  | 'tool-missing'
  | 'tool-failed'
  | 'ssh-wait'
  | 'bastion'
  | 'host-key'
  | 'play-failed'
  | 'approval'
  | 'seal'
  | 'permission'
  | 'interrupted'
  | 'internal';

export class ExocompError extends Error {
  readonly kind: ErrorKind;
  readonly help: string | undefined;
  /** Everything known about the failure, beyond the one-line message (kept in the ledger's failure context). */
  readonly detail: string | undefined;
  /** Every host the failure concerns, when it concerns hosts (the message names only the first few). */
  readonly hosts: readonly string[] | undefined;

  constructor(
    kind: ErrorKind,
    message: string,
    options: { help?: string; cause?: unknown; detail?: string; hosts?: readonly string[] } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ExocompError';
    this.kind = kind;
    this.help = options.help;
    this.detail = options.detail;
    this.hosts = options.hosts;
  }

  get exitCode(): 1 | 2 {
    return this.kind === 'usage' ? 2 : 1;
  }
}

export class UsageError extends ExocompError {
  constructor(message: string, help?: string) {
    super('usage', message, help === undefined ? {} : { help });
    this.name = 'UsageError';
  }
}

/**
 * The run was told to stop (Ctrl-C, "Cancel workflow"): the running step
 * stops its tool and is recorded as interrupted. `forward` is the signal the
 * tool gets (tofu and ansible stop cleanly on SIGINT); undefined when the tool
 * received the signal itself (a terminal signals the whole process group).
 */
export class InterruptedError extends ExocompError {
  constructor(
    readonly received: 'SIGINT' | 'SIGTERM',
    readonly forward: 'SIGINT' | undefined,
  ) {
    super('interrupted', `interrupted by ${received}`, {
      help: 'nothing more was started; resume continues from the interrupted step',
    });
    this.name = 'InterruptedError';
  }
}

/**
 * An optional call to a platform's API that got no answer, naming the API's URL and the cause; `quiet` when an
 * earlier call of the same job already said so (said once, never per call; no grant would help).
 */
export class UnansweredError extends ExocompError {
  constructor(
    message: string,
    readonly quiet: boolean,
    cause?: unknown,
  ) {
    super('api-unanswered', message, {
      help: 'the job goes on without it; check that the runner reaches the API',
      ...(cause === undefined ? {} : { cause }),
    });
    this.name = 'UnansweredError';
  }
}

/** Renders an error for a terminal or log: the message, then the help line. */
export function describeError(error: unknown): string {
  if (error instanceof ExocompError) {
    return error.help ? `${error.message}\n  → ${error.help}` : error.message;
  }
  return error instanceof Error ? error.message : String(error);
}

/**
 * One line that says what failed, for a record's summary: the message's first line, completed when it ends
 * on `:` by what follows — the error's first detail line (tofu's own error, e.g. `main.tf:3: Unsupported
 * argument`), else the message's next line.
 */
export function failureHeadline(error: unknown): string {
  const lines = (text: string | undefined) =>
    (text ?? '')
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== '');
  const [first = 'failed', ...rest] = lines(error instanceof Error ? error.message : String(error));
  if (!first.endsWith(':')) return first;
  const cause = lines(error instanceof ExocompError ? error.detail : undefined)[0] ?? rest[0];
  return cause === undefined ? first.slice(0, -1) : `${first} ${cause}`;
}
