/**
 * Every input of every action, parsed once into a typed settings object. The
 * runner applies `action.yml` defaults before the bundle starts; an input it
 * did not get reads as ''. The schemas here are the single list of what the
 * code reads: a test checks them against each action.yml in both directions.
 */
import { z } from 'zod';
import { UsageError } from '../../domain/errors.js';
import { parseDuration } from '../../domain/duration.js';
import { quoteValue, userNameProblem, workflowIdProblem } from '../../domain/names.js';
import { DEFAULT_LEDGER_BRANCH } from '../../ledger/git-store.js';
import { FLEET_AUTH_MODES, type FleetAuthMode } from '../../domain/user-ca.js';
import { HOST_KEY_MODES, type HostKeyMode } from '../../domain/host-trust.js';

/** One input: how its text parses, and whether its value is a secret to mask before anything is logged. */
export interface InputSpec<T = unknown> {
  schema: z.ZodType<T, string>;
  secret?: boolean;
}

export type InputSpecs = Record<string, InputSpec>;
export type Settings<S extends InputSpecs> = { [K in keyof S]: S[K] extends InputSpec<infer T> ? T : never };

const optionalText = z.string().transform((value) => (value.trim() === '' ? undefined : value.trim()));
const requiredText = (name: string) =>
  z.string().transform((value, ctx) => {
    if (value.trim() === '') {
      ctx.addIssue({ code: 'custom', message: `the ${name} input is required` });
      return z.NEVER;
    }
    return value.trim();
  });

/** YAML 1.2 core booleans, as core.getBooleanInput reads them; '' is the default. */
const booleanText = (fallback: boolean) =>
  z.string().transform((value, ctx) => {
    const text = value.trim();
    if (text === '') return fallback;
    if (['true', 'True', 'TRUE'].includes(text)) return true;
    if (['false', 'False', 'FALSE'].includes(text)) return false;
    ctx.addIssue({ code: 'custom', message: `must be true or false, not ${JSON.stringify(text)}` });
    return z.NEVER;
  });

const enumText = <const T extends string, F extends T | undefined = T>(values: readonly [T, ...T[]], fallback: F) =>
  z.string().transform((value, ctx): T | F => {
    const text = value.trim();
    if (text === '') return fallback;
    if ((values as readonly string[]).includes(text)) return text as T;
    ctx.addIssue({ code: 'custom', message: `must be one of ${values.join(', ')}, not ${JSON.stringify(text)}` });
    return z.NEVER;
  });

const durationText = (fallback: string) =>
  z.string().transform((value, ctx) => {
    try {
      return parseDuration(value.trim() === '' ? fallback : value.trim());
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: (error as Error).message });
      return z.NEVER;
    }
  });

/** A comma- or newline-separated list. */
const listText = z.string().transform((value) =>
  value
    .split(/[\n,]/)
    .map((item) => item.trim())
    .filter((item) => item !== ''),
);

/** Arguments for a tool: one per line (as `schedule add` writes them, keeping spaces inside an argument), else split at blanks. */
const argumentsText = z.string().transform((value) =>
  value
    .split(value.includes('\n') ? /\n/ : /\s+/)
    .map((arg) => arg.trim())
    .filter((arg) => arg !== ''),
);

/** Secrets keep their inner whitespace (a private key's lines); only surrounding blank space goes. */
const secretText = z.string().transform((value) => (value.trim() === '' ? undefined : value.replace(/^\s+|\s+$/g, '')));

/** Text checked by a domain rule (`problem` says why a value is refused); the message quotes the value, so never for secrets. */
const checkedText = (problem: (value: string) => string | undefined) =>
  optionalText.superRefine((value, ctx) => {
    const why = value === undefined ? undefined : problem(value);
    if (why !== undefined)
      ctx.addIssue({ code: 'custom', message: `${quoteValue(value as string)} is refused: ${why}` });
  });

const text = (): InputSpec<string | undefined> => ({ schema: optionalText });
const workflowId = (): InputSpec<string | undefined> => ({ schema: checkedText(workflowIdProblem) });
const userName = (): InputSpec<string> => ({ schema: checkedText(userNameProblem).transform((v) => v ?? 'exocomp') });
const required = (name: string): InputSpec<string> => ({ schema: requiredText(name) });
const requiredWorkflowId = (): InputSpec<string> => ({
  schema: requiredText('workflow-id').superRefine((value, ctx) => {
    const why = workflowIdProblem(value);
    if (why !== undefined) ctx.addIssue({ code: 'custom', message: `${quoteValue(value)} is refused: ${why}` });
  }),
});
const secret = (): InputSpec<string | undefined> => ({ schema: secretText, secret: true });
const flag = (fallback: boolean): InputSpec<boolean> => ({ schema: booleanText(fallback) });

