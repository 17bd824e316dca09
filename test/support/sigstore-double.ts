/**
 * A loopback stand-in for what `@actions/attest` reaches besides the REST API
 * when a job signs with GitHub's Sigstore instance (a repository that is not
 * public): the runner's OIDC token endpoint, Fulcio and the timestamp
 * authority. `@actions/attest` (lib/endpoints.js) derives the last two from
 * GITHUB_SERVER_URL: `https://fulcio.<host>` and `https://timestamp.<host>`
 * (`githubapp.com` for github.com), so they are HTTPS on port 443 under names
 * of the server's host. One TLS server answers all three names on a random
 * loopback address (port 443: the tests run as root); the step resolves the
 * names through its private /etc/hosts (ActionInvocation.hosts) and trusts
 * the double's TLS CA through NODE_EXTRA_CA_CERTS, as a runner trusts the
 * public CAs. Certificates and timestamp tokens are made with the openssl CLI
 * (no X.509 or CMS library is installed; openssl is on every runner image).
 *
 * - The id-token endpoint, as the runner hands it to a job with
 *   `permissions: id-token: write` (ACTIONS_ID_TOKEN_REQUEST_URL and _TOKEN):
 *   GET with `Authorization: Bearer <request token>` and `&audience=…`,
 *   answered `{"value": "<JWT>"}`; the JWT is RS256 with GitHub's documented
 *   claims (docs: "OpenID Connect reference"), `aud` the audience asked.
 * - Fulcio v2 `POST /api/v2/signingCert`: the OIDC token is verified against
 *   the issuer's key, `aud` must hold `sigstore`, and the proof of possession
 *   must be the request key's signature over the token's `sub`; the answer is
 *   a short-lived certificate for that key whose SAN is the URI of the
 *   workflow that ran (`<server>/<job_workflow_ref>`) and whose issuer
 *   extensions (OIDs 1.3.6.1.4.1.57264.1.1 and .1.8) name the token's issuer,
 *   chained to the double's Fulcio root. No CT log (GitHub's instance keeps
 *   none): the chain comes as `signedCertificateEmbeddedSct` without an SCT.
 * - The timestamp authority `POST /api/v1/timestamp` (sigstore's
 *   timestamp-authority JSON form): an RFC 3161 TimeStampResp over the hash
 *   given, signed by the double's TSA certificate.
 *
 * Anything else, or a request that breaks these contracts, is answered as the
 * service would and collected in `violations`.
 */
import { createPublicKey, generateKeyPairSync, randomBytes, sign, verify, X509Certificate } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { runProcess } from '../../src/adapters/process.js';
import { randomLoopbackAddress } from './addresses.js';
import { readBody } from './results-double.js';

/** What the runner knows of a job, as its id-token claims state it. */
export interface IdTokenJob {
  /** `owner/repo` */
  repository: string;
  ref: string;
  sha: string;
  /** e.g. `acme/infra/.github/workflows/provision.yml@refs/heads/main` */
  workflowRef: string;
  runId: number;
  runAttempt: number;
  eventName: string;
  actor: string;
}

/** A certificate Fulcio issued: the token's claims it was issued for, and the certificate (PEM). */
export interface IssuedCertificate {
  claims: Record<string, unknown>;
  certificate: string;
}

const ISSUER_OID_V1 = '1.3.6.1.4.1.57264.1.1';
const ISSUER_OID_V2 = '1.3.6.1.4.1.57264.1.8';
const TOKEN_PATH = '/_apis/distributedtask/hubs/Actions/plans/';

export class SigstoreDouble {
  readonly violations: string[] = [];
  readonly issued: IssuedCertificate[] = [];
  /** How many timestamps the TSA granted. */
  timestamps = 0;
  private readonly jobs = new Map<string, IdTokenJob>();
  private readonly oidcKey = generateKeyPairSync('rsa', { modulusLength: 2048 });
  private readonly kid = randomBytes(8).toString('hex');
  private server: Server | undefined;

  private constructor(
    /** GITHUB_SERVER_URL as the step sees it, e.g. `http://github.localhost:PORT`. */
    private readonly serverUrl: string,
    private readonly dir: string,
    readonly address: string,
  ) {}

