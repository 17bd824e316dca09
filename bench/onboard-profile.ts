/**
 * npm run bench:onboard-profile — where the onboarding step's time goes, phase
 * by phase, beside the bare tools doing the same on a fresh loopback host.
 *
 * exocomp: `provision run --json`, each event stamped as it arrives: from the
 * step's start to its pins (inventory read, ssh-keyscan, the pin's ledger
 * write), to the play's start (fleet public key, the private run directory,
 * inventory and key copies, ansible-playbook's start-up up to its first play),
 * to the last task result (the tasks: SSH connections and modules), to the
 * step's end (ansible's exit, ControlPersist masters stopped, the step's ledger
 * write).
 *
 * bare: ssh-keyscan; an ssh-agent started, loaded and stopped (what the
 * configure step and converges add; onboarding hands ssh a 0600 key copy);
 * ansible-playbook start-up (the same inventory with an
 * empty play: parse, inventory, no connection); the onboarding play with
 * pipelining and ControlPersist (the baseline of bench:onboard), without
 * pipelining, and without ControlPersist, so what each buys is a figure.
 * Medians of BENCH_ROUNDS (default 3).
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { runProcess } from '../src/adapters/process.js';
import { createLoopbackHost, generateKeyPair, type KeyPair } from '../test/support/loopback-host.js';
import { standinPath } from '../test/support/tofu-standin.js';
import { median, provisionRunArgs, fillBenchWorkspace, cliEnv, ansiblePython } from './side-by-side.js';

const root = resolve(import.meta.dirname, '..');
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const onboardPlaybook = join(root, 'playbooks/onboard.yml');

type Phases = Record<string, number>;

/** Stamps each JSON event of `provision run --json` as it arrives and cuts the onboard step into phases. */
async function exocompPhases(
  dir: string,
  host: { address: string; port: number },
  fleet: KeyPair,
  bootstrap: KeyPair,
): Promise<Phases> {
  const ws = await mkdtemp(join(dir, 'exocomp-'));
  await fillBenchWorkspace(ws, host);
  await runProcess('git', ['init', '-q', '--bare', join(ws, 'ledger.git')]);
  const child = spawn(
    process.execPath,
    provisionRunArgs(
      join(root, 'dist/cli.js'),
      ws,
      standinPath,
      fleet.privateKeyPath,
      bootstrap.privateKeyPath,
      '--json',
    ),
    {
      cwd: ws,
      env: cliEnv(ws),
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const stamps: Record<string, number> = {};
  let results = 0;
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  for await (const line of createInterface({ input: child.stdout })) {
    const now = performance.now();
    const event = JSON.parse(line) as { event?: string; step?: string; message?: string };
    if (event.step !== 'onboard') continue;
    if (event.event === 'step-started') stamps.start = now;
    else if (event.event === 'info' && event.message?.startsWith('pinned host keys')) stamps.pinned = now;
    else if (event.event === 'info' && event.message?.startsWith('onboarding play')) stamps.playStarting = now;
    else if (event.event === 'play-started') stamps.firstPlay ??= now;
    else if (event.event === 'task-result') {
      stamps.lastTask = now;
      results += 1;
    } else if (event.event === 'step-succeeded') stamps.end = now;
  }
  const code = await new Promise<number | null>((done) =>
    child.exitCode !== null ? done(child.exitCode) : child.on('close', done),
  );
  const s = stamps as Record<'start' | 'pinned' | 'playStarting' | 'firstPlay' | 'lastTask' | 'end', number>;
  if (code !== 0 || Object.keys(stamps).length < 6) throw new Error(`exocomp run failed (exit ${code}):\n${stderr}`);
  return {
    'inventory read + keyscan + pin write': s.pinned - s.start,
    'fleet public key': s.playStarting - s.pinned,
    'run dir, copies, ansible start-up': s.firstPlay - s.playStarting,
    'tasks (connections, modules)': s.lastTask - s.firstPlay,
    'per task result': (s.lastTask - s.firstPlay) / results,
    'ansible exit, masters, step record': s.end - s.lastTask,
    total: s.end - s.start,
  };
}

const bareScript = `#!/bin/bash
set -euo pipefail
cd "$WS"
ms() { date +%s%3N; }
t0=$(ms)
ssh-keyscan -T 5 -p "$PORT" "$ADDR" > known_hosts 2>/dev/null
t1=$(ms)
printf '{"exocomp_fleet_pubkey": %s}' "$("$PYTHON" -c 'import json,sys; print(json.dumps(open(sys.argv[1]).read().strip()))' "$FLEET.pub")" > onboard-vars.json
printf '{"all":{"hosts":{"web1":{"ansible_host":"%s","ansible_port":%s,"ansible_user":"root"}}}}' "$ADDR" "$PORT" > inventory.json
printf -- '- hosts: all\\n  gather_facts: false\\n  tasks: []\\n' > empty.yml
ssh_args="-o UserKnownHostsFile=$WS/known_hosts -o StrictHostKeyChecking=yes"
export ANSIBLE_HOST_KEY_CHECKING=True
ANSIBLE_SSH_ARGS="$ssh_args" ansible-playbook -i inventory.json empty.yml >>ansible.log
t2=$(ms)
play() { ansible-playbook -i inventory.json --private-key "$BOOTSTRAP" -e @onboard-vars.json "$ONBOARD" >>ansible.log || { cat ansible.log >&2; return 1; }; }
ANSIBLE_PIPELINING=True ANSIBLE_SSH_ARGS="-o ControlMaster=auto -o ControlPersist=60s -o ControlPath=/tmp/bcp-$$-%C $ssh_args" play
t3=$(ms)
ssh -o ControlPath="/tmp/bcp-$$-%C" -O exit -p "$PORT" "root@$ADDR" 2>/dev/null || true
ANSIBLE_PIPELINING=False ANSIBLE_SSH_ARGS="-o ControlMaster=auto -o ControlPersist=60s -o ControlPath=/tmp/bcq-$$-%C $ssh_args" play
t4=$(ms)
ssh -o ControlPath="/tmp/bcq-$$-%C" -O exit -p "$PORT" "root@$ADDR" 2>/dev/null || true
ANSIBLE_PIPELINING=True ANSIBLE_SSH_ARGS="-o ControlMaster=no $ssh_args" play
t5=$(ms)
eval "$(ssh-agent -s)" >/dev/null
ssh-add -q "$FLEET"
ssh-agent -k >/dev/null
t6=$(ms)
echo "$((t1-t0)) $((t2-t1)) $((t3-t2)) $((t4-t3)) $((t5-t4)) $((t6-t5))"
`;

async function barePhases(
  dir: string,
  host: { address: string; port: number },
  fleet: KeyPair,
  bootstrap: KeyPair,
): Promise<Phases> {
  const ws = await mkdtemp(join(dir, 'bare-'));
  await writeFile(join(ws, 'profile.sh'), bareScript, { mode: 0o755 });
  await writeFile(`${fleet.privateKeyPath}.pub`, `${fleet.publicKey}\n`);
  const result = await runProcess('bash', [join(ws, 'profile.sh')], {
    env: {
      ...process.env,
      WS: ws,
      PYTHON: await ansiblePython(),
      ADDR: host.address,
      PORT: String(host.port),
      FLEET: fleet.privateKeyPath,
      BOOTSTRAP: bootstrap.privateKeyPath,
      ONBOARD: onboardPlaybook,
    },
  });
  if (result.code !== 0)
    throw new Error(
      `bare profile failed:\n${result.stdout}\n${result.stderr}\n${await readFile(join(ws, 'ansible.log'), 'utf8').catch(() => '')}`,
    );
  const [keyscan, startup, play, noPipelining, noControlPersist, agent] = result.stdout
    .trim()
    .split(' ')
    .map(Number) as [number, number, number, number, number, number];
  return {
    'bare ssh-keyscan': keyscan,
    'bare ansible start-up (empty play)': startup,
    'bare play: pipelining + ControlPersist (baseline)': play,
    'bare play: no pipelining': noPipelining,
    'bare play: no ControlPersist': noControlPersist,
    'bare ssh-agent start, ssh-add, stop (configure and converge only)': agent,
  };
}

const dir = await mkdtemp(join(tmpdir(), 'exocomp-bench-onboard-profile-'));
const all: Record<string, number[]> = {};
try {
  for (let i = 0; i < rounds; i++) {
    for (const kind of i % 2 === 0 ? (['bare', 'exocomp'] as const) : (['exocomp', 'bare'] as const)) {
      const bootstrap = await generateKeyPair(dir, `bootstrap-${i}-${kind}`);
      const fleet = await generateKeyPair(dir, `fleet-${i}-${kind}`);
      const host = await createLoopbackHost({ rootAuthorizedKey: bootstrap.publicKey, port: 2222 });
      await host.start();
      try {
        const phases =
          kind === 'exocomp'
            ? await exocompPhases(dir, host, fleet, bootstrap)
            : await barePhases(dir, host, fleet, bootstrap);
        for (const [name, ms] of Object.entries(phases))
          (all[kind === 'exocomp' ? `exocomp ${name}` : name] ??= []).push(ms);
        console.log(`round ${i + 1} ${kind} done`);
      } finally {
        await host.destroy();
      }
    }
  }
  console.log(`\nonboarding profile, median of ${rounds} (ms):`);
  for (const [name, values] of Object.entries(all))
    console.log(
      `  ${name.padEnd(66)} ${String(Math.round(median(values))).padStart(6)}   [${values.map((v) => Math.round(v)).join(', ')}]`,
    );
} finally {
  await rm(dir, { recursive: true, force: true });
}
