/**
 * npm run bench:fleet — the whole chain over N loopback hosts, exocomp beside the bare tools doing the same
 * work (needs root: it starts loopback sshd hosts).
 *
 *   BENCH_HOSTS=20,50 npm run bench:fleet          (default 50,100,200,400; BENCH_ROUNDS, default 1)
 *
 * exocomp: `provision run --json` (apply with the tofu stand-in, the SSH wait, the host-key scan and pins,
 * the onboarding play, the fleet-login proof, the configure play). bare: a shell script doing the same work
 * with the tools alone: sequential ssh-keyscan into a known_hosts file, the seeded onboarding play with the
 * bootstrap key as root, the demo's configure play as the fleet user with the fleet key in an ssh-agent,
 * strict host-key checking, pipelining and ControlPersist, ansible's default forks. Both onboard every host
 * from scratch (the user and drop-in are removed before each run).
 *
 * The hosts' sshd run on other cores than the runner (taskset: this process and so the hosts on cores
 * 1…n−1, each side's runner on core 0), so the runner's own cost is measured apart from the hosts'. Runner
 * CPU is the whole process tree's (a subreaper collects the ssh masters ControlPersist daemonizes), read at
 * every step boundary. Prints per step the wall time and runner CPU per host of both sides and their ratio.
 */
import { spawn } from 'node:child_process';
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { runProcess } from '../src/adapters/process.js';
import { chooseForks } from '../src/domain/forks.js';
import { createLoopbackHost, generateKeyPair, type KeyPair, type LoopbackHost } from '../test/support/loopback-host.js';
import { fixtureWorkspacesDir, standinPath } from '../test/support/tofu-standin.js';
import { ansiblePython, cliEnv, median, pinHostsApart, provisionRunArgs, SUBREAPER_PY } from './side-by-side.js';

const root = resolve(import.meta.dirname, '..');
const cli = join(root, 'dist/cli.js');
const hostCounts = (process.env.BENCH_HOSTS ?? '50,100,200,400').split(',').map(Number);
const rounds = Number(process.env.BENCH_ROUNDS ?? 1);
if (!hostCounts.every((n) => Number.isInteger(n) && n >= 1) || !Number.isInteger(rounds) || rounds < 1)
  throw new Error('BENCH_HOSTS takes whole numbers ≥ 1 separated by commas, BENCH_ROUNDS a whole number ≥ 1');

const { cores, runner: runnerCores, hosts: hostCores } = await pinHostsApart();

/**
 * CPU ms (user + system) a process tree has used so far: live processes' own and their reaped children's; undefined
 * once the root itself is gone (its final figure is then the subreaper's own report).
 */
async function treeCpuMs(rootPid: number): Promise<number | undefined> {
  const stats = new Map<number, { ppid: number; ticks: number }>();
  for (const pid of (await readdir('/proc')).filter((name) => /^\d+$/.test(name))) {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
    if (stat === undefined) continue;
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i]), 0);
    stats.set(Number(pid), { ppid: Number(fields[1]), ticks });
  }
  const inTree = (pid: number): boolean => {
    for (let p: number | undefined = pid; p !== undefined && p > 1; p = stats.get(p)?.ppid)
      if (p === rootPid) return true;
    return false;
  };
  if (!stats.has(rootPid)) return undefined;
  let ticks = 0;
  for (const [pid, stat] of stats) if (inTree(pid)) ticks += stat.ticks;
  return ticks * 10;
}

interface StepFigures {
  wallMs: number;
  cpuMs: number;
}

/** Runs a side on core 0 and cuts it into steps where `stepEnded(line)` names one. */
async function timedSteps(
  command: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
  subreaperPath: string,
  stepEnded: (line: string) => string | undefined,
): Promise<TimedRun> {
  const started = performance.now();
  // The subreaper writes the whole tree's CPU here when everything has ended.
  const finalCpuFile = `${subreaperPath}.${process.pid}-${Date.now()}.json`;
  const child = spawn('taskset', ['-c', runnerCores, 'python3', subreaperPath, finalCpuFile, ...command], {
    ...options,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // Kept whole (up to 64 KB): Deliver 5 wants nothing on stderr but our own output, so the bench shows what came.
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-65_536)));
  const readings: Array<{ step: string; at: number; cpu: number | undefined }> = [];
  for await (const line of createInterface({ input: child.stdout })) {
    const step = stepEnded(line);
    if (step === undefined) continue;
    readings.push({ step, at: performance.now(), cpu: await treeCpuMs(child.pid!) });
  }
  const code = await new Promise<number | null>((done) =>
    child.exitCode !== null ? done(child.exitCode) : child.on('close', done),
  );
  if (code !== 0) throw new Error(`${command.join(' ')} failed (exit ${code}):\n${stderr.slice(-4000)}`);
  // A step line handled after the tree had ended (long output at many hosts) takes the tree's final figure.
  const finalCpuMs = (JSON.parse(await readFile(finalCpuFile, 'utf8')) as { cpu: number }).cpu * 1000;
  await rm(finalCpuFile, { force: true });
  const steps: Record<string, StepFigures> = {};
  let last = { at: started, cpu: 0 };
  for (const reading of readings) {
    const now = { at: reading.at, cpu: reading.cpu ?? finalCpuMs };
    steps[reading.step] = { wallMs: now.at - last.at, cpuMs: now.cpu - last.cpu };
    last = now;
  }
  return { steps, stderr };
}

