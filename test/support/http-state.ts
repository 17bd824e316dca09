/**
 * A loopback server for OpenTofu's `http` state backend (GET the state, 404
 * when there is none; POST a new state), what GitLab-managed state or any
 * state service answers. It lets a test's workspace keep its state off the
 * runner, as docs/state.md asks in CI, with the tofu stand-in.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export class HttpStateServer {
  private constructor(
    private readonly server: Server,
    readonly url: string,
    /** path → the state's JSON text. */
    readonly states: Map<string, string>,
  ) {}

  static async start(): Promise<HttpStateServer> {
    const states = new Map<string, string>();
    const server = createServer((request, response) => {
      const path = new URL(request.url ?? '/', 'http://state').pathname;
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
    return new HttpStateServer(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`, states);
  }

  /** The `backend "http"` block (Terraform JSON syntax) for a state at `name`. */
  backendBlock(name: string): Record<string, unknown> {
    return { terraform: { backend: { http: { address: `${this.url}/state/${name}` } } } };
  }

  async close(): Promise<void> {
    await new Promise<void>((done) => this.server.close(() => done()));
  }
}
