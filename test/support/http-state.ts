/**
 * A loopback server for OpenTofu's `http` state backend (GET the state, 404
 * when there is none; POST a new state), what GitLab-managed state or any
 * state service answers. It lets a test's workspace keep its state off the
 * runner, as docs/state.md asks in CI, with the tofu stand-in. With
 * `lock_address`/`unlock_address` set (backendBlock does), the backend locks
 * as terraform's http client expects: LOCK with the lock info as body, 200 when
 * taken, 423 with the holder's lock info as body when held; UNLOCK with the
 * holder's lock info, or an empty body (force-unlock), 200.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export class HttpStateServer {
  private constructor(
    private readonly server: Server,
    readonly url: string,
    /** path → the state's JSON text. */
    readonly states: Map<string, string>,
    /** path → the lock info (JSON text) of the lock held on it. */
    readonly locks: Map<string, string>,
  ) {}

  static async start(): Promise<HttpStateServer> {
    const states = new Map<string, string>();
    const locks = new Map<string, string>();
    const server = createServer((request, response) => {
      const path = new URL(request.url ?? '/', 'http://state').pathname;
      if (request.method === 'LOCK' || request.method === 'UNLOCK') {
        let body = '';
        request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
        request.on('end', () => {
          const held = locks.get(path);
          if (request.method === 'LOCK') {
            if (held !== undefined) return response.writeHead(423, { 'content-type': 'application/json' }).end(held);
            locks.set(path, body);
          } else {
            const id = body === '' ? undefined : (JSON.parse(body) as { ID?: string }).ID;
            if (held !== undefined && id !== undefined && id !== (JSON.parse(held) as { ID?: string }).ID)
              return response.writeHead(409, { 'content-type': 'application/json' }).end(held);
            locks.delete(path);
          }
          return response.writeHead(200).end();
        });
        return;
      }
      if (request.method === 'GET') {
        const state = states.get(path);
        response.writeHead(state === undefined ? 404 : 200, { 'content-type': 'application/json' }).end(state ?? '');
        return;
      }
      if (request.method === 'POST') {
        let body = '';
        request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
        request.on('end', () => {
          states.set(path, body);
          response.writeHead(200).end();
        });
        return;
      }
      response.writeHead(405).end();
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    return new HttpStateServer(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`, states, locks);
  }

  /**
   * The `backend "http"` block (Terraform JSON syntax) for a state at `name`; with `locking`, lock and unlock on it
   * too (the real binary; the tofu stand-in refuses lock_address rather than pretend to lock).
   */
  backendBlock(name: string, { locking = false }: { locking?: boolean } = {}): Record<string, unknown> {
    const address = `${this.url}/state/${name}`;
    const lock = locking ? { lock_address: address, unlock_address: address } : {};
    return { terraform: { backend: { http: { address, ...lock } } } };
  }

  async close(): Promise<void> {
    await new Promise<void>((done) => this.server.close(() => done()));
  }
}
