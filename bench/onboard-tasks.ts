/**
 * npm run bench:onboard-tasks — the onboarding play's runner CPU, task by task: the play cut after each of its
 * tasks, run with plain ansible-playbook (the bootstrap key, pipelining, ControlPersist, strict host-key checking)
 * on BENCH_HOSTS fresh loopback hosts (default 1), each prefix's median over BENCH_ROUNDS (default 3) minus the
 * previous prefix's. CPU is the whole process tree's, the ssh masters ControlPersist daemonizes included (a
 * subreaper collects them). The hosts are reset (user and drop-in removed) before every run, so every run onboards.
 * As in bench:fleet, the runner works on core 0 and the hosts' sshd on the other cores.
 *
 * Two floors come first, over the same hosts: one ssh login per host with the tools alone (the key exchange and
 * authentication any onboarding pays), and an ansible `raw true` per host (what ansible adds to any task that
 * reaches a host: its worker, the connection plugin).
 *
 *   BENCH_PLAYBOOK=/tmp/old-onboard.yml BENCH_HOSTS=10 npm run bench:onboard-tasks
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse, stringify } from 'yaml';
import { runProcess } from '../src/adapters/process.js';
import { createLoopbackHost, generateKeyPair, type LoopbackHost } from '../test/support/loopback-host.js';
import { median, pinHostsApart, SUBREAPER_PY } from './side-by-side.js';

const root = resolve(import.meta.dirname, '..');
const playbook = process.env.BENCH_PLAYBOOK ?? join(root, 'playbooks/onboard.yml');
const hostCount = Number(process.env.BENCH_HOSTS ?? 1);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);

const pinned = await pinHostsApart();
const dir = await mkdtemp(join(tmpdir(), 'exo-bot-'));
const hosts: LoopbackHost[] = [];
try {
  const bootstrap = await generateKeyPair(dir, 'bootstrap');
  const fleet = await generateKeyPair(dir, 'fleet');
  for (let i = 0; i < hostCount; i++) hosts.push(await createLoopbackHost({ rootAuthorizedKey: bootstrap.publicKey }));
  await Promise.all(hosts.map((h) => h.start()));
  const knownHosts = join(dir, 'known_hosts');
  await writeFile(
    knownHosts,
    (await Promise.all(hosts.map(async (h) => `${h.knownHostsName} ${await h.hostPublicKey()}`))).join('\n') + '\n',
  );
  const inventory = join(dir, 'inventory.json');
  const entries = hosts.map((h, i) => [`h${i + 1}`, { ansible_host: h.address, ansible_port: h.port }]);
  await writeFile(inventory, JSON.stringify({ all: { hosts: Object.fromEntries(entries) } }));
  const vars = join(dir, 'vars.json');
  await writeFile(vars, JSON.stringify({ exocomp_fleet_pubkey: fleet.publicKey }));
  await writeFile(join(dir, 'subreaper.py'), SUBREAPER_PY);

  const env = {
    ...process.env,
    ANSIBLE_PIPELINING: 'True',
    ANSIBLE_HOST_KEY_CHECKING: 'True',
    ANSIBLE_RETRY_FILES_ENABLED: 'false',
    ANSIBLE_SSH_ARGS: `-o ControlMaster=auto -o ControlPersist=60s -o ControlPath=${dir}/cp-%C -o UserKnownHostsFile=${knownHosts} -o StrictHostKeyChecking=yes`,
  };
  /** One run on the runner's core: the whole tree's CPU and the wall time, in seconds. */
  const measure = async (command: string[]) => {
    await Promise.all(hosts.map((h) => h.exec('userdel -r exocomp 2>/dev/null; rm -f /etc/sudoers.d/exocomp-exocomp')));
    const started = performance.now();
    const subreaper = ['python3', join(dir, 'subreaper.py'), join(dir, 'cpu.json')];
    const result = await runProcess('taskset', ['-c', pinned.runner, ...subreaper, ...command], { env });
    if (result.code !== 0)
      throw new Error(`${command.join(' ')} failed:\n${(result.stdout + result.stderr).slice(-3000)}`);
    const cpu = (JSON.parse(await readFile(join(dir, 'cpu.json'), 'utf8')) as { cpu: number }).cpu;
    return { cpu, wall: (performance.now() - started) / 1000 };
  };
  const medians = async (command: string[]) => {
    const runs = [];
    for (let r = 0; r < rounds; r++) runs.push(await measure(command));
    return { cpu: median(runs.map((run) => run.cpu)), wall: median(runs.map((run) => run.wall)) };
  };
  const per = (s: number) => `${(s / hostCount).toFixed(2)} s`;
  const logins = hosts.map(
    (h) =>
      `ssh -n -F /dev/null -i ${bootstrap.privateKeyPath} -o IdentitiesOnly=yes -o BatchMode=yes ` +
      `-o UserKnownHostsFile=${knownHosts} -o StrictHostKeyChecking=yes -p ${h.port} root@${h.address} true`,
  );

  // Every ansible run connects as the bootstrap user, as onboarding does.
  const asRoot = ['-i', inventory, '-u', 'root', '--private-key', bootstrap.privateKeyPath];
  const [play] = parse(await readFile(playbook, 'utf8')) as [{ tasks: { name?: string }[] }];
  console.log(
    `bench:onboard-tasks — ${playbook}, ${hostCount} host(s), ${rounds} round(s), runner on core ${pinned.runner}, ` +
      `hosts on ${pinned.hosts}, load ${loadavg()[0]!.toFixed(2)}`,
  );
  const floors = {
    ssh: await medians(['sh', '-c', logins.join(' && ')]),
    raw: await medians(['ansible', 'all', ...asRoot, '-m', 'raw', '-a', 'true']),
  };
  const prefixes = [];
  for (let tasks = 0; tasks <= play.tasks.length; tasks++) {
    const cut = join(dir, `play-${tasks}.yml`);
    await writeFile(cut, stringify([{ ...play, tasks: play.tasks.slice(0, tasks) }]));
    prefixes.push(await medians(['ansible-playbook', ...asRoot, '-e', `@${vars}`, cut]));
  }
  console.log(`\nrunner CPU per host, median of ${rounds}:`);
  console.log(
    `  floor: one ssh login per host, no ansible${' '.repeat(27)}${per(floors.ssh.cpu)} (wall ${floors.ssh.wall.toFixed(1)} s)`,
  );
  console.log(
    `  floor: ansible raw \`true\` per host${' '.repeat(34)}${per(floors.raw.cpu)} (wall ${floors.raw.wall.toFixed(1)} s)`,
  );
  console.log(`the play, task by task (a task's figure is its prefix's minus the one before):`);
  console.log(
    `  ansible-playbook with no task${' '.repeat(40)}${per(prefixes[0]!.cpu)} (wall ${prefixes[0]!.wall.toFixed(1)} s)`,
  );
  for (let t = 1; t <= play.tasks.length; t++)
    console.log(
      `  + ${(play.tasks[t - 1]!.name ?? '(unnamed)').slice(0, 64).padEnd(66)}${per(prefixes[t]!.cpu - prefixes[t - 1]!.cpu)}`,
    );
  const whole = prefixes[play.tasks.length]!;
  console.log(`  whole play${' '.repeat(59)}${per(whole.cpu)} (wall ${whole.wall.toFixed(1)} s)`);
  console.log(`load ${loadavg()[0]!.toFixed(2)} at end; on a shared machine the figures are indicative only`);
} finally {
  await Promise.all(hosts.map((h) => h.destroy()));
  await rm(dir, { recursive: true, force: true });
}
