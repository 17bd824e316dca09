import { basename } from 'node:path';
import { ExocompError, UsageError } from './errors.js';

/**
 * Quotes a user-supplied value for an error message: JSON string syntax with
 * every character outside printable ASCII escaped, so control characters,
 * terminal escapes and bidi overrides cannot disguise the value. Long values are
 * cut short.
 */
export function quoteValue(raw: string, maxLength = 80): string {
  const shown = raw.length > maxLength ? `${raw.slice(0, maxLength)}…` : raw;
  return JSON.stringify(shown).replace(
    /[^\x20-\x7e]/g,
    (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/**
 * Names that become one path component on the ledger branch (and of a git ref):
 * workspace names (`tf:<name>`) and workflow ids share one rule.
 */
export const RECORD_NAME_MAX_LENGTH = 64;
export const WORKSPACE_NAME_MAX_LENGTH = RECORD_NAME_MAX_LENGTH;
export const WORKFLOW_ID_MAX_LENGTH = RECORD_NAME_MAX_LENGTH;
const RECORD_NAME = /^[a-z0-9][a-z0-9._-]*$/;
const recordNameRule = (what: string) =>
  `a ${what} is 1-${RECORD_NAME_MAX_LENGTH} characters of a-z, 0-9, '.', '_' and '-', ` +
  `starts with a letter or digit, and neither contains '..' nor ends with '.'`;
const WORKSPACE_NAME_RULE = recordNameRule('workspace name');
const WORKFLOW_ID_RULE = recordNameRule('workflow id');

/**
 * Says why `raw` cannot name a ledger record, or undefined when it can: the
 * one record-name rule (workspace names, workflow ids, locks, schedules,
 * converge runs); src/ledger/records.ts refuses any other name before it
 * builds a path.
 */
export function recordNameProblem(raw: string): string | undefined {
  if (raw === '') return 'it is empty';
  if (raw.length > RECORD_NAME_MAX_LENGTH)
    return `it is ${raw.length} characters long (at most ${RECORD_NAME_MAX_LENGTH})`;
  if (/[A-Z]/.test(raw)) return 'it contains uppercase letters';
  if (raw.includes('/') || raw.includes('\\')) return 'it contains a path separator';
  if (/\s/.test(raw)) return 'it contains whitespace';
  if (raw.includes('..')) return "it contains '..'";
  if (!/^[a-z0-9]/.test(raw)) return 'it does not start with a letter or digit';
  if (!RECORD_NAME.test(raw)) return "it contains characters other than a-z, 0-9, '.', '_' and '-'";
  if (raw.endsWith('.')) return "it ends with '.'";
  return undefined;
}

const workspaceNameProblem = recordNameProblem;

/** Validates a workspace name (the `<name>` of `tf:<name>`); never transforms it. */
export function parseWorkspaceName(raw: string): string {
  const problem = workspaceNameProblem(raw);
  if (problem !== undefined) {
    throw new UsageError(`invalid workspace name ${quoteValue(raw)}: ${problem}`, WORKSPACE_NAME_RULE);
  }
  return raw;
}

/**
 * The default workspace name: the basename of the workspace path, validated as
 * is. Pass a resolved path — `.` has no usable basename.
 */
export function defaultWorkspaceName(workspacePath: string): string {
  const base = basename(workspacePath);
  const problem = workspaceNameProblem(base);
  if (problem !== undefined) {
    throw new UsageError(
      `cannot use the basename ${quoteValue(base)} of workspace path ${quoteValue(workspacePath)} ` +
        `as the workspace name: ${problem}`,
      `pass --workspace-name <name>; ${WORKSPACE_NAME_RULE}`,
    );
  }
  return base;
}

export const STANDING_INVENTORY_PREFIX = 'tf:';

export type InventoryRef = { kind: 'standing'; name: string } | { kind: 'file'; path: string };

/** `tf:<name>` names a standing inventory; anything else is an inventory file path. */
export function parseInventoryRef(raw: string): InventoryRef {
  if (raw === '') {
    throw new UsageError(
      'the inventory reference is empty',
      `name a standing inventory as ${STANDING_INVENTORY_PREFIX}<workspace name> or give an inventory file path`,
    );
  }
  if (!raw.startsWith(STANDING_INVENTORY_PREFIX)) return { kind: 'file', path: raw };
  const name = raw.slice(STANDING_INVENTORY_PREFIX.length);
  const problem = workspaceNameProblem(name);
  if (problem !== undefined) {
    throw new UsageError(
      `invalid inventory reference ${quoteValue(raw)}: the workspace name ${problem}`,
      `write ${STANDING_INVENTORY_PREFIX}<workspace name>; ${WORKSPACE_NAME_RULE}`,
    );
  }
  return { kind: 'standing', name };
}

const ENV_NAME = /^[A-Z_][A-Z0-9_]*$/;
// Checked on the output name itself: toUpperCase maps some non-ASCII letters to ASCII ('ı' → 'I').
const BINDABLE_OUTPUT_NAME = /^[A-Za-z0-9_-]*$/;
/**
 * Names the play's runtime depends on: a sealed output bound to one of these
 * would silently replace it (PATH, the ssh-agent socket, ansible settings, …).
 */
const RESERVED_ENV_NAMES = new Set(['PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'PWD', 'TMPDIR', 'LANG', 'TERM']);
const RESERVED_ENV_PREFIXES = ['LC_', 'LD_', 'ANSIBLE_', 'SSH_', 'PYTHON', 'EXOCOMP_', 'GITHUB_', 'RUNNER_'];

/** The environment variable a sealed output is bound to: `db-password` → `DB_PASSWORD`. */
export function envNameForOutput(outputName: string): string {
  const envName = outputName.toUpperCase().replaceAll('-', '_');
  if (!BINDABLE_OUTPUT_NAME.test(outputName) || !ENV_NAME.test(envName)) {
    throw new ExocompError(
      'seal',
      `output ${quoteValue(outputName)} cannot be bound to an environment variable: ` +
        `${quoteValue(envName)} is not of the form [A-Z_][A-Z0-9_]*`,
      {
        help: "rename the output to letters, digits, '_' and '-', starting with a letter or '_'",
      },
    );
  }
  if (RESERVED_ENV_NAMES.has(envName) || RESERVED_ENV_PREFIXES.some((prefix) => envName.startsWith(prefix))) {
    throw new ExocompError(
      'seal',
      `output ${quoteValue(outputName)} would be bound to ${envName}, which the play's runtime itself uses`,
      {
        help: `rename the output; names that become ${[...RESERVED_ENV_NAMES].join(', ')} or start with ${RESERVED_ENV_PREFIXES.join(', ')} are reserved`,
      },
    );
  }
  return envName;
}

/** Says why `raw` cannot name a workflow record (workflows/<id>.json), or undefined when it can. */
export const workflowIdProblem = recordNameProblem;

/** Validates a workflow id (`--id`, `workflow-id`): it becomes a file name on the ledger branch. */
export function parseWorkflowId(raw: string): string {
  const problem = workflowIdProblem(raw);
  if (problem !== undefined)
    throw new UsageError(`invalid workflow id ${quoteValue(raw)}: ${problem}`, WORKFLOW_ID_RULE);
  return raw;
}

/**
 * A ledger name B stands for the branch `B` (the old single-branch layout)
 * and the record namespace `B-records/` (src/ledger/layout.ts).
 */
export const LEDGER_RECORDS_SUFFIX = '-records';
const LEDGER_NAME_RULE =
  "a ledger name is a plain branch name (letters, digits, '.', '_', '-' and '/'; no '..', no component that is " +
  `empty, starts with '.' or ends with '.lock') none of whose components ends with '${LEDGER_RECORDS_SUFFIX}', ` +
  'e.g. exocomp-ledger';

/**
 * Says why `raw` cannot name a ledger, or undefined when it can. No component
 * may end with `-records`: `B-records` is the record namespace of the ledger B,
 * so such a name would equal it or lie inside it (and a ledger whose namespace
 * held another ledger's branch would be that ledger's neighbour in the same
 * refs). This is the only ledger-name rule; the ledger store applies it, so
 * every command, action and component input that names a ledger is checked.
 */
export function ledgerNameProblem(raw: string): string | undefined {
  if (raw === '') return 'it is empty';
  if (!/^[A-Za-z0-9._/-]+$/.test(raw))
    return "it contains characters other than letters, digits, '.', '_', '-' and '/'";
  if (raw.startsWith('-')) return "it starts with '-'";
  if (raw.includes('..')) return "it contains '..'";
  if (raw.endsWith('.')) return "it ends with '.'";
  const components = raw.split('/');
  if (components.some((part) => part === '' || part.startsWith('.') || part.endsWith('.lock')))
    return "a component is empty, starts with '.' or ends with '.lock'";
  const inside = components.findIndex((part) => part.endsWith(LEDGER_RECORDS_SUFFIX));
  if (inside !== -1) {
    const owner = components
      .slice(0, inside + 1)
      .join('/')
      .slice(0, -LEDGER_RECORDS_SUFFIX.length);
    return inside === components.length - 1
      ? `it is the record namespace of the ledger ${quoteValue(owner)}`
      : `it lies inside the record namespace of the ledger ${quoteValue(owner)}`;
  }
  return undefined;
}

/** Validates a ledger name (`--ledger-branch`, the `ledger-branch` input); never transforms it. */
export function parseLedgerName(raw: string): string {
  const problem = ledgerNameProblem(raw);
  if (problem !== undefined)
    throw new UsageError(`invalid ledger name ${quoteValue(raw)}: ${problem}`, LEDGER_NAME_RULE);
  return raw;
}

export const USER_NAME_MAX_LENGTH = 32;
const USER_NAME = /^[A-Za-z_][A-Za-z0-9_.-]*$/;
const USER_NAME_RULE = `a user name is 1-${USER_NAME_MAX_LENGTH} characters of letters, digits, '.', '_' and '-', starting with a letter or '_'`;

/** Says why `raw` is not a user name ssh and useradd accept as given, or undefined. */
export function userNameProblem(raw: string): string | undefined {
  if (raw === '') return 'it is empty';
  if (raw.length > USER_NAME_MAX_LENGTH) return `it is ${raw.length} characters long (at most ${USER_NAME_MAX_LENGTH})`;
  if (raw.startsWith('-')) return "it starts with '-', which ssh would read as an option";
  if (!/^[A-Za-z_]/.test(raw)) return "it does not start with a letter or '_'";
  if (!USER_NAME.test(raw)) return "it contains characters other than letters, digits, '.', '_' and '-'";
  return undefined;
}

/** Validates a user name given for `what` (e.g. `--onboard-user`). */
export function parseUserName(raw: string, what: string): string {
  const problem = userNameProblem(raw);
  if (problem !== undefined) throw new UsageError(`invalid ${what} ${quoteValue(raw)}: ${problem}`, USER_NAME_RULE);
  return raw;
}