  /** Starts the double for a server URL whose host is a name (not an address: `fulcio.<host>` must be a name). */
  static async start(serverUrl: string, dir: string): Promise<SigstoreDouble> {
    const double = new SigstoreDouble(serverUrl, dir, randomLoopbackAddress());
    await double.makeCertificates();
    const server = createServer(
      { key: await readFile(join(dir, 'tls.key')), cert: await readFile(join(dir, 'tls.crt')) },
      (request, response) => {
        double.serve(request, response).catch((error: unknown) => {
          double.violations.push(`the double failed on ${request.method} ${request.url}: ${String(error)}`);
          if (!response.headersSent) response.writeHead(500);
          response.end();
        });
      },
    );
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(443, double.address, () => resolve());
    });
    double.server = server;
    return double;
  }

  private get host(): string {
    return new URL(this.serverUrl).hostname;
  }

  /** The OIDC issuer of the runner's tokens (the `iss` claim), in the shape of github.com's. */
  get issuer(): string {
    return `https://token.actions.${this.host}`;
  }

  /** The names the step must resolve to the double (ActionInvocation.hosts). */
  get hosts(): Record<string, string> {
    const names = [`fulcio.${this.host}`, `timestamp.${this.host}`, `token.actions.${this.host}`];
    return Object.fromEntries(names.map((name) => [name, this.address]));
  }

  /** The TLS CA the step trusts (NODE_EXTRA_CA_CERTS). */
  get tlsCaPath(): string {
    return join(this.dir, 'tls-ca.crt');
  }

  /** The root every Fulcio certificate chains to (a verifier's trusted root). */
  async fulcioRoot(): Promise<X509Certificate> {
    return new X509Certificate(await readFile(join(this.dir, 'fulcio.crt')));
  }

  /** The environment the runner gives a job with `permissions: id-token: write`, for this job. */
  idTokenEnv(job: IdTokenJob): { ACTIONS_ID_TOKEN_REQUEST_URL: string; ACTIONS_ID_TOKEN_REQUEST_TOKEN: string } {
    const requestToken = randomBytes(24).toString('base64url');
    this.jobs.set(requestToken, job);
    const plan = randomBytes(16).toString('hex');
    return {
      ACTIONS_ID_TOKEN_REQUEST_URL: `${this.issuer}${TOKEN_PATH}${plan}/jobs/${job.runId}/idtoken?api-version=2.0`,
      ACTIONS_ID_TOKEN_REQUEST_TOKEN: requestToken,
    };
  }

  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async makeCertificates(): Promise<void> {
    const p256 = '-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1';
    const ca = '-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign';
    await this.openssl(`req -x509 ${p256} ${ca} -keyout tls-ca.key -out tls-ca.crt -subj`, '/CN=sigstore double TLS');
    await this.openssl(`req -new ${p256} -keyout tls.key -out tls.csr -subj`, '/CN=sigstore double');
    const names = Object.keys(this.hosts).map((name) => `DNS:${name}`);
    await writeFile(join(this.dir, 'tls.cnf'), `[tls]\nsubjectAltName=${names.join(',')}\n`);
    await this.openssl(
      'x509 -req -in tls.csr -CA tls-ca.crt -CAkey tls-ca.key -days 1 -extfile tls.cnf -extensions tls -out tls.crt',
    );
    await this.openssl(
      `req -x509 ${p256} ${ca} -keyout fulcio.key -out fulcio.crt -subj`,
      '/O=sigstore double/CN=fulcio',
    );
    const tsa = '-addext keyUsage=critical,digitalSignature -addext extendedKeyUsage=critical,timeStamping';
    await this.openssl(
      `req -x509 ${p256} ${tsa} -keyout tsa.key -out tsa.crt -subj`,
      '/O=sigstore double/CN=timestamp',
    );
    await writeFile(join(this.dir, 'tsa-serial'), '01\n');
    const config = {
      serial: join(this.dir, 'tsa-serial'),
      signer_digest: 'sha256',
      default_policy: '1.3.6.1.4.1.57264.2',
      digests: 'sha256',
      accuracy: 'secs:1',
      ess_cert_id_alg: 'sha256',
      ess_cert_id_chain: 'no',
      tsa_name: 'no',
    };
    const lines = Object.entries(config).map(([key, value]) => `${key} = ${value}`);
    await writeFile(join(this.dir, 'tsa.cnf'), ['[tsa]', 'default_tsa = double', '[double]', ...lines, ''].join('\n'));
  }

  /** Runs openssl in the double's directory: `command` split on spaces, then `last` (a subject) as it is. */
  private async openssl(command: string, ...last: string[]): Promise<void> {
    const args = [...command.split(' '), ...last];
    const result = await runProcess('openssl', args, { cwd: this.dir });
    if (result.code !== 0) throw new Error(`openssl ${args[0]} failed: ${result.stderr}`);
  }

  private async serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', `https://${request.headers.host ?? ''}`);
    const route = `${request.method} ${url.hostname}${url.pathname}`;
    const reply = (status: number, body: unknown, type = 'application/json'): void => {
      response.writeHead(status, { 'content-type': type });
      response.end(Buffer.isBuffer(body) ? body : JSON.stringify(body));
    };
    const refuse = (status: number, message: string): void => {
      this.violations.push(`${route}: ${message}`);
      reply(status, { code: status, message });
    };
    const body = await readBody(request);
    if (
      url.hostname === `token.actions.${this.host}` &&
      request.method === 'GET' &&
      url.pathname.startsWith(TOKEN_PATH)
    ) {
      const job = this.jobs.get(/^Bearer (\S+)$/.exec(request.headers.authorization ?? '')?.[1] ?? '');
      if (!job) return refuse(401, 'the id-token request token is not one the runner gave');
      if (url.searchParams.get('api-version') !== '2.0') return refuse(400, 'api-version=2.0 is required');
      const owner = job.repository.split('/')[0] ?? '';
      return reply(200, { value: this.idToken(job, url.searchParams.get('audience') ?? `${this.serverUrl}/${owner}`) });
    }
    if (url.hostname === `fulcio.${this.host}` && request.method === 'POST' && url.pathname === '/api/v2/signingCert') {
      const issued = await this.signingCert(JSON.parse(body.toString('utf8')) as SigningCertRequest);
      if ('refused' in issued) return refuse(issued.status, issued.refused);
      return reply(200, issued.answer);
    }
    if (
      url.hostname === `timestamp.${this.host}` &&
      request.method === 'POST' &&
      url.pathname === '/api/v1/timestamp'
    ) {
      const asked = JSON.parse(body.toString('utf8')) as {
        artifactHash?: string;
        hashAlgorithm?: string;
        certificates?: boolean;
      };
      if (asked.hashAlgorithm !== 'sha256' || !asked.artifactHash)
        return refuse(400, 'a sha256 artifactHash is required');
      return reply(
        200,
        await this.timestamp(Buffer.from(asked.artifactHash, 'base64'), asked.certificates === true),
        'application/timestamp-reply',
      );
    }
    return refuse(404, 'no such endpoint');
  }

  /** A JWT as the runner's token service signs it (RS256, GitHub's documented claims). */
  private idToken(job: IdTokenJob, audience: string): string {
    const now = Math.floor(Date.now() / 1000);
    const claims = {
      jti: randomBytes(16).toString('hex'),
      sub: `repo:${job.repository}:ref:${job.ref}`,
      aud: audience,
      ref: job.ref,
      sha: job.sha,
      repository: job.repository,
      repository_owner: job.repository.split('/')[0],
      repository_visibility: 'private',
      actor: job.actor,
      run_id: String(job.runId),
      run_number: '1',
      run_attempt: String(job.runAttempt),
      workflow_ref: job.workflowRef,
      job_workflow_ref: job.workflowRef,
      event_name: job.eventName,
      ref_type: job.ref.startsWith('refs/tags/') ? 'tag' : 'branch',
      runner_environment: 'github-hosted',
      iss: this.issuer,
      nbf: now - 5,
      iat: now,
      exp: now + 300,
    };
    const head = base64url({ alg: 'RS256', typ: 'JWT', kid: this.kid });
    const payload = base64url(claims);
    const signature = sign('sha256', Buffer.from(`${head}.${payload}`), this.oidcKey.privateKey).toString('base64url');
    return `${head}.${payload}.${signature}`;
  }

  /** Fulcio's checks, in its order: the token, the proof of possession; then the certificate. */
  private async signingCert(
    request: SigningCertRequest,
  ): Promise<{ answer: unknown } | { status: number; refused: string }> {
    const token = request.credentials?.oidcIdentityToken ?? '';
    const claims = this.verifiedClaims(token);
    if (typeof claims === 'string') return { status: 401, refused: claims };
    const key = request.publicKeyRequest;
    if (key?.publicKey?.algorithm !== 'ECDSA' || !key.publicKey.content || !key.proofOfPossession)
      return { status: 400, refused: 'an ECDSA public key and a proof of possession are required' };
    const publicKey = createPublicKey(key.publicKey.content);
    const proof = Buffer.from(key.proofOfPossession, 'base64');
    if (!verify('sha256', Buffer.from(String(claims.sub)), publicKey, proof))
      return { status: 400, refused: 'the proof of possession is not a signature of the token subject' };
    const serial = `${Date.now()}-${randomBytes(4).toString('hex')}`;
    const keyFile = `key-${serial}.pem`;
    await writeFile(join(this.dir, keyFile), publicKey.export({ format: 'pem', type: 'spki' }));
    const issuerHex = Buffer.from(this.issuer).toString('hex');
    await writeFile(
      join(this.dir, `leaf-${serial}.cnf`),
      [
        '[leaf]',
        'keyUsage=critical,digitalSignature',
        'extendedKeyUsage=codeSigning',
        `subjectAltName=critical,URI:${this.serverUrl}/${String(claims.job_workflow_ref)}`,
        // 1.1 holds the issuer's bytes as they are; 1.8 holds them DER-encoded (Fulcio's OID registry).
        `${ISSUER_OID_V1}=DER:${issuerHex}`,
        `${ISSUER_OID_V2}=ASN1:UTF8String:${this.issuer}`,
        '',
      ].join('\n'),
    );
    await this.openssl(
      `x509 -new -force_pubkey ${keyFile} -CA fulcio.crt -CAkey fulcio.key -days 1 -extfile leaf-${serial}.cnf -extensions leaf -out leaf-${serial}.crt -subj`,
      '/',
    );
    const certificate = await readFile(join(this.dir, `leaf-${serial}.crt`), 'utf8');
    this.issued.push({ claims, certificate });
    const root = await readFile(join(this.dir, 'fulcio.crt'), 'utf8');
    return { answer: { signedCertificateEmbeddedSct: { chain: { certificates: [certificate, root] } } } };
  }

  /** The token's claims when its signature, issuer, audience and lifetime hold; otherwise why not. */
  private verifiedClaims(token: string): Record<string, unknown> | string {
    const [head = '', payload = '', signature = ''] = token.split('.');
    if (
      !verify('sha256', Buffer.from(`${head}.${payload}`), this.oidcKey.publicKey, Buffer.from(signature, 'base64url'))
    )
      return 'the identity token is not signed by its issuer';
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
    if (claims.iss !== this.issuer) return `unknown issuer ${String(claims.iss)}`;
    const audience = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
    if (!audience.includes('sigstore')) return 'the identity token is not for the audience sigstore';
    if (Number(claims.exp) * 1000 < Date.now()) return 'the identity token has expired';
    return claims;
  }

  /** An RFC 3161 TimeStampResp over `digest` (SHA-256), as `openssl ts -reply` makes it. */
  private async timestamp(digest: Buffer, withCertificate: boolean): Promise<Buffer> {
    const name = `ts-${Date.now()}-${randomBytes(4).toString('hex')}`;
    const query = `ts -query -digest ${digest.toString('hex')} -sha256 -no_nonce -out ${name}.tsq`;
    await this.openssl(withCertificate ? `${query} -cert` : query);
    await this.openssl(
      `ts -reply -config tsa.cnf -queryfile ${name}.tsq -signer tsa.crt -inkey tsa.key -out ${name}.tsr`,
    );
    this.timestamps += 1;
    return readFile(join(this.dir, `${name}.tsr`));
  }
}

interface SigningCertRequest {
  credentials?: { oidcIdentityToken?: string };
  publicKeyRequest?: { publicKey?: { algorithm?: string; content?: string }; proofOfPossession?: string };
}

function base64url(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}
