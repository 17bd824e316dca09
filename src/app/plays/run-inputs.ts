/**
 * What a run needs that is never persisted: key files, the seal key and
 * run-secrets. Given again on resume.
 */
import type { PlannedApply } from '../provision/apply-workspace.js';
import type { LookAhead } from '../provision/look-ahead.js';
import type { ProvenanceAttestation } from '../ports/attestor.js';
import type { SecretRegistry } from '../runtime/secrets.js';
import type { HostKeyMode } from '../../domain/host-trust.js';

export interface RunInputs {
  tofuBinary?: string | undefined;
  /** Private key of the fleet user: its public half is onboarded, the key itself drives configure. */
  fleetKeyPath?: string;
  /** Private key the onboarding play connects with (the inventory's user). */
  bootstrapKeyPath?: string;
  sealKey?: string | undefined;
  /** Environment name → value, handed to the configure play. */
  runSecrets: Record<string, string>;
  /** Hosts (inventory name, address or [address]:port) whose changed key may be re-pinned. */
  rotateHostKeys: string[];
  /** How first contact is trusted (domain/host-trust.ts); absent: `auto`. */
  hostKeys?: HostKeyMode;
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
} {
  return {
    ...(inputs.fleetKeyPath ? { fleetKeyPath: inputs.fleetKeyPath } : {}),
    ...(inputs.sealKey ? { sealKey: inputs.sealKey } : {}),
    runSecrets: inputs.runSecrets,
  };
}
