import { access, constants, cp, readFile, writeFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { delimiter, isAbsolute, join, resolve } from 'node:path';
import { runProcess } from '../src/adapters/process.js';
import { fixtureWorkspacesDir } from '../test/support/tofu-standin.js';
/** Rounds of exocomp beside a baseline, alternating which goes first, and the medians of each. */
export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/**
 * `--only <kind>` on the command line runs that side alone, so each side can be timed as a whole process
 * (paired by an outside timer); the result then holds that side only.
 */
export async function sideBySide<K extends string>(
  kinds: readonly [K, K],
  rounds: number,
  round: (kind: K) => Promise<number>,
): Promise<Partial<Record<K, number[]>>> {
  const only = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] : undefined;
  if (only !== undefined && !kinds.includes(only as K))
    throw new Error(`--only takes ${kinds.join(' or ')}, not ${only}`);
  const run = kinds.filter((k) => only === undefined || k === only);
  const times = Object.fromEntries(run.map((k) => [k, [] as number[]])) as Record<K, number[]>;
  for (let i = 0; i < rounds; i++) {
    // Alternate the order so neither side always runs on a warmer machine.
    for (const kind of i % 2 === 0 ? run : [...run].reverse()) {
      const ms = await round(kind);
      times[kind].push(ms);
      console.log(`round ${i + 1} ${kind.padEnd(8)} ${(ms / 1000).toFixed(2)} s`);
    }
  }
  return times;
}

/**
 * Both readings of one side-by-side run: the ratio of the two medians, and the median (with range) of the
 * rounds' own ratios. The second is the one to judge by: a machine that slows down during the run moves both
 * sides of a round together, but can make the medians of the two sides come from different rounds.
 */
export function ratioLine(
  what: string,
  sides: { name: string; ms: number[] },
  baseline: { name: string; ms: number[] },
  target: number,
): string {
  const paired = roundRatios(sides.ms, baseline.ms);
  const sorted = [...paired].sort((a, b) => a - b);
  const interval = medianInterval(sorted);
  return [
    `\n${what}, median of ${sides.ms.length}: ${sides.name} ${seconds(median(sides.ms))}, ${baseline.name} ${seconds(median(baseline.ms))}, ratio of medians ${(median(sides.ms) / median(baseline.ms)).toFixed(2)}`,
    `round by round: ratio median ${median(paired).toFixed(2)}, ${Math.floor(interval.confidence * 100)}% interval ${interval.low.toFixed(2)}–${interval.high.toFixed(2)} (range ${sorted[0]!.toFixed(2)}–${sorted[sorted.length - 1]!.toFixed(2)}) (target ≤ ${target.toFixed(2)})`,
  ].join('\n');
}

/**
 * Where the true median lies, from the rounds alone (sorted ascending): the narrowest pair of order
 * statistics x(k)–x(n+1−k) that holds it with at least `wanted` confidence, by the binomial count of rounds
 * below the median. No assumption about the spread's shape; with few rounds it is the whole range, and
 * `confidence` says how sure even that is.
 */
export function medianInterval(
  sorted: readonly number[],
  wanted = 0.95,
): { low: number; high: number; confidence: number } {
  const n = sorted.length;
  // below[j]: the chance that at most j of n rounds fall below the median.
  const below: number[] = [];
  let term = 0.5 ** n;
  let sum = 0;
  for (let j = 0; j <= n; j++) {
    sum += term;
    below.push(sum);
    term = (term * (n - j)) / (j + 1);
  }
  // Narrow inwards while the next pair, x(k+1)–x(n−k), still exists and is sure enough.
  let k = 1;
  while (2 * k + 1 <= n && 1 - 2 * below[k]! >= wanted) k += 1;
  return { low: sorted[k - 1]!, high: sorted[n - k]!, confidence: 1 - 2 * below[k - 1]! };
}

/** The `exocomp provision run` both benchmarks time: the workspace's own site.yml, its ledger, the stand-in and the two keys. */
export function provisionRunArgs(
  cli: string,
  ws: string,
  tofu: string,
  fleetKey: string,
  bootstrapKey: string,
  ...extra: string[]
): string[] {
  return [
    cli,
    'provision',
    'run',
    ws,
    join(ws, 'site.yml'),
    ...extra,
    '--workspace-name',
    'bench',
    '--ledger',
    join(ws, 'ledger.git'),
    '--tofu-binary',
    tofu,
    '--fleet-key',
    fleetKey,
    '--bootstrap-key',
    bootstrapKey,
  ];
}

/** The environment of a benchmarked exocomp run: its ledger cache in the workspace, fresh as a new CI runner's and removed with it. */
export function cliEnv(ws: string): NodeJS.ProcessEnv {
  return { ...process.env, XDG_CACHE_HOME: join(ws, 'cache') };
}

