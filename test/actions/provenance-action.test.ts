/**
 * Issue 27, item 3 on the emulated runner: `attest: true` without an id-token
 * makes no attestation and a notice says why; with one, a failing attestation
 * (here the id-token endpoint refuses, on loopback) is a warning and a record,
 * never a failed apply. Accepted: "on the emulated runner with an id-token the
 * attest call is made with the statement's subject (against the double)": the
 * bundled `@actions/attest` signs through the runner's id-token, Fulcio and
 * the timestamp authority of GitHub's Sigstore instance (the Sigstore double)
 * and stores the bundle with the REST double.
 */
import { verify, X509Certificate } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { events } from '../support/action-runner.js';
import { SigstoreDouble } from '../support/sigstore-double.js';
import { createActionFixture, describeRun, planInputs, REPOSITORY, type ActionFixture } from './helpers.js';

/** A name for the server host: `@actions/attest` signs at `fulcio.<host>` and `timestamp.<host>` of it. */
const HOSTNAME = 'github.localhost';

/** A loopback port nothing listens on: taken, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('provision with attest: true', () => {
  let fx: ActionFixture;

  beforeAll(async () => {
    // No ansible_inventory output: the apply names no hosts, so no SSH host is needed.
    fx = await createActionFixture('no-inventory');
  });
  afterAll(async () => {
    await fx?.cleanup();
  });

  it('without an id-token: applied, a notice says why no attestation was made, and the provenance records it', async () => {
    const result = await fx.run('provision', { runId: 4201, with: { ...planInputs(), attest: 'true' } });
    const record = JSON.parse((await fx.ledgerFile('workflows/edge-4201.json'))!);
    expect(record.steps[0], describeRun(result)).toMatchObject({ name: 'apply', state: 'succeeded' });
    const notice = result.annotations.find((a) => a.level === 'notice' && /id-token/.test(a.message));
    expect(notice?.message, describeRun(result)).toMatch(/permissions: id-token: write/);
    const provenance = JSON.parse((await fx.ledgerFile('provenance/edge-4201.json'))!);
    expect(provenance.statement.subject[0]).toMatchObject({ name: 'plan', digest: { sha256: expect.any(String) } });
    expect(provenance.attestation).toMatchObject({ outcome: 'not-attempted', reason: notice!.message });
  });

  it('with an id-token whose endpoint fails: applied, warned, and recorded as failed', async () => {
    const env = {
      ACTIONS_ID_TOKEN_REQUEST_URL: `http://127.0.0.1:${await closedPort()}/token?api-version=2.0`,
      ACTIONS_ID_TOKEN_REQUEST_TOKEN: 'id-token-request-token',
    };
    const result = await fx.run('provision', { runId: 4202, with: { ...planInputs(), attest: 'true' }, env });
    const record = JSON.parse((await fx.ledgerFile('workflows/edge-4202.json'))!);
    expect(record.steps[0], describeRun(result)).toMatchObject({ name: 'apply', state: 'succeeded' });
    const warning = result.annotations.find((a) => a.level === 'warning' && /not attested/.test(a.message));
    expect(warning, describeRun(result)).toBeDefined();
    const provenance = JSON.parse((await fx.ledgerFile('provenance/edge-4202.json'))!);
    expect(provenance.attestation).toMatchObject({ outcome: 'failed' });
  });

  it('with an id-token: the bundled attest() signs the statement with its subject and stores the bundle', async () => {
    const dir = join(fx.dir, 'sigstore');
    await mkdir(dir);
    const sigstore = await SigstoreDouble.start(fx.double.url.replace('127.0.0.1', HOSTNAME), dir);
    try {
      const runId = 4203;
      const workflowRef = `${REPOSITORY}/.github/workflows/provision.yml@refs/heads/main`;
      const push = events.push(REPOSITORY, 'alice');
      // Not public: @actions/attest signs with GitHub's Sigstore instance, not the public-good one.
      const repository = { ...(push.payload.repository as object), private: true, visibility: 'private' };
      const idToken = sigstore.idTokenEnv({
        repository: REPOSITORY,
        ref: 'refs/heads/main',
        sha: '0123456789abcdef0123456789abcdef01234567',
        workflowRef,
        runId,
        runAttempt: 1,
        eventName: 'push',
        actor: 'alice',
      });
      const result = await fx.run('provision', {
        runId,
        with: { ...planInputs(), attest: 'true' },
        event: { ...push, payload: { ...push.payload, repository } },
        loopbackHostname: HOSTNAME,
        hosts: sigstore.hosts,
        env: { ...idToken, NODE_EXTRA_CA_CERTS: sigstore.tlsCaPath },
      });
      const record = JSON.parse((await fx.ledgerFile(`workflows/edge-${runId}.json`))!);
      expect(record.steps[0], describeRun(result)).toMatchObject({ name: 'apply', state: 'succeeded' });
      expect(sigstore.violations).toEqual([]);
      expect(fx.double.violations).toEqual([]);

      // One bundle stored; the id GitHub answered is named in the log and recorded with the provenance.
      expect(fx.double.state.attestations, describeRun(result)).toHaveLength(1);
      const [stored] = fx.double.state.attestations;
      const provenance = JSON.parse((await fx.ledgerFile(`provenance/edge-${runId}.json`))!);
      expect(provenance.attestation).toMatchObject({ outcome: 'attested', id: String(stored!.id) });
      expect(result.log).toContain(`provenance attested (attestation ${stored!.id})`);

      // What was signed is the in-toto statement of the ledger's subject: plan digest, state serial/lineage.
      const bundle = stored!.bundle as unknown as SigstoreBundle;
      const envelope = bundle.dsseEnvelope;
      const payload = Buffer.from(envelope.payload, 'base64');
      const statement = JSON.parse(payload.toString('utf8'));
      expect(statement._type).toBe('https://in-toto.io/Statement/v1');
      expect(statement.subject).toEqual(provenance.statement.subject);
      expect(statement.subject.map((s: { name: string }) => s.name)).toEqual(['plan', 'state']);
      expect(statement.subject[1].annotations).toMatchObject({
        lineage: expect.any(String),
        serial: expect.any(Number),
      });
      expect(statement.predicateType).toBe('https://slsa.dev/provenance/v1');

      // The signature holds for the certificate Fulcio issued to this workflow, chained to the double's root.
      const certificate = new X509Certificate(Buffer.from(bundle.verificationMaterial.certificate.rawBytes, 'base64'));
      expect(certificate.verify((await sigstore.fulcioRoot()).publicKey)).toBe(true);
      expect(certificate.subjectAltName).toBe(`URI:${fx.double.url.replace('127.0.0.1', HOSTNAME)}/${workflowRef}`);
      expect(sigstore.issued.map((issued) => issued.claims.job_workflow_ref)).toEqual([workflowRef]);
      const signed = dssePreAuthEncoding(envelope.payloadType, payload);
      const signature = Buffer.from(envelope.signatures[0]!.sig, 'base64');
      expect(verify('sha256', signed, certificate.publicKey, signature)).toBe(true);
      expect(bundle.verificationMaterial.timestampVerificationData.rfc3161Timestamps).toHaveLength(1);
      expect(sigstore.timestamps).toBe(1);
    } finally {
      await sigstore.close();
    }
  });
});

/** The parts of a Sigstore bundle v0.3 (DSSE) the test reads. */
interface SigstoreBundle {
  dsseEnvelope: { payload: string; payloadType: string; signatures: Array<{ sig: string }> };
  verificationMaterial: {
    certificate: { rawBytes: string };
    timestampVerificationData: { rfc3161Timestamps: Array<{ signedTimestamp: string }> };
  };
}

/** DSSE's PAE: what a DSSE signature covers (https://github.com/secure-systems-lab/dsse/blob/master/protocol.md). */
function dssePreAuthEncoding(payloadType: string, payload: Buffer): Buffer {
  const type = Buffer.from(payloadType);
  return Buffer.concat([Buffer.from(`DSSEv1 ${type.length} `), type, Buffer.from(` ${payload.length} `), payload]);
}