interface TimedRun {
  steps: Record<string, StepFigures>;
  stderr: string;
}

const bareChain = `#!/bin/bash
set -euo pipefail
cd "$WS"
: > known_hosts
for hostport in $HOSTS; do ssh-keyscan -T 5 -t ed25519 -p "\${hostport#*:}" "\${hostport%:*}" >> known_hosts 2>/dev/null; done
echo "step scan"
export ANSIBLE_PIPELINING=True ANSIBLE_HOST_KEY_CHECKING=True ANSIBLE_RETRY_FILES_ENABLED=false
ssh_args="-o ControlMaster=auto -o ControlPersist=60s -o UserKnownHostsFile=$WS/known_hosts -o StrictHostKeyChecking=yes"
ANSIBLE_SSH_ARGS="$ssh_args -o ControlPath=$WS/cpo-%C" ansible-playbook -i inventory.json -u root \\
  --private-key "$BOOTSTRAP" -e @onboard-vars.json "$ONBOARD" >> ansible.log || { tail -50 ansible.log >&2; exit 1; }
echo "step onboard"
eval "$(ssh-agent -s)" > /dev/null
trap 'ssh-agent -k > /dev/null' EXIT
ssh-add -q "$FLEET"
ANSIBLE_SSH_ARGS="$ssh_args -o ControlPath=$WS/cpc-%C" ansible-playbook -i inventory.json -u exocomp \\
  site.yml >> ansible.log || { tail -50 ansible.log >&2; exit 1; }
echo "step configure"
`;

/** The stand-in's `edge` fixture naming every host, the demo's site.yml, a fresh ledger. */
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
  // The bare script's: each play names its user (-u), as a user running the tools by hand would.
  const bare = Object.fromEntries(
    hosts.map((h, i) => [`h${i + 1}`, { ansible_host: h.address, ansible_port: h.port }]),
  );
  await writeFile(join(ws, 'inventory.json'), JSON.stringify({ all: { hosts: bare } }));
  await cp(resolve(root, 'examples/demo/site.yml'), join(ws, 'site.yml'));
  await runProcess('git', ['init', '-q', '--bare', join(ws, 'ledger.git')]);
  return ws;
}

async function exocompRun(ws: string, keys: Keys, subreaperPath: string): Promise<TimedRun> {
  return timedSteps(
    [
      process.execPath,
      ...provisionRunArgs(cli, ws, standinPath, keys.fleet.privateKeyPath, keys.bootstrap.privateKeyPath, '--json'),
    ],
    { cwd: ws, env: cliEnv(ws) },
    subreaperPath,
    (line) => {
      const event = JSON.parse(line) as { event?: string; step?: string };
      return event.event === 'step-succeeded' ? event.step : undefined;
    },
  );
}

async function bareRun(ws: string, keys: Keys, hosts: readonly LoopbackHost[], subreaperPath: string) {
  await writeFile(join(ws, 'chain.sh'), bareChain, { mode: 0o755 });
  await writeFile(join(ws, 'onboard-vars.json'), JSON.stringify({ exocomp_fleet_pubkey: keys.fleet.publicKey }));
  return timedSteps(
    ['bash', join(ws, 'chain.sh')],
    {
      cwd: ws,
      env: {
        ...process.env,
        WS: ws,
        HOSTS: hosts.map((h) => `${h.address}:${h.port}`).join(' '),
        BOOTSTRAP: keys.bootstrap.privateKeyPath,
        FLEET: keys.fleet.privateKeyPath,
        ONBOARD: join(root, 'playbooks/onboard.yml'),
        PYTHON: await ansiblePython(),
      },
    },
    subreaperPath,
    (line) => /^step (\w+)$/.exec(line)?.[1],
  );
}