/** The workspace every side-by-side run applies: the stand-in's `edge` fixture naming one host, and the demo's site.yml. */
export async function fillBenchWorkspace(ws: string, host: { address: string; port: number }): Promise<void> {
  await cp(join(fixtureWorkspacesDir, 'edge'), ws, { recursive: true });
  const web1 = { ansible_host: host.address, ansible_port: host.port, ansible_user: 'root' };
  await writeFile(
    join(ws, 'exocomp.auto.tfvars.json'),
    JSON.stringify({ ansible_inventory: { all: { hosts: { web1 } } } }),
  );
  await cp(resolve(import.meta.dirname, '../examples/demo/site.yml'), join(ws, 'site.yml'));
}

/**
 * CPU seconds (user + system, in ms) of this process's children that have
 * been waited for: read before and after one side's run, the difference is
 * that run's whole process tree. A busy machine stretches wall time far more
 * than the work done, so this says what each side costs when the wall-time
 * ratio is noisy. Linux only (`/proc/self/stat`, in clock ticks of 10 ms).
 */
export async function childCpuMs(): Promise<number> {
  const stat = await readFile('/proc/self/stat', 'utf8');
  // Fields after the command name (which may hold spaces): cutime and cstime are the 16th and 17th fields.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[13]) + Number(fields[14])) * 10;
}

/** One line: each side's median CPU and the median of the rounds' own CPU ratios. */
export function cpuLine(sides: { name: string; ms: number[] }, baseline: { name: string; ms: number[] }): string {
  const paired = roundRatios(sides.ms, baseline.ms);
  return `cpu of the run's processes, median: ${sides.name} ${seconds(median(sides.ms))}, ${baseline.name} ${seconds(median(baseline.ms))}; round by round: ratio median ${median(paired).toFixed(2)}`;
}

/** Each round's own ratio of one side to the baseline. */
function roundRatios(side: readonly number[], baseline: readonly number[]): number[] {
  return side.map((ms, i) => ms / baseline[i]!);
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

/**
 * The interpreter ansible-playbook itself runs on (its `#!` line), for the
 * baselines' JSON glue: a `python3` found on PATH may be a version manager's
 * shim (pyenv's costs about 0.1 s a call), which would slow the baseline with
 * work no one writing the script by hand would pay for twice.
 */
export async function ansiblePython(): Promise<string> {
  for (const dir of (process.env.PATH ?? '').split(delimiter).filter((d) => isAbsolute(d))) {
    const candidate = join(dir, 'ansible-playbook');
    if (
      !(await access(candidate, constants.X_OK).then(
        () => true,
        () => false,
      ))
    )
      continue;
    const shebang = /^#!\s*(\S+)(?:\s+(\S+))?/.exec((await readFile(candidate, 'utf8')).split('\n', 1)[0] ?? '');
    // `#!/usr/bin/env python3` names the PATH's python after all; anything else is the interpreter itself.
    if (shebang) return shebang[1]!.endsWith('/env') && shebang[2] ? shebang[2] : shebang[1]!;
  }
  throw new Error('ansible-playbook is not on PATH: install ansible-core (apt-get install ansible-core)');
}

/**
 * A python script that runs its arguments as a child subreaper, stdout passed through, so the ssh masters
 * ControlPersist daemonizes stay in its process tree; once the child exits it ends what is left of the tree,
 * reaps it, writes `{"cpu": seconds}` (user + system of the whole tree) to the file its first argument
 * names and exits with the child's code. Write it to a file and run `python3 <file> <cpu file> <command…>`.
 */
export const SUBREAPER_PY = `
import ctypes, json, os, resource, signal, subprocess, sys
assert ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
rc = subprocess.call(sys.argv[2:])
for pid in filter(str.isdigit, os.listdir('/proc')):
    try:
        stat = open(f'/proc/{pid}/stat').read()
        if int(stat[stat.rfind(')') + 2:].split()[1]) == os.getpid(): os.kill(int(pid), signal.SIGTERM)
    except OSError: pass
while True:
    try: os.wait()
    except ChildProcessError: break
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(sys.argv[1], 'w') as out: json.dump({'cpu': usage.ru_utime + usage.ru_stime}, out)
sys.exit(rc)
`;

/**
 * Keeps the runner's cost apart from the hosts': this process, and so the loopback hosts' sshd it starts, moves
 * to cores 1…n−1, and a side runs under `taskset -c <runner>` on core 0. With one core both share it.
 */
export async function pinHostsApart(): Promise<{ cores: number; runner: string; hosts: string }> {
  const cores = availableParallelism();
  const hosts = cores > 1 ? `1-${cores - 1}` : '0';
  if (cores > 1) await runProcess('taskset', ['-a', '-p', '-c', hosts, String(process.pid)]);
  return { cores, runner: '0', hosts };
}
