/**
 * The Sigstore double refuses what GitHub's Sigstore instance refuses, so a
 * bundle it helped make (test/actions/provenance-action.test.ts) proves the
 * client met the contract: an id-token only for the runner's request token,
 * a certificate only for a token of its issuer with the `sigstore` audience
 * and a proof of possession over the token's subject.
 */
import { generateKeyPairSync, sign, X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SigstoreDouble } from '../support/sigstore-double.js';

const SERVER = 'http://github.localhost:8080';
const WORKFLOW_REF = 'acme/infra/.github/workflows/provision.yml@refs/heads/main';

describe('the Sigstore double', () => {
  let dir: string;
  let double: SigstoreDouble;
  let ca: Buffer;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'exocomp-sigstore-'));
    double = await SigstoreDouble.start(SERVER, dir);
    ca = await readFile(double.tlsCaPath);
  });
  afterAll(async () => {
    await double?.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** An HTTPS request as the step makes it: by name, to the address the name resolves to, trusting the double's CA. */
  function call(url: string, options: { body?: unknown; bearer?: string } = {}) {
    const target = new URL(url);
    return new Promise<{ status: number; type: string; body: Buffer }>((resolve, reject) => {
      const req = request(
        {
          host: double.address,
          servername: target.hostname,
          port: 443,
          path: `${target.pathname}${target.search}`,
          method: options.body === undefined ? 'GET' : 'POST',
          headers: {
            host: target.hostname,
            'content-type': 'application/json',
            ...(options.bearer ? { authorization: `Bearer ${options.bearer}` } : {}),
          },
          ca,
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () =>
            resolve({
              status: response.statusCode ?? 0,
              type: response.headers['content-type'] ?? '',
              body: Buffer.concat(chunks),
            }),
          );
        },
      );
      req.on('error', reject);
      req.end(options.body === undefined ? undefined : JSON.stringify(options.body));
    });
  }

  async function idToken(audience: string): Promise<string> {
    const env = double.idTokenEnv({
      repository: 'acme/infra',
      ref: 'refs/heads/main',
      sha: '0123456789abcdef0123456789abcdef01234567',
      workflowRef: WORKFLOW_REF,
      runId: 7,
      runAttempt: 1,
      eventName: 'push',
      actor: 'alice',
    });
    expect((await call(`${env.ACTIONS_ID_TOKEN_REQUEST_URL}&audience=${audience}`, { bearer: 'other' })).status).toBe(
      401,
    );
    const answer = await call(`${env.ACTIONS_ID_TOKEN_REQUEST_URL}&audience=${audience}`, {
      bearer: env.ACTIONS_ID_TOKEN_REQUEST_TOKEN,
    });
    expect(answer.status).toBe(200);
    return (JSON.parse(answer.body.toString('utf8')) as { value: string }).value;
  }

  function signingCert(token: string, subject: string) {
    const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const content = publicKey.export({ format: 'pem', type: 'spki' }).toString();
    const proofOfPossession = sign('sha256', Buffer.from(subject), privateKey).toString('base64');
    const body = {
      credentials: { oidcIdentityToken: token },
      publicKeyRequest: { publicKey: { algorithm: 'ECDSA', content }, proofOfPossession },
    };
    return { content, answer: call('https://fulcio.github.localhost/api/v2/signingCert', { body }) };
  }

  it('issues a certificate for the job that ran, and refuses a wrong audience or proof of possession', async () => {
    const subject = 'repo:acme/infra:ref:refs/heads/main';
    const token = await idToken('sigstore');
    const made = signingCert(token, subject);
    const answer = await made.answer;
    expect(answer.status).toBe(200);
    const chain = JSON.parse(answer.body.toString('utf8')).signedCertificateEmbeddedSct.chain.certificates as string[];
    const certificate = new X509Certificate(chain[0]!);
    expect(certificate.publicKey.export({ format: 'pem', type: 'spki' }).toString()).toBe(made.content);
    expect(certificate.subjectAltName).toBe(`URI:${SERVER}/${WORKFLOW_REF}`);
    expect(certificate.verify((await double.fulcioRoot()).publicKey)).toBe(true);

    expect((await signingCert(token, 'repo:acme/other:ref:refs/heads/main').answer).status).toBe(400);
    expect((await signingCert(await idToken('nobody'), subject).answer).status).toBe(401);
    expect(double.violations).toEqual([
      expect.stringContaining('not one the runner gave'),
      expect.stringContaining('proof of possession'),
      expect.stringContaining('not one the runner gave'),
      expect.stringContaining('audience sigstore'),
    ]);
  });

  it('answers a timestamp request with an RFC 3161 reply', async () => {
    const answer = await call('https://timestamp.github.localhost/api/v1/timestamp', {
      body: { artifactHash: Buffer.alloc(32, 7).toString('base64'), hashAlgorithm: 'sha256' },
    });
    expect(answer.status).toBe(200);
    expect(answer.type).toBe('application/timestamp-reply');
    // TimeStampResp ::= SEQUENCE { status PKIStatusInfo (granted: 0), timeStampToken }
    expect(answer.body[0]).toBe(0x30);
  });
});
