/**
 * A loopback stand-in for the runner's results service as @actions/artifact
 * calls it: the Twirp JSON endpoints of
 * `github.actions.results.api.v1.ArtifactService` (CreateArtifact,
 * FinalizeArtifact, ListArtifacts, GetSignedArtifactURL) and the blob storage
 * behind the signed URLs (Azure block-blob uploads: Put Block, Put Block
 * List; downloads: GET). Requests must carry the job's ACTIONS_RUNTIME_TOKEN,
 * whose `scp` claim names the run and job backend ids, as on a runner;
 * artifacts are scoped to the run. Every Twirp request is checked for the
 * fields the service requires; problems are collected in `violations`.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

const SERVICE = '/twirp/github.actions.results.api.v1.ArtifactService/';

export interface StoredArtifact {
  id: number;
  runBackendId: string;
  jobBackendId: string;
  name: string;
  finalized: boolean;
  /** The committed blob. */
  content: Buffer;
  createdAt: string;
}

export class ResultsDouble {
  readonly artifacts: StoredArtifact[] = [];
  readonly violations: string[] = [];
  readonly calls: string[] = [];
  private readonly server: Server;
  private readonly blocks = new Map<string, Map<string, Buffer>>();
  private readonly tokens = new Map<string, { run: string; job: string }>();
  private lastId = 700;
  private baseUrl = '';

  private constructor(private readonly hostname: string) {
    this.server = createServer((request, response) => {
      this.serve(request, response).catch((error: unknown) => {
        this.violations.push(`the double failed: ${String(error)}`);
        if (!response.headersSent) response.writeHead(500);
        response.end();
      });
    });
  }

  /** Listens on 127.0.0.1; URLs it hands out use `hostname` (which must resolve to it). */
  static async start(hostname = '127.0.0.1'): Promise<ResultsDouble> {
    const double = new ResultsDouble(hostname);
    await new Promise<void>((resolve) => double.server.listen(0, '127.0.0.1', () => resolve()));
    double.baseUrl = `http://${hostname}:${(double.server.address() as AddressInfo).port}`;
    return double;
  }

  /** ACTIONS_RESULTS_URL */
  get url(): string {
    return `${this.baseUrl}/`;
  }

  /** An ACTIONS_RUNTIME_TOKEN for one job of one run (an unsigned JWT with the runner's `scp` claim shape). */
  runtimeToken(runId: number, job: string): string {
    const run = `run-${runId}`;
    const jobId = `job-${runId}-${job}`;
    const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const token = `${encode({ alg: 'none', typ: 'JWT' })}.${encode({ scp: `Actions.GenericRead:00000000 Actions.Results:${run}:${jobId}`, exp: 4102444800 })}.`;
    this.tokens.set(token, { run, job: jobId });
    return token;
  }

  /** Replaces the content of the newest artifact called `name` (what a hostile or buggy job could do). */
  replace(name: string, content: Buffer): void {
    const artifact = this.newest(name);
    if (!artifact) throw new Error(`no artifact ${name}`);
    artifact.content = content;
  }

