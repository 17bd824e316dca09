/**
 * The runner image's `docker`, for a workflow that starts its disposable host
 * in a container (.github/workflows/e2e.yml builds test/e2e-host/ and runs it).
 * No Docker daemon runs here and the network reaches only loopback, so the
 * emulation models the few commands such a workflow uses, as the Docker CLI
 * reference describes them, and the container is a real sshd on a loopback
 * host (./loopback-host.ts) keeping the image's contract: root logs in with
 * the key in BOOTSTRAP_PUBLIC_KEY only, python3 and sudo are there.
 *
 * - `docker build -t <tag> <dir>`: `dir` must hold test/e2e-host's Dockerfile
 *   (the only image modelled);
 * - `docker run -d --name <n> -p <ip>:[<port>]:22 -e K=V <tag>`: an empty host
 *   port is a free one on `ip` (https://docs.docker.com/reference/cli/docker/container/run/#publish);
 * - `docker port <n> [22[/tcp]]` prints `<ip>:<port>`
 *   (https://docs.docker.com/reference/cli/docker/container/port/);
 * - `docker exec <n> <argv…>`, `docker logs <n>` (the entrypoint's sshd -e logs).
 * Anything else fails, naming what the emulation does not model.
 *
 * The `docker` on PATH is a small Node script that sends its argv and working
 * directory to this process over loopback HTTP and prints the answer.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTcpServer } from 'node:net';
import { join, resolve } from 'node:path';
import { repoRoot } from './action-runner.js';
import { createLoopbackHost, shellQuote, type LoopbackHost } from './loopback-host.js';

interface Answer {
  code: number;
  stdout: string;
  stderr: string;
}

interface Container {
  id: string;
  host?: LoopbackHost;
  /** Why the entrypoint exited at once (what `docker logs` then shows). */
  exited?: string;
  address: string;
  port: number;
}

const fail = (stderr: string, code = 1): Answer => ({ code, stdout: '', stderr: `${stderr}\n` });

/** A free TCP port on `address`, as Docker picks for an empty host port. */
function freePort(address: string): Promise<number> {
  return new Promise((done, reject) => {
    const server = createTcpServer();
    server.once('error', reject);
    server.listen({ host: address, port: 0 }, () => {
      const { port } = server.address() as { port: number };
      server.close(() => done(port));
    });
  });
}

export class DockerStandin {
  /** Images by tag (what `build` made). */
  private readonly images = new Set<string>();
  readonly containers = new Map<string, Container>();

  private constructor(
    private readonly server: Server,
    /** Put this directory first on the runner's PATH. */
    readonly binDir: string,
  ) {}