const LEDGER = {
  token: { schema: requiredText('token'), secret: true } as InputSpec<string>,
  'ledger-branch': { schema: optionalText.transform((v) => v ?? DEFAULT_LEDGER_BRANCH) } as InputSpec<string>,
  'ledger-repository': text(),
  'ledger-retry-for': { schema: durationText('5m') } as InputSpec<number>,
};

const COMMENT = {
  comment: flag(true),
  'comment-author': { schema: optionalText.transform((v) => v ?? 'github-actions[bot]') } as InputSpec<string>,
};

const TOFU = {
  'tofu-binary': text(),
  'allow-local-state': flag(false),
  'seal-key': secret(),
};

/** Attest the apply's provenance with the job's id-token (src/platform/github/attest.ts). */
const ATTEST = { attest: flag(false) };

const KEYS = {
  'fleet-private-key': secret(),
  // The user CA (docs/keys.md "User CA"): each run signs a fleet certificate with it; fleet-auth is what onboarding installs.
  'user-ca-key': secret(),
  'fleet-auth': { schema: enumText(FLEET_AUTH_MODES, undefined) } as InputSpec<FleetAuthMode | undefined>,
  'certificate-lifetime': { schema: durationText('1h') } as InputSpec<number>,
  'bootstrap-private-key': secret(),
  'run-secrets': secret(),
  'rotate-host-keys': { schema: listText } as InputSpec<string[]>,
  // Empty: as the workflow recorded when it started (auto for a new one); the core judges the bastion (domain/bastion.ts).
  'host-keys': { schema: enumText(HOST_KEY_MODES, undefined) } as InputSpec<HostKeyMode | undefined>,
  bastion: text(),
};

const APPROVAL = {
  'require-approval': flag(false),
  'approval-mode': { schema: enumText(['environment', 'dispatch'], 'environment') } as InputSpec<
    'environment' | 'dispatch'
  >,
  environment: text(),
  'self-review': { schema: enumText(['refuse', 'warn'], 'refuse') } as InputSpec<'refuse' | 'warn'>,
  'approve-workflow': { schema: optionalText.transform((v) => v ?? 'exocomp-approve.yml') } as InputSpec<string>,
};

/** Days a sealed plan artifact is kept (1–90, GitHub's bounds). */
const retentionDays = {
  schema: z.string().transform((value, ctx) => {
    const text = value.trim() === '' ? '7' : value.trim();
    const days = Number(text);
    if (!/^\d+$/.test(text) || days < 1 || days > 90) {
      ctx.addIssue({
        code: 'custom',
        message: `must be a whole number of days from 1 to 90, not ${JSON.stringify(text)}`,
      });
      return z.NEVER;
    }
    return days;
  }),
} as InputSpec<number>;

/** The destroy guard's run settings (domain/destroy-policy.ts), where a plan is recorded for approval. */
const DESTROY_GUARD = {
  'allow-destroy': flag(false),
  protect: { schema: listText } as InputSpec<string[]>,
};

const NEW_WORKFLOW = {
  workspace: { schema: optionalText.transform((v) => v ?? '.') } as InputSpec<string>,
  playbook: text(),
  'workspace-name': text(),
  'ssh-wait': { schema: durationText('5m') } as InputSpec<number>,
  'onboard-playbook': text(),
  'onboard-user': userName(),
  vars: text(),
};

