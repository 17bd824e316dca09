/**
 * What a run needs that is never persisted: key files, the seal key and
 * run-secrets. Given again on resume.
 */
import type { PlannedApply } from '../provision/apply-workspace.js';
import type { LookAhead } from '../provision/look-ahead.js';
import type { ProvenanceAttestation } from '../ports/attestor.js';
import type { SecretRegistry } from '../runtime/secrets.js';
import type { HostKeyMode } from '../../domain/host-trust.js';
import { formatBastion, parseBastion, type Hop } from '../../domain/bastion.js';
import type { ChainOptions, Workflow } from '../../domain/workflow.js';
import type { RunReach } from '../hosts/inventories.js';
import type { UserCaSigner } from '../keys/user-ca.js';
import type { FleetAuthMode } from '../../domain/user-ca.js';

export interface RunInputs {
  tofuBinary?: string | undefined;
  /** Private key of the fleet user: its public half is onboarded, the key itself drives configure. */
  fleetKeyPath?: string;
  /** The user CA: when given, the fleet user logs in with a certificate this run signs (app/keys/user-ca.ts). */
  userCa?: UserCaSigner;
  /** What onboarding makes a host accept for the fleet user (domain/user-ca.ts); absent: `key`. */
  fleetAuth?: FleetAuthMode;
  /** Private key the onboarding play connects with (the inventory's user). */
  bootstrapKeyPath?: string;
  sealKey?: string | undefined;
  /** Environment name → value, handed to the configure play. */
  runSecrets: Record<string, string>;
  /** Hosts (inventory name, address or [address]:port) whose changed key may be re-pinned. */
  rotateHostKeys: string[];
  /** How first contact is trusted (domain/host-trust.ts); absent: as the workflow recorded, else `auto`. */
  hostKeys?: HostKeyMode;
  /** The bastion every SSH host is reached through (domain/bastion.ts); absent: as the workflow recorded, else none. */
  bastion?: Hop;
  /** In CI, apply a workspace whose state stays on the runner (see domain/state-backend.ts). */
  allowLocalState?: boolean;
  /** Let a plan destroy or replace hosts, or destroy more than the policy's max-destroy (domain/destroy-policy.ts). */
  allowDestroy?: boolean;
  /** Address patterns this run's plan may not change, beside the policy's (domain/destroy-policy.ts). */
  protect?: string[];
  /** The approved plan carried from the plan job: the apply step applies exactly it. */
  savedPlanFile?: string;
  /** The apply's plan, made while this run recorded the new workflow with apply running (continue-workflow.ts). */
  plannedApply?: LookAhead<PlannedApply>;
  /** Whether and how the apply's provenance is attested (asked on GitHub with `attest`); unset: not asked. */
  attestation?: ProvenanceAttestation;
  secrets: SecretRegistry;
}

/** What a play against tf:<name> takes from the run inputs: the fleet key it connects with, the seal key that unseals the workspace's outputs, and the run-secrets. */
export function playInputs(inputs: RunInputs): {
  fleetKeyPath?: string;
  sealKey?: string;
  runSecrets: Record<string, string>;
  bastion?: Hop;
} {
  return {
    ...(inputs.fleetKeyPath ? { fleetKeyPath: inputs.fleetKeyPath } : {}),
    ...(inputs.sealKey ? { sealKey: inputs.sealKey } : {}),
    runSecrets: inputs.runSecrets,
    ...(inputs.bastion ? { bastion: inputs.bastion } : {}),
  };
}

/** A new workflow's options with how this run reaches its hosts, so a resume that does not say reaches them the same way. */
export function recordingRunReach(
  options: ChainOptions,
  inputs: Pick<RunInputs, 'hostKeys' | 'bastion'>,
): ChainOptions {
  return {
    ...options,
    ...(inputs.hostKeys ? { hostKeys: inputs.hostKeys } : {}),
    ...(inputs.bastion ? { bastion: formatBastion(inputs.bastion) } : {}),
  };
}

/** How this run reaches the workflow's hosts: what the run gives, else what the workflow recorded when it started. */
export function runReach(inputs: Pick<RunInputs, 'hostKeys' | 'bastion'>, workflow: Workflow): RunReach {
  const recorded = workflow.options.bastion;
  const bastion =
    inputs.bastion ??
    (recorded === undefined ? undefined : parseBastion(recorded, `workflow ${workflow.id}'s bastion`));
  return {
    hostKeys: inputs.hostKeys ?? workflow.options.hostKeys ?? 'auto',
    ...(bastion ? { bastion } : {}),
    playUser: configureUser(workflow),
  };
}

/** The user configure logs in as: the workflow's remote user, else the fleet user onboarding makes. */
export function configureUser(workflow: Workflow): string {
  return workflow.options.remoteUser ?? workflow.options.onboardUser;
}
