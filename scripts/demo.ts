/**
 * The README's demo: the whole chain against a disposable loopback host (sshd in
 * a private mount namespace, started late so the wait has something to wait
 * for), a fixture workspace applied by the OpenTofu stand-in, and a throwaway
 * ledger; then the ledger view. Leaves nothing behind.
 */
import { spawn } from 'node:child_process';
import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runProcess } from '../src/adapters/process.js';
import { createLoopbackHost, generateKeyPair } from '../test/support/loopback-host.js';
import { fixtureWorkspacesDir, standinPath } from '../test/support/tofu-standin.js';

const root = resolve(import.meta.dirname, '..');
const cli = join(root, 'dist', 'cli.js');

function exocomp(args: string[], cwd: string): Promise<{ code: number; stdout: string }> {
  console.log(`\n$ exocomp ${args.join(' ')}`);
  return new Promise((done) => {
    const child = spawn(process.execPath, [cli, ...args], { cwd, stdio: ['ignore', 'pipe', 'inherit'] });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      process.stdout.write(chunk);
    });
    child.on('close', (code) => done({ code: code ?? 1, stdout }));
  });
}

const dir = await mkdtemp(join(tmpdir(), 'exocomp-demo-'));
const bootstrap = await generateKeyPair(dir, 'bootstrap');
const fleet = await generateKeyPair(dir, 'fleet');
const host = await createLoopbackHost({ rootAuthorizedKey: bootstrap.publicKey, port: 2222, startDelayMs: 2000 });
let code: number;
try {
  await runProcess('git', ['init', '-q', '--bare', join(dir, 'ledger.git')]);
  const workspace = join(dir, 'edge');
  await cp(join(fixtureWorkspacesDir, 'edge'), workspace, { recursive: true });
  await cp(join(root, 'examples', 'demo', 'site.yml'), join(dir, 'site.yml'));
  await writeFile(
    join(dir, 'vars.json'),
    JSON.stringify({ ansible_inventory: { all: { children: { web: { hosts: { web1: { ansible_host: host.address, ansible_port: host.port, ansible_user: 'root' } } } } } } }),
  );
  console.log(`disposable host web1 at ${host.address}:${host.port} (sshd comes up in 2 s)`);
  await host.start();
  const ledger = ['--ledger', join(dir, 'ledger.git')];
  const run = await exocomp(
    ['provision', 'run', 'edge', 'site.yml', ...ledger, '--tofu-binary', standinPath, '--vars-file', 'vars.json', '--fleet-key', fleet.privateKeyPath, '--bootstrap-key', bootstrap.privateKeyPath, '--ssh-wait', '1m'],
    dir,
  );
  code = run.code;
  const id = /workflow\s+(\S+)/.exec(run.stdout)?.[1];
  if (id) await exocomp(['provision', 'status', id, ...ledger], dir);
  await exocomp(['inventory', 'show', 'tf:edge', ...ledger], dir);
  await exocomp(['host', 'known-hosts', ...ledger], dir);
  console.log(`\n/etc/motd on web1: ${(await host.readFile('/etc/motd'))?.trim()}`);
} finally {
  await host.destroy();
  await rm(dir, { recursive: true, force: true });
}
process.exitCode = code;
