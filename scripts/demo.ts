/**
 * The README's demo: the whole chain against a disposable loopback host (sshd in
 * a private mount namespace, started late so the wait has something to wait
 * for), a fixture workspace applied by the real OpenTofu/Terraform when one is
 * on PATH (found as the CLI finds it) or else by the stand-in, keys made by
 * `exocomp keys init`, and a ledger created with --ledger-init; then the
 * ledger view. The host goes away; the ledger stays, so `provision status`
 * and `inventory show` work afterwards (it says where, and how to remove it).
 */
import { spawn } from 'node:child_process';
import { cp, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { locateTofu } from '../src/adapters/tofu.js';
import { createLoopbackHost } from '../test/support/loopback-host.js';
import { fixtureWorkspacesDir, standinPath } from '../test/support/tofu-standin.js';

const root = resolve(import.meta.dirname, '..');
const cli = join(root, 'dist', 'cli.js');

function exocomp(
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ code: number; stdout: string }> {
  console.log(`\n$ exocomp ${args.join(' ')}`);
  return new Promise((done) => {
    const child = spawn(process.execPath, [cli, ...args], { cwd, env, stdio: ['ignore', 'pipe', 'inherit'] });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      process.stdout.write(chunk);
    });
    child.on('close', (code) => done({ code: code ?? 1, stdout }));
  });
}

const tofuBinary = await locateTofu({ env: process.env }).catch(() => standinPath);
console.log(
  tofuBinary === standinPath
    ? `no tofu or terraform on PATH: the workspace is applied by the stand-in (${standinPath})`
    : `the workspace is applied by ${tofuBinary}`,
);

const dir = await mkdtemp(join(tmpdir(), 'exocomp-demo-'));
const keys = await exocomp(['keys', 'init', '--dir', 'keys'], dir);
if (keys.code !== 0) process.exit(keys.code);
const bootstrapPublicKey = (await readFile(join(dir, 'keys', 'bootstrap_ed25519.pub'), 'utf8')).trim();
const host = await createLoopbackHost({ rootAuthorizedKey: bootstrapPublicKey, port: 2222, startDelayMs: 2000 });
const ledger = ['--ledger', 'ledger.git'];
let code: number;
try {
  const workspace = join(dir, 'edge');
  await cp(join(fixtureWorkspacesDir, 'edge'), workspace, { recursive: true });
  await cp(join(root, 'examples', 'demo', 'site.yml'), join(dir, 'site.yml'));
  await writeFile(
    join(dir, 'vars.json'),
    JSON.stringify({
      ansible_inventory: {
        all: {
          children: {
            web: { hosts: { web1: { ansible_host: host.address, ansible_port: host.port, ansible_user: 'root' } } },
          },
        },
      },
    }),
  );
  console.log(`disposable host web1 at ${host.address}:${host.port} (sshd comes up in 2 s)`);
  await host.start();
  const run = await exocomp(
    [
      'provision',
      'run',
      'edge',
      'site.yml',
      ...ledger,
      '--ledger-init',
      '--tofu-binary',
      tofuBinary,
      '--vars-file',
      'vars.json',
      '--fleet-key',
      'keys/fleet_ed25519',
      '--bootstrap-key',
      'keys/bootstrap_ed25519',
      '--ssh-wait',
      '1m',
    ],
    dir,
    // The seal key from the environment, so the command line printed above does not show it.
    { ...process.env, EXOCOMP_SEAL_KEY: (await readFile(join(dir, 'keys', 'seal.key'), 'utf8')).trim() },
  );
  code = run.code;
  const id = /workflow\s+(\S+)/.exec(run.stdout)?.[1];
  if (id) await exocomp(['provision', 'status', id, ...ledger], dir);
  await exocomp(['inventory', 'show', 'tf:edge', ...ledger], dir);
  await exocomp(['host', 'known-hosts', ...ledger], dir);
  console.log(`\n/etc/motd on web1: ${(await host.readFile('/etc/motd'))?.trim()}`);
} finally {
  await host.destroy();
}
const ledgerPath = join(dir, 'ledger.git');
console.log(`
The host is gone; its ledger stays in ${ledgerPath}. Look at it again with:
  cd ${dir}
  node ${cli} provision status --ledger ledger.git
  node ${cli} inventory show tf:edge --ledger ledger.git
Remove everything the demo made with:
  rm -rf ${dir}`);
process.exitCode = code;
