/**
 * Issue 28 item 5 with a real killed process: a converge (`playbook run` on the
 * standing inventory, as root with a granted key) killed with SIGKILL mid-play
 * leaves its private directories behind (the key's copy, the inventory, the
 * pins, ansible's own TMPDIR), all of them closed to others (0700 directories,
 * the key copy 0600) while they wait; the next run's sweep removes every one.
 * One loopback sshd host, real ansible-core, real git.
 */
import { spawn } from 'node:child_process';
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliPath, createChainFixture, sshHostVars, type ChainFixture } from '../support/chain-fixture.js';
import { createLoopbackHost, type LoopbackHost } from '../support/loopback-host.js';
import { waitFor } from '../support/time.js';

const MARKER = '/tmp/exocomp-killed-play-started';

let fx: ChainFixture;
let host: LoopbackHost;
/** The runs' TMPDIR: short, so the control sockets' directory stays beside the others (ansible.ts). */
let tmp: string;

beforeAll(async () => {
  fx = await createChainFixture('edge');
  tmp = join(fx.dir, 't');
  await mkdir(tmp);
  host = await createLoopbackHost({ rootAuthorizedKey: fx.bootstrap.publicKey });
  await host.start();
  await fx.setInventory({ all: { hosts: { web: sshHostVars(host) } } });
  for (const args of [
    ['workspace', 'apply', fx.workspace, '--workspace-name', 'edge', ...fx.common],
    ['host', 'onboard', 'web', '--inventory', 'tf:edge', ...fx.ledgerArgs],
  ]) {
    const result = await fx.cli(args);
    if (result.code !== 0) throw new Error(`${args.join(' ')} exited ${result.code}:\n${result.stderr}`);
  }
  await writeFile(
    join(fx.dir, 'slow.yml'),
    [
      '- hosts: all',
      '  gather_facts: false',
      '  tasks:',
      `    - ansible.builtin.command: touch ${MARKER}`,
      '    - ansible.builtin.command: sleep 300',
      '',
    ].join('\n'),
  );
  await writeFile(
    join(fx.dir, 'quick.yml'),
    '- hosts: all\n  gather_facts: false\n  tasks:\n    - ansible.builtin.ping:\n',
  );
});
afterAll(async () => {
  await host?.destroy();
  await fx?.cleanup();
});

/** `playbook run <playbook>` on tf:edge as root with the bootstrap key granted, in its own process group. */
function converge(playbook: string) {
  const child = spawn(
    process.execPath,
    [
      cliPath,
      'playbook',
      'run',
      playbook,
      '--inventory',
      'tf:edge',
      '--remote-user',
      'root',
      '--ssh-identity',
      fx.bootstrap.privateKeyPath,
      ...fx.ledgerArgs,
    ],
    { cwd: fx.dir, env: { ...fx.env, TMPDIR: tmp }, detached: true, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve) =>
    child.once('close', (code, signal) => resolve({ code, signal, stderr })),
  );
  let ended: string | undefined;
  void exited.then((end) => (ended = `it exited ${end.code ?? end.signal}:\n${end.stderr}`));
  return { pid: child.pid as number, exited, ended: () => ended };
}

/** Every path under `dir` (relative) with its permission bits. */
async function modesUnder(dir: string): Promise<Map<string, number>> {
  const modes = new Map<string, number>();
  for (const entry of await readdir(dir, { recursive: true })) {
    const mode = await stat(join(dir, entry)).then(
      (s) => s.mode & 0o777,
      () => undefined, // removed meanwhile (a socket of a master that ended)
    );
    if (mode !== undefined) modes.set(entry, mode);
  }
  return modes;
}

describe('a converge killed with -9 mid-play', () => {
  it('leaves only its own closed directories, key copy included, and the next run removes them all', async () => {
    const killed = converge('slow.yml');
    await waitFor(
      'the play to run its first task on the host',
      async () => (await host.readFile(MARKER)) !== undefined,
      { timeoutMs: 120_000, intervalMs: 200, gaveUp: killed.ended },
    );
    process.kill(-killed.pid, 'SIGKILL');
    expect((await killed.exited).signal).toBe('SIGKILL');

    const left = await readdir(tmp);
    expect(left.length).toBeGreaterThan(0);
    for (const name of left) expect(name).toMatch(new RegExp(`^exocomp-[a-z]+-${killed.pid}\\.[0-9a-z]+-`));
    const modes = await modesUnder(tmp);
    // Nobody else can enter any of them, so nothing inside is readable by others.
    for (const name of left) expect([name, modes.get(name)]).toEqual([name, 0o700]);
    const paths = [...modes.keys()];
    const keyCopy = paths.find((path) => path.endsWith('/identity'));
    expect(keyCopy, paths.join('\n')).toBeDefined();
    expect(await readFile(join(tmp, keyCopy!), 'utf8')).toBe(await readFile(fx.bootstrap.privateKeyPath, 'utf8'));
    for (const file of ['/identity', '/inventory.yml', '/known_hosts', '/extra-vars.json']) {
      const path = paths.find((p) => p.endsWith(file));
      expect([file, path && modes.get(path)]).toEqual([file, 0o600]);
    }
    // ansible's own temp directory (its TMPDIR and local temp) is among them, not in the caller's TMPDIR.
    expect(
      paths.some((path) => /\/home\/tmp\/ansible-local-/.test(path)),
      paths.join('\n'),
    ).toBe(true);

    const next = converge('quick.yml');
    const finished = await next.exited;
    expect(finished.code, finished.stderr).toBe(0);
    expect(await readdir(tmp)).toEqual([]);
  });
});