export const ACTION_INPUTS = {
  provision: {
    ...NEW_WORKFLOW,
    ...APPROVAL,
    ...DESTROY_GUARD,
    ...TOFU,
    ...ATTEST,
    ...KEYS,
    ...LEDGER,
    ...COMMENT,
    'workflow-id': workflowId(),
    'artifact-retention-days': retentionDays,
  },
  plan: {
    ...NEW_WORKFLOW,
    ...DESTROY_GUARD,
    ...TOFU,
    // The configuration half of the preview: the check-mode configure play against the hosts tf:<name> names.
    'fleet-private-key': KEYS['fleet-private-key'],
    'run-secrets': KEYS['run-secrets'],
    ...LEDGER,
    ...COMMENT,
    environment: APPROVAL.environment,
    'approve-workflow': APPROVAL['approve-workflow'],
    // Recorded with the workflow this job starts, for the steps that follow (docs/networks.md).
    'host-keys': KEYS['host-keys'],
    bastion: KEYS.bastion,
    'workflow-id': workflowId(),
    'plan-only': flag(false),
    'artifact-retention-days': retentionDays,
  },
  apply: {
    'workflow-id': requiredWorkflowId(),
    'approval-mode': APPROVAL['approval-mode'],
    environment: APPROVAL.environment,
    'self-review': APPROVAL['self-review'],
    ...TOFU,
    ...ATTEST,
    'host-keys': KEYS['host-keys'],
    bastion: KEYS.bastion,
    ...LEDGER,
    ...COMMENT,
  },
  'ssh-wait': {
    'workflow-id': requiredWorkflowId(),
    'host-keys': KEYS['host-keys'],
    bastion: KEYS.bastion,
    ...LEDGER,
    ...COMMENT,
  },
  onboard: {
    'workflow-id': requiredWorkflowId(),
    'fleet-private-key': KEYS['fleet-private-key'],
    'user-ca-key': KEYS['user-ca-key'],
    'fleet-auth': KEYS['fleet-auth'],
    'certificate-lifetime': KEYS['certificate-lifetime'],
    'bootstrap-private-key': KEYS['bootstrap-private-key'],
    'rotate-host-keys': KEYS['rotate-host-keys'],
    'host-keys': KEYS['host-keys'],
    bastion: KEYS.bastion,
    ...LEDGER,
    ...COMMENT,
  },
  configure: {
    'workflow-id': requiredWorkflowId(),
    'fleet-private-key': KEYS['fleet-private-key'],
    'user-ca-key': KEYS['user-ca-key'],
    'certificate-lifetime': KEYS['certificate-lifetime'],
    'run-secrets': KEYS['run-secrets'],
    'seal-key': TOFU['seal-key'],
    bastion: KEYS.bastion,
    ...LEDGER,
    ...COMMENT,
  },
  converge: {
    target: required('target'),
    playbook: required('playbook'),
    args: { schema: argumentsText },
    'remote-user': userName(),
    'fleet-private-key': KEYS['fleet-private-key'],
    'run-secrets': KEYS['run-secrets'],
    'seal-key': TOFU['seal-key'],
    bastion: KEYS.bastion,
    shard: text(),
    'fold-shards': text(),
    'schedule-name': text(),
    'concurrency-key': text(),
    'concurrency-wait': { schema: durationText('10m') },
    rollout: text(),
    'max-failures': text(),
    'health-check': text(),
    'rollout-wait': { schema: durationText('30m') },
    'failed-only': flag(false),
    'from-run': text(),
    ...LEDGER,
  },
  drift: {
    workspace: { schema: optionalText.transform((v) => v ?? '.') },
    playbook: required('playbook'),
    'workspace-name': text(),
    target: text(),
    vars: text(),
    'remote-user': { schema: optionalText.transform((v) => v ?? 'exocomp') },
    'tofu-binary': TOFU['tofu-binary'],
    'seal-key': TOFU['seal-key'],
    'fleet-private-key': KEYS['fleet-private-key'],
    'run-secrets': KEYS['run-secrets'],
    issue: flag(true),
    'issue-author': { schema: optionalText.transform((v) => v ?? 'github-actions[bot]') },
    'fail-on-drift': flag(false),
    'schedule-name': text(),
    ...LEDGER,
  },
  approve: {
    'workflow-id': requiredWorkflowId(),
    decision: { schema: enumText(['approve', 'reject'], 'approve') },
    reason: text(),
    'allow-self-approval': flag(false),
    'continue-workflow': text(),
    ...LEDGER,
    ...COMMENT,
  },
  status: { 'workflow-id': workflowId(), ...LEDGER, ...COMMENT },
  resume: {
    'continue-workflow': text(),
    'dry-run': flag(false),
    'unstarted-after': { schema: durationText('30m') },
    ...LEDGER,
  },
} as const satisfies Record<string, InputSpecs>;

export type ActionName = keyof typeof ACTION_INPUTS;

/**
 * Reads and parses every input of an action. Secret inputs are handed to
 * `onSecret` (the runner's masking) as soon as they are read, before any
 * parsing problem could be reported.
 */
export function readSettings<S extends InputSpecs>(
  specs: S,
  getInput: (name: string) => string,
  onSecret: (value: string) => void,
): Settings<S> {
  const raw: Record<string, string> = {};
  for (const [name, spec] of Object.entries(specs)) {
    raw[name] = getInput(name);
    if (spec.secret) {
      onSecret(raw[name]);
      onSecret(raw[name].trim());
    }
  }
  const out: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const [name, spec] of Object.entries(specs)) {
    const parsed = spec.schema.safeParse(raw[name] ?? '');
    if (parsed.success) out[name] = parsed.data;
    // The messages are ours; the only ones that quote a value belong to non-secret inputs (enums, booleans).
    else problems.push(`${name}: ${parsed.error.issues.map((issue) => issue.message).join('; ')}`);
  }
  if (problems.length > 0)
    throw new UsageError(`invalid action inputs — ${problems.join('; ')}`, 'fix the `with:` block of this step');
  return out as Settings<S>;
}
