/**
 * A loopback stand-in for the runner's results service as @actions/artifact
 * calls it: the Twirp JSON endpoints of
 * `github.actions.results.api.v1.ArtifactService` (CreateArtifact,
 * FinalizeArtifact, ListArtifacts, GetSignedArtifactURL) and the blob storage
 * behind the signed URLs (Azure block-blob uploads: Put Block, Put Block
 * List; downloads: GET). Requests must carry the job's ACTIONS_RUNTIME_TOKEN,
 * whose `scp` claim names the run and job backend ids, as on a runner.
 * The run backend id is the run *attempt*'s: a "Re-run failed jobs" attempt
 * gets a new one, and its runtime token lists the run's artifacts but cannot
 * fetch one an earlier attempt uploaded (GetSignedArtifactURL answers 404
 * "workflow run not found", as GitHub does: actions/download-artifact#486).
 * Every Twirp request is checked for the fields the service requires;
 * problems are collected in `violations`. Other runs and attempts reach an
 * artifact through the REST API instead, which is run-scoped: the GitHub
 * double lists a run's artifacts of every attempt (`artifactsOfRun`) and
 * redirects downloads to the same blob URLs (`downloadUrl`).
 *
 * The same service (ACTIONS_RESULTS_URL) answers @actions/cache when
 * ACTIONS_CACHE_SERVICE_V2 is set: `github.actions.results.api.v1.CacheService`
 * (CreateCacheEntry, FinalizeCacheEntryUpload, GetCacheEntryDownloadURL), with
 * entries keyed by (key, version) — version being the client's hash of the
 * paths and compression — and uploads as Azure Put Blob. Entries are shared by
 * every run of the repository (one ref here: scopes are not modelled).
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

const SERVICE = '/twirp/github.actions.results.api.v1.ArtifactService/';
const CACHE_SERVICE = '/twirp/github.actions.results.api.v1.CacheService/';

export interface StoredArtifact {
  id: number;
  /** The workflow run the artifact belongs to (GITHUB_RUN_ID of the uploading job). */
  runId: number;
  runBackendId: string;
  jobBackendId: string;
  name: string;
  /** As CreateArtifact declared it: `application/zip` for an archive, the file's type for an unarchived upload. */
  mimeType: string;
  /** `sha256:<hex>` as FinalizeArtifact reported it. */
  digest: string | undefined;
  finalized: boolean;
  /** The committed blob. */
  content: Buffer;
  createdAt: string;
}

export interface CacheEntry {
  id: number;
  key: string;
  version: string;
  finalized: boolean;
  /** The uploaded archive (a tar, compressed as the client chose). */
  content: Buffer;
  createdAt: string;
}

/** What blob storage holds behind one signed URL. */
interface BlobTarget {
  content: Buffer;
  contentType: string;
  fileName: string | undefined;
}

export class ResultsDouble {
  readonly artifacts: StoredArtifact[] = [];
  readonly cacheEntries: CacheEntry[] = [];
  readonly violations: string[] = [];
  readonly calls: string[] = [];
  private readonly server: Server;
  private readonly blocks = new Map<string, Map<string, Buffer>>();
  private readonly tokens = new Map<string, { runId: number; run: string; job: string }>();
  private lastId = 700;
  private baseUrl = '';

  private constructor() {
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
    const double = new ResultsDouble();
    await new Promise<void>((resolve) => double.server.listen(0, '127.0.0.1', () => resolve()));
    double.baseUrl = `http://${hostname}:${(double.server.address() as AddressInfo).port}`;
    return double;
  }

  /** ACTIONS_RESULTS_URL */
  get url(): string {
    return `${this.baseUrl}/`;
  }

  /** An ACTIONS_RUNTIME_TOKEN for one job of one run attempt (an unsigned JWT with the runner's `scp` claim shape). */
  runtimeToken(runId: number, job: string, attempt = 1): string {
    const run = `run-${runId}-attempt-${attempt}`;
    const jobId = `job-${runId}-${attempt}-${job}`;
    const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const token = `${encode({ alg: 'none', typ: 'JWT' })}.${encode({ scp: `Actions.GenericRead:00000000 Actions.Results:${run}:${jobId}`, exp: 4102444800 })}.`;
    this.tokens.set(token, { runId, run, job: jobId });
    return token;
  }

