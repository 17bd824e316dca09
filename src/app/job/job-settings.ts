/**
 * What a CI job is asked to do, the same shape whatever face it came through:
 * a face (GitHub action, GitLab job, CLI, a new CI platform) maps its own
 * inputs into this and hands it, with its CiPlatform, to runCiJob. Parsed
 * with zod, so a face's mapping mistake is a usage error naming the setting.
 */
import { z } from 'zod';
import { fleetAuthModeSchema, sourceAddressSchema } from '../../domain/user-ca.js';
import { hostKeyModeSchema } from '../../domain/host-trust.js';
import { planApplierSchema } from '../../domain/plan-applier.js';
import { UsageError } from '../../domain/errors.js';
import { describeZodIssues } from '../../ledger/records.js';
import { parseWorkflowId, parseWorkspaceName, parseUserName } from '../../domain/names.js';

const workflowId = z.string().transform(parseWorkflowId);
const workspaceName = z.string().transform(parseWorkspaceName);

/** The workflow a job starts when the ledger does not hold it yet. */
const newWorkflowSchema = z.object({
  /** The OpenTofu/Terraform workspace directory. */
  workspace: z.string().min(1),
  /** Default: the workspace directory's name. */
  workspaceName: workspaceName.optional(),
  /** The configure playbook: required to start a workflow, checked before the first ledger write. */
  playbook: z.string().min(1).optional(),
  onboardPlaybook: z.string().min(1).optional(),
  onboardUser: z
    .string()
    .default('exocomp')
    .transform((name) => parseUserName(name, 'the onboard user')),
  sshWaitMs: z.number().int().positive(),
  vars: z.record(z.string(), z.unknown()).optional(),
  /** Default: required unless the approval mode is `none`. */
  requireApproval: z.boolean().optional(),
});

export const jobSettingsSchema = z.object({
  /**
   * What this job does: `plan` (plan for approval), `apply` (the gate, then the
   * apply), `chain` (every step left), or one later step.
   */
  scope: z.enum(['plan', 'apply', 'chain', 'ssh-wait', 'onboard', 'configure']),
  /** The workflow to continue; default `<workspace name>-<run id>`, stable across re-runs of the run. */
  workflowId: workflowId.optional(),
  /** Given: a workflow this job may start (plan, apply, chain jobs). */
  start: newWorkflowSchema.optional(),
  approval: z
    .object({
      /**
       * How a pending approval is decided in a job that may apply: `environment`
       * (the platform held the job for a reviewer), `manual` (whoever started
       * this job by hand), `dispatch` (in a run of its own, which starts the
       * continuation), `elsewhere` (this job never decides: it ends awaiting),
       * `none` (a new workflow needs no approval).
       */
      mode: z.enum(['none', 'manual', 'environment', 'dispatch', 'elsewhere']),
      environment: z.string().min(1).optional(),
      /** What an approval by the workflow's own requester gets. */
      selfApproval: z.enum(['refuse', 'warn', 'allow']).default('refuse'),
      /** Manual mode: this job, and whether a person started it by hand. */
      job: z.object({ name: z.string().min(1), startedByHand: z.boolean() }).optional(),
      /** A plan job: which job of its run applies the plan (named in its notice); absent: the gate's own words. */
      applier: planApplierSchema.optional(),
    })
    .refine((a) => a.mode !== 'manual' || a.job !== undefined, {
      message: 'manual approval needs the job and whether a person started it',
    }),
  /** Key material: each the key itself or the path of a file holding it. */
  keys: z
    .object({
      fleet: z.string().min(1).optional(),
      bootstrap: z.string().min(1).optional(),
      seal: z.string().min(1).optional(),
      /** The user CA that signs this run's fleet certificate (docs/keys.md "User CA"). */
      userCa: z.string().min(1).optional(),
    })
    .default({}),
  /** What onboarding makes a host accept for the fleet user: key, cert or both (domain/user-ca.ts). */
  fleetAuth: fleetAuthModeSchema.optional(),
  /** How long a run's fleet certificate lives (the job's time limit); absent: 1 h. */
  certificateLifetimeMs: z.number().int().positive().optional(),
  /** Where a run's fleet certificate may be used from (its source-address option); absent: anywhere. */
  certificateSourceAddress: sourceAddressSchema.optional(),
  /** Environment name → value, handed to the configure play. */
  runSecrets: z.record(z.string(), z.string()).default({}),
  rotateHostKeys: z.array(z.string()).default([]),
  /** How first contact is trusted: auto, known or tofu (domain/host-trust.ts); absent: as the workflow recorded. */
  hostKeys: hostKeyModeSchema.optional(),
  /** The bastion every SSH host is reached through, `[user@]host[:port]` (checked by readRunInputs: domain/bastion.ts). */
  bastion: z.string().min(1).optional(),
  tofuBinary: z.string().min(1).optional(),
  allowLocalState: z.boolean().default(false),
  /** The destroy guard's run settings (domain/destroy-policy.ts): allow-destroy, and protect patterns beside the policy's. */
  allowDestroy: z.boolean().default(false),
  protect: z.array(z.string().min(1)).default([]),
  ledgerBranch: z.string().min(1),
  /** Post the status on the run's pull/merge request (optional: a refusal is a notice). */
  statusComment: z.boolean().default(true),
  /**
   * A plan job's preview (pull requests, forks included): plans the workspace
   * `start` names and previews its configure play in check mode, recording
   * nothing and applying nothing; the ledger is read at most.
   */
  preview: z.boolean().default(false),
});

const checkedJobSettings = jobSettingsSchema.refine((s) => !s.preview || (s.scope === 'plan' && s.start), {
  message: 'a preview is a plan job with the workspace to plan',
  path: ['preview'],
});

export type JobSettings = z.output<typeof jobSettingsSchema>;
export type JobSettingsInput = z.input<typeof jobSettingsSchema>;

/** A face's mapping, checked; names the setting that is wrong. */
export function parseJobSettings(raw: JobSettingsInput): JobSettings {
  const parsed = checkedJobSettings.safeParse(raw);
  if (!parsed.success)
    throw new UsageError(`the job's settings are not valid: ${describeZodIssues(parsed.error)}`, 'check the inputs');
  return parsed.data;
}
