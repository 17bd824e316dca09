/**
 * The attestation port: signs an apply's provenance statement and stores it
 * where the platform keeps attestations (GitHub: `@actions/attest`,
 * src/platform/github/attest.ts). A face supplies an attestor only where the
 * job can sign (GitHub with an id-token); otherwise it says why not.
 */
import type { ProvenanceStatement } from '../../domain/provenance.js';

export interface ProvenanceAttestor {
  /** Attests the statement (its subjects and predicate, unchanged); returns the attestation's id and link, where known. */
  attest(statement: ProvenanceStatement): Promise<{ id?: string; url?: string }>;
}

/** What the run was asked about attesting: an attestor, or the reason no attestation can be made (recorded as such). */
export type ProvenanceAttestation = { attestor: ProvenanceAttestor } | { notAttempted: string };
