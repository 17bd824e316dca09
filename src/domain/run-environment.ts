import { UsageError } from './errors.js';

/**
 * The environment a play runs in (docs/architecture.md, "Secrets";
 * ADR 0004).
 *
 * Rule: the ALLOWLIST decides. A parent variable reaches the play only when its
 * name is allowlisted and matches no entry of the denylist. The denylist exists
 * for two reasons: it documents what the allowlist is keeping out (CI tokens,
 * the seal key, TF_*, cloud credentials), and it is applied on top of the
 * pattern entries (`LC_*`, `ANSIBLE_*`) so a pattern can never let a credential
 * through (e.g. `ANSIBLE_VAULT_PASSWORD_FILE`, `ANSIBLE_BECOME_PASSWORD_FILE`).
 *
 * Decisions:
 * - `ANSIBLE_*` the user set pass (they tune ansible: roles path, callbacks, …),
 *   except `ANSIBLE_CONFIG` (a caller-chosen config file is not honoured; the
 *   working directory's ansible.cfg still is) and anything naming a password,
 *   token or secret. A vault password reaches a play as a run-secret instead.
 *   Settings the adapter owns (host key checking, ssh args, control path, …)
 *   are overwritten by the adapter whatever the user set.
 * - `SSH_AUTH_SOCK` never passes: the runner's agent may hold other keys; the
 *   caller adds the per-run agent's variables after scrubbing.
 * - Proxy variables (`HTTPS_PROXY`, …) do not pass: their URLs may embed
 *   credentials. A run that needs them names them as run-secrets.
 * - `additions` (run-secrets, unsealed outputs) are intended to be present and
 *   are added after scrubbing, whatever their name looks like, as long as
 *   `validateEnvName` accepts it.
 */

const ALLOWED_NAMES: ReadonlySet<string> = new Set([
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'SHELL',
  'LANG',
  'LANGUAGE',
  'TZ',
  'TERM',
  'TMPDIR',
]);

const ALLOWED_PREFIXES: readonly string[] = ['LC_', 'ANSIBLE_'];

/** Each entry says why a name must never reach a play from the parent environment. */
const DENIED: readonly { pattern: RegExp; why: string }[] = [
  { pattern: /^EXOCOMP_/, why: 'exocomp settings, the seal key among them' },
  { pattern: /^ANSIBLE_CONFIG$/, why: 'a config file chosen by the caller could undo run settings' },
  { pattern: /TOKEN/, why: 'tokens (GITHUB_TOKEN, GH_TOKEN, CI_JOB_TOKEN, ACTIONS_RUNTIME_TOKEN, …)' },
  { pattern: /SECRET/, why: 'secrets' },
  { pattern: /PASSWORD|PASSWD/, why: 'passwords and password files' },
  { pattern: /^(ACTIONS|RUNNER|GITHUB|CI|GITLAB)_/, why: 'CI runner internals' },
  { pattern: /^TF_/, why: 'Terraform/OpenTofu variables and credentials' },
  {
    pattern: /^(AWS|GOOGLE|GCLOUD|CLOUDSDK|AZURE|ARM|HCLOUD|DIGITALOCEAN|OS|SCW|LINODE|VULTR)_/,
    why: 'cloud credentials',
  },
  { pattern: /^SSH_(AUTH_SOCK|AGENT_PID)$/, why: 'the runner’s own ssh-agent' },
];

const RESERVED_NAMES: ReadonlySet<string> = new Set([
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'SHELL',
  'TMPDIR',
  'SSH_AUTH_SOCK',
  'SSH_AGENT_PID',
]);

const RESERVED_PREFIXES: readonly string[] = ['ANSIBLE_', 'EXOCOMP_', 'LD_', 'PYTHON'];

function isAllowedFromParent(name: string): boolean {
  const allowed = ALLOWED_NAMES.has(name) || ALLOWED_PREFIXES.some((prefix) => name.startsWith(prefix));
  return allowed && !DENIED.some(({ pattern }) => pattern.test(name.toUpperCase()));
}

/**
 * Throws a UsageError unless `name` can carry a run-secret or an unsealed
 * output: a portable variable name that does not change how the tools run
 * (PATH, HOME, ANSIBLE_*, LD_*, PYTHON*, EXOCOMP_*, the ssh-agent's variables).
 */
export function validateEnvName(name: string): void {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
    throw new UsageError(
      `"${name}" is not a valid environment variable name`,
      'use letters, digits and underscores, not starting with a digit (e.g. DB_PASSWORD)',
    );
  }
  const upper = name.toUpperCase();
  if (RESERVED_NAMES.has(upper) || RESERVED_PREFIXES.some((prefix) => upper.startsWith(prefix))) {
    throw new UsageError(
      `"${name}" is reserved: it changes how ansible, python or ssh run, so it cannot carry a secret or an output`,
      'rename the run-secret or output binding (e.g. APP_' + upper + ')',
    );
  }
}

/**
 * The environment for a play: the allowlisted part of `parent`, then
 * `additions` (which win). Pure: reads nothing but its arguments.
 */
export function scrubEnvironment(parent: NodeJS.ProcessEnv, additions: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(parent)) {
    if (value !== undefined && isAllowedFromParent(name)) env[name] = value;
  }
  for (const [name, value] of Object.entries(additions)) {
    validateEnvName(name);
    env[name] = value;
  }
  return env;
}