  /** Replaces the content of the newest artifact called `name` (what a hostile or buggy job could do). */
  replace(name: string, content: Buffer): void {
    const artifact = this.newest(name);
    if (!artifact) throw new Error(`no artifact ${name}`);
    artifact.content = content;
  }

  /** The finalized artifacts of one run (what the REST API lists for it). */
  artifactsOfRun(runId: number): StoredArtifact[] {
    return this.artifacts.filter((a) => a.runId === runId && a.finalized);
  }

  artifactById(id: number): StoredArtifact | undefined {
    return this.artifacts.find((a) => a.id === id && a.finalized);
  }

  /** A short-lived signed URL for an artifact's blob, as the REST API redirects to for a download. */
  downloadUrl(artifact: StoredArtifact): string {
    return this.signedUrl(artifact);
  }

  /** Removes every artifact called `name` (expired or deleted). */
  remove(name: string): void {
    for (let i = this.artifacts.length - 1; i >= 0; i--)
      if (this.artifacts[i]?.name === name) this.artifacts.splice(i, 1);
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
    if (url.pathname.startsWith('/blob/') || url.pathname.startsWith('/cache-blob/'))
      return this.blob(request, url, body, response);
    if (request.method === 'POST' && url.pathname.startsWith(CACHE_SERVICE))
      return this.cacheService(request, url.pathname.slice(CACHE_SERVICE.length), body, response);
    if (request.method !== 'POST' || !url.pathname.startsWith(SERVICE)) {
      this.violations.push(`unexpected ${request.method} ${url.pathname}`);
      return json(response, 404, { code: 'bad_route', msg: 'no such method' });
    }
    const method = url.pathname.slice(SERVICE.length);
    this.calls.push(method);
    const scope = this.authorize(request, response);
    if (!scope) return;
    if (!String(request.headers['content-type']).startsWith('application/json'))
      this.violations.push(`${method}: content type ${request.headers['content-type']}`);
    const message = JSON.parse(body.toString('utf8')) as Record<string, unknown>;
    // GetSignedArtifactURL names the attempt and job that uploaded the artifact (from ListArtifacts): it is judged below.
    if (
      method !== 'GetSignedArtifactURL' &&
      (message.workflow_run_backend_id !== scope.run || message.workflow_job_run_backend_id !== scope.job)
    ) {
      this.violations.push(
        `${method}: backend ids ${String(message.workflow_run_backend_id)}/${String(message.workflow_job_run_backend_id)} do not match the token`,
      );
    }
    switch (method) {
      case 'CreateArtifact': {
        if (typeof message.name !== 'string' || message.version !== 7)
          this.violations.push(`CreateArtifact: name/version ${JSON.stringify(message)}`);
        // A name is unique in the run, across its attempts: a re-run uploading it again gets the service's 409.
        if (this.artifacts.some((a) => a.runId === scope.runId && a.name === message.name))
          return json(response, 409, {
            code: 'already_exists',
            msg: 'an artifact with this name already exists on the workflow run',
          });
        const artifact: StoredArtifact = {
          id: ++this.lastId,
          runId: scope.runId,
          runBackendId: scope.run,
          jobBackendId: scope.job,
          name: String(message.name),
          mimeType: typeof message.mime_type === 'string' ? message.mime_type : 'application/zip',
          digest: undefined,
          finalized: false,
          content: Buffer.alloc(0),
          createdAt: new Date().toISOString(),
        };
        this.artifacts.push(artifact);
        return json(response, 200, { ok: true, signed_upload_url: this.signedUrl(artifact) });
      }
      case 'FinalizeArtifact': {
        const artifact = this.artifacts.find(
          (a) => a.runBackendId === scope.run && a.name === message.name && !a.finalized,
        );
        if (!artifact) return json(response, 404, { code: 'not_found', msg: 'no artifact to finalize' });
        if (String(message.size) !== String(artifact.content.length))
          this.violations.push(
            `FinalizeArtifact: size ${String(message.size)} but ${artifact.content.length} bytes uploaded`,
          );
        artifact.digest = typeof message.hash === 'string' ? message.hash : undefined;
        artifact.finalized = true;
        return json(response, 200, { ok: true, artifact_id: String(artifact.id) });
      }
      case 'ListArtifacts': {
        const name = message.name_filter as string | undefined;
        const id = message.id_filter as string | undefined;
        // Listed for the whole run, earlier attempts included; only fetching is held to the attempt.
        const found = this.artifacts.filter(
          (a) =>
            a.runId === scope.runId &&
            a.finalized &&
            (name === undefined || a.name === name) &&
            (id === undefined || String(a.id) === id),
        );
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
        // Another attempt's artifact (its backend ids came from ListArtifacts) is out of this token's reach.
        if (message.workflow_run_backend_id !== scope.run)
          return json(response, 404, { code: 'not_found', msg: 'workflow run not found' });
        const artifact = this.artifacts
          .filter((a) => a.runBackendId === scope.run && a.name === message.name && a.finalized)
          .sort((a, b) => b.id - a.id)[0];
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

  /** The runtime token's scope, or undefined after answering 401. */
  private authorize(
    request: IncomingMessage,
    response: ServerResponse,
  ): { runId: number; run: string; job: string } | undefined {
    const token = /^Bearer (\S+)$/.exec(request.headers.authorization ?? '')?.[1];
    const scope = token === undefined ? undefined : this.tokens.get(token);
    if (!scope) json(response, 401, { code: 'unauthenticated', msg: 'invalid runtime token' });
    return scope;
  }

  private cacheService(request: IncomingMessage, method: string, body: Buffer, response: ServerResponse): void {
    this.calls.push(method);
    if (!this.authorize(request, response)) return;
    if (!String(request.headers['content-type']).startsWith('application/json'))
      this.violations.push(`${method}: content type ${request.headers['content-type']}`);
    const message = JSON.parse(body.toString('utf8')) as Record<string, unknown>;
    const key = message.key;
    const version = message.version;
    if (
      typeof key !== 'string' ||
      key.length === 0 ||
      key.length > 512 ||
      key.includes(',') ||
      typeof version !== 'string' ||
      !/^[0-9a-f]{64}$/.test(version)
    ) {
      this.violations.push(`${method}: key/version ${JSON.stringify({ key, version })}`);
      return json(response, 400, { code: 'invalid_argument', msg: 'key and version are required' });
    }
    switch (method) {
      case 'CreateCacheEntry': {
        if (this.cacheEntries.some((e) => e.key === key && e.version === version)) {
          return json(response, 409, {
            code: 'already_exists',
            msg: 'cache entry with the same key, version, and scope already exists',
          });
        }
        const entry: CacheEntry = {
          id: ++this.lastId,
          key,
          version,
          finalized: false,
          content: Buffer.alloc(0),
          createdAt: new Date().toISOString(),
        };
        this.cacheEntries.push(entry);
        return json(response, 200, { ok: true, signed_upload_url: this.cacheUrl(entry) });
      }
      case 'FinalizeCacheEntryUpload': {
        const entry = this.cacheEntries.find((e) => e.key === key && e.version === version && !e.finalized);
        if (!entry) return json(response, 404, { code: 'not_found', msg: 'no cache entry to finalize' });
        if (String(message.size_bytes) !== String(entry.content.length)) {
          this.violations.push(
            `FinalizeCacheEntryUpload: size ${String(message.size_bytes)} but ${entry.content.length} bytes uploaded`,
          );
        }
        entry.finalized = true;
        return json(response, 200, { ok: true, entry_id: String(entry.id) });
      }
      case 'GetCacheEntryDownloadURL': {
        const restoreKeys = Array.isArray(message.restore_keys) ? message.restore_keys.map(String) : [];
        const entry = this.findCacheEntry(key, restoreKeys, version);
        if (!entry) return json(response, 200, { ok: false, signed_download_url: '', matched_key: '' });
        return json(response, 200, { ok: true, signed_download_url: this.cacheUrl(entry), matched_key: entry.key });
      }
      default:
        this.violations.push(`unexpected method ${method}`);
        return json(response, 404, { code: 'bad_route', msg: `no method ${method}` });
    }
  }

  /** The primary key exactly, else each restore key as a prefix, newest entry first; always within the version. */
  private findCacheEntry(key: string, restoreKeys: string[], version: string): CacheEntry | undefined {
    const candidates = this.cacheEntries
      .filter((e) => e.finalized && e.version === version)
      .sort((a, b) => b.id - a.id);
    return (
      candidates.find((e) => e.key === key) ??
      restoreKeys.map((prefix) => candidates.find((e) => e.key.startsWith(prefix))).find((e) => e !== undefined)
    );
  }

  private cacheUrl(entry: CacheEntry): string {
    return `${this.baseUrl}/cache-blob/${entry.id}?sig=${randomBytes(8).toString('hex')}`;
  }

  /** The stored thing a signed URL's path names: `/blob/<artifact id>/<name>` or `/cache-blob/<entry id>`. */
  private blobTarget(url: URL): { target: BlobTarget; commit(content: Buffer): void } | undefined {
    const [, kind, id] = url.pathname.split('/');
    if (kind === 'blob') {
      const artifact = this.artifacts.find((a) => a.id === Number(id));
      if (!artifact) return undefined;
      return {
        // An unarchived upload comes back as itself, an archive as application/zip (the client unzips only that).
        target: { content: artifact.content, contentType: artifact.mimeType, fileName: artifact.name },
        commit: (content) => (artifact.content = content),
      };
    }
    const entry = this.cacheEntries.find((e) => e.id === Number(id));
    if (!entry) return undefined;
    return {
      target: { content: entry.content, contentType: 'application/octet-stream', fileName: undefined },
      commit: (content) => (entry.content = content),
    };
  }

  /**
   * Azure block blobs, as the SDK drives them: Put Blob (one shot, what small
   * cache archives use), Put Block (comp=block) and Put Block List
   * (comp=blocklist) for streamed artifact uploads, and Get Blob.
   */
  private blob(request: IncomingMessage, url: URL, body: Buffer, response: ServerResponse): void {
    const method = request.method ?? 'GET';
    const found = url.searchParams.has('sig') ? this.blobTarget(url) : undefined;
    if (!found) {
      response.writeHead(403).end();
      return;
    }
    const written = { 'x-ms-request-id': randomBytes(8).toString('hex'), 'x-ms-version': '2025-01-05' };
    const comp = url.searchParams.get('comp');
    if (method === 'PUT' && comp === null) {
      if (request.headers['x-ms-blob-type'] !== 'BlockBlob')
        this.violations.push(
          `Put Blob without x-ms-blob-type: BlockBlob (${String(request.headers['x-ms-blob-type'])})`,
        );
      found.commit(body);
      response
        .writeHead(201, { ...written, etag: `"${url.pathname}"`, 'last-modified': new Date().toUTCString() })
        .end();
      return;
    }
    if (method === 'PUT' && comp === 'block') {
      const blocks = this.blocks.get(url.pathname) ?? new Map<string, Buffer>();
      blocks.set(url.searchParams.get('blockid') ?? '', body);
      this.blocks.set(url.pathname, blocks);
      response.writeHead(201, written).end();
      return;
    }
    if (method === 'PUT' && comp === 'blocklist') {
      const ids = [...body.toString('utf8').matchAll(/<(?:Latest|Uncommitted|Committed)>([^<]+)<\//g)].map(
        (m) => m[1] ?? '',
      );
      const blocks = this.blocks.get(url.pathname) ?? new Map<string, Buffer>();
      const missing = ids.filter((block) => !blocks.has(block));
      if (missing.length > 0) this.violations.push(`Put Block List names unknown blocks ${missing.join(', ')}`);
      found.commit(Buffer.concat(ids.map((block) => blocks.get(block) ?? Buffer.alloc(0))));
      response.writeHead(201, { ...written, etag: `"${url.pathname}"` }).end();
      return;
    }
    if (method === 'GET' && comp === null) {
      const { content, contentType, fileName } = found.target;
      response
        .writeHead(200, {
          'content-type': contentType,
          'content-length': String(content.length),
          ...(fileName
            ? {
                'content-disposition': `attachment; filename="${fileName}"; filename*=UTF-8''${encodeURIComponent(fileName)}`,
              }
            : {}),
        })
        .end(content);
      return;
    }
    this.violations.push(`unexpected blob request ${method} ${url.search}`);
    response.writeHead(400).end();
  }
}

/** A request's whole body. */
export function readBody(request: IncomingMessage): Promise<Buffer> {
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