  newest(name: string): StoredArtifact | undefined {
    return this.artifacts.filter((a) => a.name === name && a.finalized).sort((a, b) => b.id - a.id)[0];
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', this.baseUrl);
    const body = await readBody(request);
    if (url.pathname.startsWith('/blob/')) return this.blob(request.method ?? 'GET', url, body, response);
    if (request.method !== 'POST' || !url.pathname.startsWith(SERVICE)) {
      this.violations.push(`unexpected ${request.method} ${url.pathname}`);
      return json(response, 404, { code: 'bad_route', msg: 'no such method' });
    }
    const method = url.pathname.slice(SERVICE.length);
    this.calls.push(method);
    const token = /^Bearer (\S+)$/.exec(request.headers.authorization ?? '')?.[1];
    const scope = token === undefined ? undefined : this.tokens.get(token);
    if (!scope) return json(response, 401, { code: 'unauthenticated', msg: 'invalid runtime token' });
    if (!String(request.headers['content-type']).startsWith('application/json')) this.violations.push(`${method}: content type ${request.headers['content-type']}`);
    const message = JSON.parse(body.toString('utf8')) as Record<string, unknown>;
    // GetSignedArtifactURL names the job that uploaded the artifact (from ListArtifacts); the run must still be the token's.
    const jobMatches = method === 'GetSignedArtifactURL' || message.workflow_job_run_backend_id === scope.job;
    if (message.workflow_run_backend_id !== scope.run || !jobMatches) {
      this.violations.push(`${method}: backend ids ${String(message.workflow_run_backend_id)}/${String(message.workflow_job_run_backend_id)} do not match the token`);
    }
    switch (method) {
      case 'CreateArtifact': {
        if (typeof message.name !== 'string' || message.version !== 7) this.violations.push(`CreateArtifact: name/version ${JSON.stringify(message)}`);
        const artifact: StoredArtifact = { id: ++this.lastId, runBackendId: scope.run, jobBackendId: scope.job, name: String(message.name), finalized: false, content: Buffer.alloc(0), createdAt: new Date().toISOString() };
        this.artifacts.push(artifact);
        return json(response, 200, { ok: true, signed_upload_url: this.signedUrl(artifact) });
      }
      case 'FinalizeArtifact': {
        const artifact = this.artifacts.find((a) => a.runBackendId === scope.run && a.name === message.name && !a.finalized);
        if (!artifact) return json(response, 404, { code: 'not_found', msg: 'no artifact to finalize' });
        if (String(message.size) !== String(artifact.content.length)) this.violations.push(`FinalizeArtifact: size ${String(message.size)} but ${artifact.content.length} bytes uploaded`);
        artifact.finalized = true;
        return json(response, 200, { ok: true, artifact_id: String(artifact.id) });
      }
      case 'ListArtifacts': {
        const name = message.name_filter as string | undefined;
        const id = message.id_filter as string | undefined;
        const found = this.artifacts.filter((a) => a.runBackendId === scope.run && a.finalized && (name === undefined || a.name === name) && (id === undefined || String(a.id) === id));
        return json(response, 200, {
          artifacts: found.map((a) => ({
            workflow_run_backend_id: a.runBackendId,
            workflow_job_run_backend_id: a.jobBackendId,
            database_id: String(a.id),
            name: a.name,
            size: String(a.content.length),
            created_at: a.createdAt,
          })),
        });
      }
      case 'GetSignedArtifactURL': {
        const artifact = this.artifacts.filter((a) => a.runBackendId === scope.run && a.name === message.name && a.finalized).sort((a, b) => b.id - a.id)[0];
        if (!artifact) return json(response, 404, { code: 'not_found', msg: 'artifact not found' });
        return json(response, 200, { signed_url: this.signedUrl(artifact) });
      }
      default:
        this.violations.push(`unexpected method ${method}`);
        return json(response, 404, { code: 'bad_route', msg: `no method ${method}` });
    }
  }

  private signedUrl(artifact: StoredArtifact): string {
    return `${this.baseUrl}/blob/${artifact.id}/${encodeURIComponent(artifact.name)}?sig=${randomBytes(8).toString('hex')}`;
  }

  /** Azure block blobs, as the SDK drives them: Put Block (comp=block), Put Block List (comp=blocklist), Get Blob. */
  private blob(method: string, url: URL, body: Buffer, response: ServerResponse): void {
    const id = Number(url.pathname.split('/')[2]);
    const artifact = this.artifacts.find((a) => a.id === id);
    if (!artifact || !url.searchParams.has('sig')) {
      response.writeHead(403).end();
      return;
    }
    const comp = url.searchParams.get('comp');
    if (method === 'PUT' && comp === 'block') {
      const blocks = this.blocks.get(String(id)) ?? new Map<string, Buffer>();
      blocks.set(url.searchParams.get('blockid') ?? '', body);
      this.blocks.set(String(id), blocks);
      response.writeHead(201, { 'x-ms-request-id': randomBytes(8).toString('hex'), 'x-ms-version': '2025-01-05' }).end();
      return;
    }
    if (method === 'PUT' && comp === 'blocklist') {
      const ids = [...body.toString('utf8').matchAll(/<(?:Latest|Uncommitted|Committed)>([^<]+)<\//g)].map((m) => m[1] ?? '');
      const blocks = this.blocks.get(String(id)) ?? new Map<string, Buffer>();
      const missing = ids.filter((block) => !blocks.has(block));
      if (missing.length > 0) this.violations.push(`Put Block List names unknown blocks ${missing.join(', ')}`);
      artifact.content = Buffer.concat(ids.map((block) => blocks.get(block) ?? Buffer.alloc(0)));
      response.writeHead(201, { 'x-ms-request-id': randomBytes(8).toString('hex'), 'x-ms-version': '2025-01-05', etag: `"${id}"` }).end();
      return;
    }
    if (method === 'GET' && comp === null) {
      response
        .writeHead(200, {
          'content-type': 'application/octet-stream',
          'content-length': String(artifact.content.length),
          'content-disposition': `attachment; filename="${artifact.name}"; filename*=UTF-8''${encodeURIComponent(artifact.name)}`,
        })
        .end(artifact.content);
      return;
    }
    this.violations.push(`unexpected blob request ${method} ${url.search}`);
    response.writeHead(400).end();
  }
}

function readBody(request: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks)));
    request.on('error', reject);
  });
}

function json(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}
