/**
 * The apply's provenance, attested on GitHub with `@actions/attest`: the
 * statement's subjects and predicate are signed with the job's OIDC identity
 * (Sigstore: public-good for public repositories, GitHub's instance for
 * private ones) and stored with `POST /repos/{owner}/{repo}/attestations`,
 * where `gh attestation verify` and the attestations API find them.
 * Requires `permissions: id-token: write` and `attestations: write`
 * (https://docs.github.com/en/actions/security-for-github-actions/using-artifact-attestations).
 */
import type { AttestOptions } from '@actions/attest';
import type { ProvenanceAttestation, ProvenanceAttestor } from '../../app/ports/attestor.js';
import type { RunInputs } from '../../app/plays/run-inputs.js';
import type { RunContext } from './run-context.js';
import type { Session } from './session.js';

export const NO_ID_TOKEN =
  'no attestation: the job has no id-token (ACTIONS_ID_TOKEN_REQUEST_URL is not set); grant the job `permissions: id-token: write` and `attestations: write`';

/**
 * @actions/attest's `attest`, loaded only when a job attests (it is a bundle of its own: `src/actions/<name>/attest.ts`).
 * Its types say the id is a string, but it passes on the `id` GitHub answers, an integer (lib/store.js; the REST
 * API's "Create an attestation").
 */
export type SignStatement = (options: AttestOptions) => Promise<{ attestationID?: string | number }>;

export function githubAttestor(
  run: RunContext,
  token: string,
  loadSign: () => Promise<SignStatement>,
): ProvenanceAttestor {
  return {
    async attest(statement) {
      const sign = await loadSign();
      // The subjects go as they are (annotations too): @actions/attest wraps them in the same Statement v1.
      const made = await sign({
        subjects: statement.subject,
        predicateType: statement.predicateType,
        predicate: statement.predicate,
        token,
      });
      // The ledger records the id as text (a number there would make the provenance record unreadable).
      const id = made.attestationID === undefined ? undefined : String(made.attestationID);
      return id ? { id, url: `${run.serverUrl}/${run.slug}/attestations/${id}` } : {};
    },
  };
}

/**
 * What the `attest` input asks of this job: an attestor where the job has an
 * id-token; without one, a notice says why no attestation is made, and the
 * provenance records it.
 */
export function githubAttestation(
  run: RunContext,
  request: { asked: boolean; token: string; loadSign: () => Promise<SignStatement> },
  notice: (message: string) => void,
): Pick<RunInputs, 'attestation'> {
  if (!request.asked) return {};
  if (!run.idToken) {
    notice(NO_ID_TOKEN);
    return { attestation: { notAttempted: NO_ID_TOKEN } satisfies ProvenanceAttestation };
  }
  return { attestation: { attestor: githubAttestor(run, request.token, request.loadSign) } };
}

/** The `attest` input of the actions that apply, read against this job. */
export function applyAttestation(
  session: Session<'provision' | 'apply'>,
  loadSign: () => Promise<SignStatement>,
): Pick<RunInputs, 'attestation'> {
  const { attest: asked, token } = session.settings;
  return githubAttestation(session.run, { asked, token, loadSign }, (message) => session.platform.log.notice(message));
}
