import { spawn } from 'node:child_process';
import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * Git's smart HTTP protocol the way GitHub serves it to a workflow: bare
 * repositories under `projectRoot` as `<owner>/<repo>.git`, served by the real
 * `git http-backend` (CGI). Every request must carry
 * `Authorization: Basic base64(x-access-token:TOKEN)` — what actions/checkout
 * sends through `http.extraheader` — and pushing (`git-receive-pack`) needs a
 * token with `contents: write`, refused with 403 otherwise, as GitHub does.
 */

export type ContentsAccess = 'none' | 'read' | 'write';

/** Who a token is and what it may do to a repository; `unknown-token` (401) or `hidden` (404, the token may not see it) otherwise. */
export type GitAuthorizer = (
  token: string,
  repository: string,
) => { login: string; contents: ContentsAccess } | 'unknown-token' | 'hidden';

export interface GitHttpRequest {
  /** `owner/repo` (without `.git`). */
  repository: string;
  service: 'git-upload-pack' | 'git-receive-pack';
  /** `advertise` is GET info/refs; `rpc` is the POST that fetches or pushes. */
  phase: 'advertise' | 'rpc';
  login: string | undefined;
  status: number;
}

export interface GitHttpHandler {
  /** True when the path is a smart-HTTP request for `/<owner>/<repo>.git/…`. */
  handles(pathname: string): boolean;
  handle(request: IncomingMessage, response: ServerResponse, url: URL): Promise<void>;
  /** Every git request answered, in order. */
  readonly requests: GitHttpRequest[];
}

const GIT_PATH = /^\/([^/]+)\/([^/]+)\.git\/(info\/refs|git-upload-pack|git-receive-pack)$/;

export function createGitHttpHandler(options: { projectRoot: string; authorize: GitAuthorizer }): GitHttpHandler {
  const requests: GitHttpRequest[] = [];

  const handle = async (request: IncomingMessage, response: ServerResponse, url: URL): Promise<void> => {
    const match = GIT_PATH.exec(url.pathname);
    const [, owner = '', name = '', endpoint = ''] = match ?? [];
    const repository = `${owner}/${name}`;
    const advertise = endpoint === 'info/refs';
    const service = advertise ? url.searchParams.get('service') : endpoint;
    const record = (status: number, login?: string): void => {
      if (service === 'git-upload-pack' || service === 'git-receive-pack') {
        requests.push({ repository, service, phase: advertise ? 'advertise' : 'rpc', login, status });
      }
    };
    const refuse = (status: number, message: string, login?: string): void => {
      record(status, login);
      // Git shows a text/plain body to the user as "remote: …".
      const headers: Record<string, string> = { 'content-type': 'text/plain; charset=utf-8' };
      if (status === 401) headers['www-authenticate'] = 'Basic realm="GitHub"';
      request.resume();
      response.writeHead(status, headers).end(`${message}\n`);
    };

    if (service !== 'git-upload-pack' && service !== 'git-receive-pack') {
      return refuse(403, 'Only the smart HTTP protocol is served.');
    }
    const token = basicPassword(request.headers.authorization);
    const grant = token === undefined ? 'unknown-token' : options.authorize(token, repository);
    if (grant === 'unknown-token')
      return refuse(401, 'Invalid username or token. Password authentication is not supported for Git operations.');
    if (grant === 'hidden') return refuse(404, 'Repository not found.');
    const needed: ContentsAccess = service === 'git-receive-pack' ? 'write' : 'read';
    if (!allows(grant.contents, needed)) {
      return refuse(403, `Permission to ${repository}.git denied to ${grant.login}.`, grant.login);
    }
    const status = await runBackend(options.projectRoot, request, response, url, grant.login);
    record(status, grant.login);
  };

  return { handles: (pathname) => GIT_PATH.test(pathname), handle, requests };
}

function allows(granted: ContentsAccess, needed: ContentsAccess): boolean {
  const rank: Record<ContentsAccess, number> = { none: 0, read: 1, write: 2 };
  return rank[granted] >= rank[needed];
}