interface Keys {
  bootstrap: KeyPair;
  fleet: KeyPair;
}

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
/** exocomp's steps beside the bare script's: the wait, the scan and the onboarding play are one span for both. */
const COMPARED: [string, string[], string[]][] = [
  ['apply', ['apply'], []],
  ['wait + scan + onboard', ['ssh-wait', 'onboard'], ['scan', 'onboard']],
  ['configure', ['configure'], ['configure']],
];

const dir = await mkdtemp(join(tmpdir(), 'exocomp-bench-fleet-'));
const subreaperPath = join(dir, 'subreaper.py');
await writeFile(subreaperPath, SUBREAPER_PY);
const keys = { bootstrap: await generateKeyPair(dir, 'bootstrap'), fleet: await generateKeyPair(dir, 'fleet') };
console.log(
  `bench:fleet — hosts ${hostCounts.join(', ')}, ${rounds} round(s), ${cores} core(s): hosts' sshd on cores ${hostCores}, ` +
    `runner on core ${runnerCores}; exocomp forks derived from the runner's one core (${hostCounts.map((n) => chooseForks(n, 1)).join(', ')}), bare forks 5; load ${load()}`,
);
try {
  for (const count of hostCounts) {
    const hosts: LoopbackHost[] = [];
    try {
      for (let i = 0; i < count; i++)
        hosts.push(await createLoopbackHost({ rootAuthorizedKey: keys.bootstrap.publicKey }));
      await Promise.all(hosts.map((h) => h.start()));
      const figures: Record<'exocomp' | 'bare', Record<string, StepFigures>[]> = { exocomp: [], bare: [] };
      for (let round = 0; round < rounds; round++) {
        for (const side of round % 2 === 0 ? (['bare', 'exocomp'] as const) : (['exocomp', 'bare'] as const)) {
          for (let i = 0; i < hosts.length; i += 50)
            await Promise.all(
              hosts
                .slice(i, i + 50)
                .map((h) => h.exec('userdel -r exocomp 2>/dev/null; rm -f /etc/sudoers.d/exocomp-exocomp')),
            );
          const ws = await workspace(dir, side, hosts);
          const run =
            side === 'exocomp'
              ? await exocompRun(ws, keys, subreaperPath)
              : await bareRun(ws, keys, hosts, subreaperPath);
          figures[side].push(run.steps);
          const said = run.stderr.split('\n').filter((line) => line.trim() !== '');
          if (said.length > 0)
            console.log(`${side} wrote ${said.length} line(s) on stderr:\n  ${said.slice(0, 10).join('\n  ')}`);
          await rm(ws, { recursive: true, force: true });
        }
      }
      const sum = (runs: Record<string, StepFigures>[], steps: string[], what: keyof StepFigures) =>
        median(runs.map((run) => steps.reduce((total, step) => total + (run[step]?.[what] ?? 0), 0)));
      console.log(`\n${count} host(s), median of ${rounds} round(s); load ${load()}`);
      console.log(
        'step                  | exocomp wall | bare wall | ratio | exocomp CPU/host | bare CPU/host | ratio',
      );
      const all = COMPARED.flatMap(([, e]) => e);
      const allBare = COMPARED.flatMap(([, , b]) => b);
      for (const [name, e, b] of [...COMPARED, ['whole chain', all, allBare] as [string, string[], string[]]]) {
        const [ew, bw] = [sum(figures.exocomp, e, 'wallMs'), sum(figures.bare, b, 'wallMs')];
        const [ec, bc] = [sum(figures.exocomp, e, 'cpuMs') / count, sum(figures.bare, b, 'cpuMs') / count];
        const ratio = (x: number, y: number) => (y > 0 ? (x / y).toFixed(2) : '—');
        console.log(
          `${name.padEnd(21)} | ${`${(ew / 1000).toFixed(1)} s`.padStart(12)} | ${`${(bw / 1000).toFixed(1)} s`.padStart(9)} | ${ratio(ew, bw).padStart(5)} | ` +
            `${`${(ec / 1000).toFixed(3)} s`.padStart(16)} | ${`${(bc / 1000).toFixed(3)} s`.padStart(13)} | ${ratio(ec, bc).padStart(5)}`,
        );
      }
    } finally {
      await Promise.all(hosts.map((h) => h.destroy()));
    }
  }
  console.log(`\nload ${load()} at end; on a shared machine the figures are indicative only`);
} finally {
  await rm(dir, { recursive: true, force: true });
}
