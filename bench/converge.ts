/**
 * Converge throughput benchmark (needs root: it starts loopback sshd hosts).
 *
 *   node --import tsx bench/converge.ts [--sizes 10,50,100] [--fleet 1000] [--window 600]
 *
 * For each fleet size: hosts/second of a trivial play (one `ping` task,
 * no facts) at ansible's default forks (5), through exocomp's run boundary
 * (runPlay: private inventory copy, pinned known_hosts with strict checking,
 * its own ControlPath, scrubbed environment, the events callback) beside the
 * bare `ansible-playbook` of the same play and inventory in the same run.
 * Then the shard count recommended for a fleet of --fleet hosts converged in a
 * --window second window, from the measured rate of the largest size.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { runProcess } from '../src/adapters/process.js';
import { runPlay } from '../src/app/plays/play.js';
import { SecretRegistry } from '../src/app/runtime/secrets.js';
import { parseKnownHosts, renderKnownHosts } from '../src/domain/known-hosts.js';
import { recommendShards } from '../src/domain/shard.js';
import { createLoopbackHost, generateKeyPair, type LoopbackHost } from '../test/support/loopback-host.js';

function argument(name: string, fallback: string): string {
  const index = process.argv.indexOf(`--${name}`);
  return index >= 0 ? (process.argv[index + 1] ?? fallback) : fallback;
}

const SIZES = argument('sizes', '10,50,100')
  .split(',')
  .map((s) => Number(s));
const FLEET = Number(argument('fleet', '1000'));
const WINDOW_SECONDS = Number(argument('window', '600'));
if (SIZES.some((n) => !Number.isInteger(n) || n < 1) || !(FLEET > 0) || !(WINDOW_SECONDS > 0))
  throw new Error('bad arguments');

const PLAY = `- hosts: all
  gather_facts: false
  tasks:
    - name: Trivial
      ansible.builtin.ping:
`;

const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

async function main(): Promise<void> {
  const root = await mkdtemp(join(tmpdir(), 'exo-bench-conv-'));
  const hosts: LoopbackHost[] = [];
  try {
    const key = await generateKeyPair(root, 'bench');
    const playbook = join(root, 'trivial.yml');
    await writeFile(playbook, PLAY);
    const largest = Math.max(...SIZES);
    console.log(
      `bench:converge — ${availableParallelism()} CPU(s), load ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')} at start`,
    );
    console.log(`starting ${largest} loopback sshd hosts…`);
    for (let i = 0; i < largest; i += 1) hosts.push(await createLoopbackHost({ rootAuthorizedKey: key.publicKey }));
    await Promise.all(hosts.map((h) => h.start()));
    // The hosts' own public keys (a 100-host keyscan on a loaded machine times out some of them).
    const knownHosts = `${(await Promise.all(hosts.map(async (h) => `${h.knownHostsName} ${(await h.hostPublicKey()).trim()}`))).join('\n')}\n`;
    const knownHostsFile = join(root, 'known_hosts');
    await writeFile(knownHostsFile, knownHosts);

    console.log('');
    console.log('hosts | exocomp (runPlay) | bare ansible-playbook | ratio | exocomp hosts/s');
    console.log('----- | ----------------- | --------------------- | ----- | ---------------');
    let lastRate = 0;
    for (const size of SIZES) {
      const inventory = {
        all: {
          hosts: Object.fromEntries(
            hosts.slice(0, size).map((h, i) => [`h${i + 1}`, { ansible_host: h.address, ansible_port: h.port }]),
          ),
        },
      };
      const inventoryText = JSON.stringify(inventory);
      const inventoryFile = join(root, `inventory-${size}.json`);
      await writeFile(inventoryFile, inventoryText);

      const bareStart = performance.now();
      const bare = await runProcess(
        'ansible-playbook',
        ['-i', inventoryFile, '-u', 'root', '--private-key', key.privateKeyPath, playbook],
        {
          cwd: root,
          env: {
            PATH: process.env.PATH,
            HOME: root,
            ANSIBLE_HOST_KEY_CHECKING: 'True',
            ANSIBLE_SSH_ARGS: `-o ControlMaster=auto -o ControlPersist=60s -o UserKnownHostsFile=${knownHostsFile} -o StrictHostKeyChecking=yes`,
            ANSIBLE_PYTHON_INTERPRETER: 'auto_silent',
          },
        },
      );
      const bareMs = performance.now() - bareStart;
      if (bare.code !== 0) throw new Error(`bare ansible-playbook failed (${bare.code}):\n${bare.stdout.slice(-2000)}`);

      const start = performance.now();
      const outcome = await runPlay({
        playbook,
        cwd: root,
        // ansible's default forks, as the bare side runs (exocomp would derive them from the host count).
        parentEnv: { PATH: process.env.PATH, HOME: root, ANSIBLE_FORKS: '5' },
        inventoryText,
        knownHosts: renderKnownHosts(parseKnownHosts(knownHosts)),
        remoteUser: 'root',
        identityFile: key.privateKeyPath,
        secrets: new SecretRegistry(),
      });
      const ms = performance.now() - start;
      if (outcome.code !== 0) throw new Error(`runPlay failed (${outcome.code}):\n${outcome.stdout.slice(-2000)}`);
      lastRate = size / (ms / 1000);
      console.log(
        `${String(size).padStart(5)} | ${seconds(ms).padStart(17)} | ${seconds(bareMs).padStart(21)} | ${(ms / bareMs).toFixed(2).padStart(5)} | ${lastRate.toFixed(2).padStart(15)}`,
      );
    }

    const recommendation = recommendShards(FLEET, lastRate, WINDOW_SECONDS);
    console.log('');
    console.log(
      `recommended shards for ${FLEET} hosts in a ${WINDOW_SECONDS} s window, at the ${largest}-host rate (default forks, one runner per shard):`,
    );
    for (const line of recommendation.lines) console.log(`  ${line}`);
    console.log(`  → schedule add --shards ${recommendation.shards}`);
    console.log(
      `load ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')} at end`,
    );
  } finally {
    await Promise.all(hosts.map((h) => h.destroy()));
    await rm(root, { recursive: true, force: true });
  }
}

await main();