/** The password of a Basic authorization header (the token; the user name is not checked, as on GitHub). */
function basicPassword(header: string | undefined): string | undefined {
  const match = /^basic\s+(\S+)$/i.exec(header ?? '');
  if (!match?.[1]) return undefined;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 || colon === decoded.length - 1 ? undefined : decoded.slice(colon + 1);
}

/**
 * Runs `git http-backend` for one request and relays its CGI answer; resolves
 * with the HTTP status sent. Spawned directly rather than with runProcess: the
 * request and the packfile in the answer are binary streams.
 */
function runBackend(
  projectRoot: string,
  request: IncomingMessage,
  response: ServerResponse,
  url: URL,
  login: string,
): Promise<number> {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    GIT_PROJECT_ROOT: projectRoot,
    GIT_HTTP_EXPORT_ALL: '1',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    PATH_INFO: url.pathname,
    QUERY_STRING: url.search.replace(/^\?/, ''),
    REQUEST_METHOD: request.method ?? 'GET',
    // A REMOTE_USER enables receive-pack in http-backend; authorization happened above.
    REMOTE_USER: login,
    REMOTE_ADDR: request.socket.remoteAddress ?? '127.0.0.1',
  };
  const header = (name: string): string | undefined => {
    const value = request.headers[name];
    return Array.isArray(value) ? value[0] : value;
  };
  const copies: Array<[string, string]> = [
    ['content-type', 'CONTENT_TYPE'],
    ['content-length', 'CONTENT_LENGTH'],
    ['content-encoding', 'HTTP_CONTENT_ENCODING'],
    ['git-protocol', 'GIT_PROTOCOL'],
  ];
  for (const [name, variable] of copies) {
    const value = header(name);
    if (value !== undefined) env[variable] = value;
  }

  return new Promise((resolve) => {
    const child = spawn('git', ['http-backend'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    const stderr: Buffer[] = [];
    let head = Buffer.alloc(0);
    let status = 0;
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
    child.stdout.on('data', (chunk: Buffer) => {
      if (status !== 0) {
        response.write(chunk);
        return;
      }
      head = Buffer.concat([head, chunk]);
      const end = headerEnd(head);
      if (end === undefined) return;
      status = writeCgiHead(response, head.subarray(0, end.start).toString('latin1'));
      response.write(head.subarray(end.bodyStart));
    });
    child.on('error', (error) => {
      if (!response.headersSent) response.writeHead(500, { 'content-type': 'text/plain' });
      response.end(`git http-backend could not start: ${error.message}\n`);
      resolve(500);
    });
    child.on('close', (code) => {
      if (status === 0) {
        status = 500;
        response.writeHead(500, { 'content-type': 'text/plain' });
        response.write(`git http-backend exited ${code}: ${Buffer.concat(stderr).toString('utf8')}\n`);
      }
      response.end();
      resolve(status);
    });
    child.stdin.on('error', () => {
      /* the backend may answer (e.g. with an error) before reading the whole request */
    });
    request.pipe(child.stdin);
  });
}

function headerEnd(buffer: Buffer): { start: number; bodyStart: number } | undefined {
  const crlf = buffer.indexOf('\r\n\r\n');
  const lf = buffer.indexOf('\n\n');
  if (crlf >= 0 && (lf < 0 || crlf < lf)) return { start: crlf, bodyStart: crlf + 4 };
  if (lf >= 0) return { start: lf, bodyStart: lf + 2 };
  return undefined;
}

/** Sends the CGI header block as the HTTP head; returns the status. */
function writeCgiHead(response: ServerResponse, block: string): number {
  let status = 200;
  const headers: Record<string, string> = {};
  for (const line of block.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim();
    const value = line.slice(colon + 1).trim();
    if (name.toLowerCase() === 'status') status = Number.parseInt(value, 10) || 500;
    else headers[name] = value;
  }
  response.writeHead(status, headers);
  return status;
}
