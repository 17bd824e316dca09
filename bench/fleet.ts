/**
 * npm run bench:fleet — the chain over N loopback hosts with the forks exocomp
 * derives from the host count and the cores (domain/forks.ts) beside the same
 * chain at ansible's old fixed 5 (ANSIBLE_FORKS=5, which exocomp honours), side
 * by side (needs root: it starts loopback sshd hosts).
 *
 *   BENCH_HOSTS=20 BENCH_ROUNDS=3 npm run bench:fleet
 *
 * Each run is `exocomp provision run` (apply with the tofu stand-in, the SSH
 * wait, the host-key scan and pins, the onboarding play, the fleet-login proof,
 * the configure play) and then one converge (`playbook run --inventory
 * tf:bench`), on a fresh ledger. The hosts stay up across runs; one untimed run
 * first creates the fleet user, so every timed run finds them in the same state.
 * Prints, per side, the wall time of the chain and of the converge and the CPU
 * of all processes per host, and the ratios derived / fixed.
 */
import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runProcess } from '../src/adapters/process.js';
import { chooseForks } from '../src/domain/forks.js';
import { createLoopbackHost, generateKeyPair, type KeyPair, type LoopbackHost } from '../test/support/loopback-host.js';
import { fixtureWorkspacesDir, standinPath } from '../test/support/tofu-standin.js';
import { childCpuMs, cliEnv, cpuLine, median, provisionRunArgs, ratioLine, sideBySide } from './side-by-side.js';

const root = resolve(import.meta.dirname, '..');
const cli = join(root, 'dist/cli.js');
const hostCount = Number(process.env.BENCH_HOSTS ?? 20);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
if (!Number.isInteger(hostCount) || hostCount < 1 || !Number.isInteger(rounds) || rounds < 1)
  throw new Error('BENCH_HOSTS and BENCH_ROUNDS take whole numbers ≥ 1');

type Side = 'derived' | 'fixed-5';
const FORKS_ENV: Record<Side, NodeJS.ProcessEnv> = { derived: {}, 'fixed-5': { ANSIBLE_FORKS: '5' } };

interface Keys {
  bootstrap: KeyPair;
  fleet: KeyPair;
}

/** A fresh workspace (the stand-in's `edge` fixture naming every host, the demo's site.yml) and ledger. */
async function workspace(dir: string, name: string, hosts: readonly LoopbackHost[]): Promise<string> {
  const ws = await mkdtemp(join(dir, `${name}-`));
  await cp(join(fixtureWorkspacesDir, 'edge'), ws, { recursive: true });
  const inventory = Object.fromEntries(
    hosts.map((h, i) => [`h${i + 1}`, { ansible_host: h.address, ansible_port: h.port, ansible_user: 'root' }]),
  );
  await writeFile(
    join(ws, 'exocomp.auto.tfvars.json'),
    JSON.stringify({ ansible_inventory: { all: { hosts: inventory } } }),
  );
  await cp(resolve(root, 'examples/demo/site.yml'), join(ws, 'site.yml'));
  await runProcess('git', ['init', '-q', '--bare', join(ws, 'ledger.git')]);
  return ws;
}

/** One chain and one converge; returns each one's wall time. */
async function chainAndConverge(ws: string, keys: Keys, env: NodeJS.ProcessEnv): Promise<[number, number]> {
  const options = { cwd: ws, env: { ...cliEnv(ws), ...env } };
  const started = performance.now();
  const chain = await runProcess(
    process.execPath,
    provisionRunArgs(cli, ws, standinPath, keys.fleet.privateKeyPath, keys.bootstrap.privateKeyPath),
    options,
  );
  if (chain.code !== 0) throw new Error(`provision run failed (${chain.code}):\n${chain.stderr.slice(-3000)}`);
  const chained = performance.now();
  const converge = await runProcess(
    process.execPath,
    [
      cli,
      'playbook',
      'run',
      join(ws, 'site.yml'),
      '--inventory',
      'tf:bench',
      '--ledger',
      join(ws, 'ledger.git'),
    ].concat(['--fleet-key', keys.fleet.privateKeyPath]),
    options,
  );
  if (converge.code !== 0) throw new Error(`converge failed (${converge.code}):\n${converge.stderr.slice(-3000)}`);
  return [chained - started, performance.now() - chained];
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

const dir = await mkdtemp(join(tmpdir(), 'exocomp-bench-fleet-'));
const hosts: LoopbackHost[] = [];
try {
  const keys = { bootstrap: await generateKeyPair(dir, 'bootstrap'), fleet: await generateKeyPair(dir, 'fleet') };
  console.log(
    `bench:fleet — ${hostCount} host(s), ${rounds} round(s), ${availableParallelism()} core(s): derived forks ` +
      `${chooseForks(hostCount, availableParallelism())} vs fixed 5; load ${load()} at start`,
  );
  for (let i = 0; i < hostCount; i++)
    hosts.push(await createLoopbackHost({ rootAuthorizedKey: keys.bootstrap.publicKey }));
  await Promise.all(hosts.map((h) => h.start()));
  console.log('warm-up run (untimed): creates the fleet user on every host');
  await chainAndConverge(await workspace(dir, 'warm-up', hosts), keys, {});

  const phases: Record<Side, { chain: number[]; converge: number[]; cpu: number[] }> = {
    derived: { chain: [], converge: [], cpu: [] },
    'fixed-5': { chain: [], converge: [], cpu: [] },
  };
  const times = await sideBySide(['fixed-5', 'derived'] as const, rounds, async (side) => {
    const ws = await workspace(dir, side, hosts);
    const cpuBefore = await childCpuMs();
    const [chain, converge] = await chainAndConverge(ws, keys, FORKS_ENV[side]);
    phases[side].cpu.push((await childCpuMs()) - cpuBefore);
    phases[side].chain.push(chain);
    phases[side].converge.push(converge);
    await rm(ws, { recursive: true, force: true });
    return chain + converge;
  });
  console.log('');
  console.log('side    | chain (median) | converge (median) | CPU per host (median)');
  for (const side of ['derived', 'fixed-5'] as const) {
    if (phases[side].chain.length === 0) continue;
    console.log(
      `${side.padEnd(7)} | ${seconds(median(phases[side].chain)).padStart(14)} | ${seconds(median(phases[side].converge)).padStart(17)} | ` +
        `${(median(phases[side].cpu) / hostCount / 1000).toFixed(2)} s`,
    );
  }
  if (times.derived !== undefined && times['fixed-5'] !== undefined) {
    const sides = (side: Side, ms: number[]) => ({ name: side, ms });
    console.log(
      ratioLine('chain + converge', sides('derived', times.derived), sides('fixed-5', times['fixed-5']), 1.0),
    );
    console.log(
      ratioLine(
        'converge alone',
        sides('derived', phases.derived.converge),
        sides('fixed-5', phases['fixed-5'].converge),
        1.0,
      ),
    );
    console.log(cpuLine(sides('derived', phases.derived.cpu), sides('fixed-5', phases['fixed-5'].cpu)));
  }
  console.log(`load ${load()} at end; on a shared machine the figures are indicative only`);
} finally {
  await Promise.all(hosts.map((h) => h.destroy()));
  await rm(dir, { recursive: true, force: true });
}