  static async start(dir: string): Promise<DockerStandin> {
    const binDir = join(dir, 'docker-bin');
    await mkdir(binDir, { recursive: true });
    const server = createServer();
    const standin = new DockerStandin(server, binDir);
    server.on('request', (request: IncomingMessage, response: ServerResponse) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      request.on('end', () => {
        const { args, cwd } = JSON.parse(body) as { args: string[]; cwd: string };
        void standin
          .command(args, cwd)
          .catch((error: unknown) => fail(`docker stand-in: ${String(error)}`))
          .then((answer) => response.end(JSON.stringify(answer)));
      });
    });
    await new Promise<void>((done) => server.listen({ host: '127.0.0.1', port: 0 }, done));
    const { port } = server.address() as { port: number };
    await writeFile(
      join(binDir, 'docker'),
      `#!/usr/bin/env node
(async () => {
  const response = await fetch('http://127.0.0.1:${port}/', {
    method: 'POST',
    body: JSON.stringify({ args: process.argv.slice(2), cwd: process.cwd() }),
  });
  const { code, stdout, stderr } = await response.json();
  process.stdout.write(stdout);
  process.stderr.write(stderr);
  process.exitCode = code;
})();
`,
    );
    await chmod(join(binDir, 'docker'), 0o755);
    return standin;
  }

  async close(): Promise<void> {
    for (const container of this.containers.values()) await container.host?.destroy();
    await new Promise((done) => this.server.close(done));
  }

  private async command(args: string[], cwd: string): Promise<Answer> {
    const [verb, ...rest] = args;
    switch (verb) {
      case 'build':
        return this.build(rest, cwd);
      case 'run':
        return this.run(rest);
      case 'port': {
        const container = this.containers.get(rest[0] ?? '');
        if (!container) return fail(`Error response from daemon: No such container: ${rest[0]}`);
        if (rest[1] !== undefined && !/^22(\/tcp)?$/.test(rest[1]))
          return fail(`Error: No public port '${rest[1]}' published for ${rest[0]}`);
        return {
          code: 0,
          stdout: `${rest[1] === undefined ? '22/tcp -> ' : ''}${container.address}:${container.port}\n`,
          stderr: '',
        };
      }
      case 'exec': {
        const container = this.containers.get(rest[0] ?? '');
        if (!container?.host) return fail(`Error response from daemon: container ${rest[0]} is not running`);
        return container.host.exec(rest.slice(1).map(shellQuote).join(' '));
      }
      case 'logs': {
        const container = this.containers.get(rest[0] ?? '');
        if (!container) return fail(`Error response from daemon: No such container: ${rest[0]}`);
        return { code: 0, stdout: '', stderr: container.exited ?? (await container.host!.sshdLog()) };
      }
      default:
        return fail(
          `the docker stand-in (test/support/docker-standin.ts) has no model of \`docker ${args.join(' ')}\``,
        );
    }
  }

  private async build(args: string[], cwd: string): Promise<Answer> {
    const tag = args[args.indexOf('-t') + 1];
    const context = args.at(-1);
    if (!args.includes('-t') || !tag || !context || args.length !== 3)
      return fail(
        `the docker stand-in models \`docker build -t <tag> <dir>\` only, not \`docker build ${args.join(' ')}\``,
      );
    const dockerfile = await readFile(join(resolve(cwd, context), 'Dockerfile'), 'utf8').catch(() => undefined);
    if (dockerfile === undefined)
      return fail(`ERROR: failed to read dockerfile: open ${context}/Dockerfile: no such file`);
    if (dockerfile !== (await readFile(join(repoRoot, 'test/e2e-host/Dockerfile'), 'utf8')))
      return fail(`the docker stand-in models only the image of test/e2e-host/Dockerfile, not ${context}`);
    this.images.add(tag);
    return { code: 0, stdout: '', stderr: `naming to docker.io/library/${tag} done\n` };
  }

  private async run(args: string[]): Promise<Answer> {
    let name: string | undefined;
    let publish: string | undefined;
    let detached = false;
    const env: Record<string, string> = {};
    let index = 0;
    for (; index < args.length && args[index]!.startsWith('-'); index += 1) {
      const option = args[index]!;
      if (option === '-d' || option === '--detach') detached = true;
      else if (option === '--name') name = args[++index];
      else if (option === '-p' || option === '--publish') publish = args[++index];
      else if (option === '-e' || option === '--env') {
        const [key, ...value] = (args[++index] ?? '').split('=');
        env[key!] = value.join('=');
      } else return fail(`the docker stand-in has no model of \`docker run ${option}\``);
    }
    const image = args[index];
    if (!detached || name === undefined || publish === undefined || index !== args.length - 1)
      return fail(`the docker stand-in models \`docker run -d --name <n> -p <ip>:[<port>]:22 [-e K=V] <image>\` only`);
    if (!image || !this.images.has(image))
      return fail(
        `Unable to find image '${image}:latest' locally\ndocker: Error response from daemon: pull access denied`,
        125,
      );
    if (this.containers.has(name))
      return fail(`docker: Error response from daemon: Conflict. The container name "/${name}" is already in use`, 125);
    // <ip>:<host port>:<container port>; only the image's EXPOSE 22 is served, and only on loopback.
    const match = /^(127\.\d+\.\d+\.\d+):(\d*):22(\/tcp)?$/.exec(publish);
    if (!match) return fail(`the docker stand-in publishes port 22 on a loopback address only, not ${publish}`);
    const address = match[1]!;
    const port = match[2] ? Number(match[2]) : await freePort(address);
    const id = randomBytes(32).toString('hex');
    const container: Container = { id, address, port };
    this.containers.set(name, container);
    // The entrypoint (test/e2e-host/entrypoint.sh) refuses to start without the key.
    if (!env.BOOTSTRAP_PUBLIC_KEY)
      container.exited = 'BOOTSTRAP_PUBLIC_KEY is not set: pass the bootstrap public key with -e\n';
    else {
      container.host = await createLoopbackHost({ address, port, rootAuthorizedKey: env.BOOTSTRAP_PUBLIC_KEY });
      await container.host.start();
    }
    return { code: 0, stdout: `${id}\n`, stderr: '' };
  }
}
