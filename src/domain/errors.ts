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
  | 'ledger-conflict'
  | 'inventory'
  | 'tool-missing'
  | 'tool-failed'
  | 'ssh-wait'
  | 'host-key'
  | 'play-failed'
  | 'approval'
  | 'seal'
  | 'permission'
  | 'internal';

export class ExocompError extends Error {
  readonly kind: ErrorKind;
  readonly help: string | undefined;
  /** Everything known about the failure, beyond the one-line message (kept in the ledger's failure context). */
  readonly detail: string | undefined;

  constructor(kind: ErrorKind, message: string, options: { help?: string; cause?: unknown; detail?: string } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ExocompError';
    this.kind = kind;
    this.help = options.help;
    this.detail = options.detail;
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

/** Renders an error for a terminal or log: the message, then the help line. */
export function describeError(error: unknown): string {
  if (error instanceof ExocompError) {
    return error.help ? `${error.message}\n  → ${error.help}` : error.message;
  }
  return error instanceof Error ? error.message : String(error);
}
