/**
 * Fleet scale (issue 29, Accepted 2): 200+ loopback hosts provisioned and then
 * converged through the CLI bundle, with every host's sshd throttled
 * (MaxStartups 1:100:1: one unauthenticated connection at a time). While the
 * chain's host-key scan makes its first pass, the test holds each host's one
 * startup slot with a silent connection, so every host refuses that pass; the
 * scan still pins every host, on its retries (slower). The configure play and
 * the converge of tf:<workspace> are one `raw` task each, appending the host's
 * inventory name to a marker on the host: after both, each host holds its own
 * name twice.
 *
 * Minutes of CPU at 200 hosts, so not in ./scripts/test: `npm run test:fleet`
 * (vitest.fleet.config.ts) runs it; EXOCOMP_FLEET_HOSTS sets the count
 * (default 200).
 */
import type { Socket } from 'node:net';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProcess } from '../../src/adapters/process.js';
import { freeAddresses, silentConnection } from '../support/addresses.js';
import {
  createChainFixture,
  sshHostVars,
  workflowIdFrom,
  type ChainFixture,
  type CliResult,
} from '../support/chain-fixture.js';
import { createLoopbackHost, type LoopbackHost } from '../support/loopback-host.js';
import { scaled } from '../support/time.js';

const HOST_COUNT = Number(process.env.EXOCOMP_FLEET_HOSTS ?? 200);
const WORKSPACE = 'fleet';
/** Where each play appends the host's inventory name, on the host (a fresh tmpfs per loopback host). */
const MARKER = '/tmp/exocomp-fleet-marks';
/** Hosts started (each an ssh-keygen, a namespace and an sshd) at once. */
const START_BATCH = 16;
/** Generous: the chain's time grows with the host count, and a shared machine is slow. */
const TIMEOUT_MS = scaled(300_000 + HOST_COUNT * 4_000);

const MARK_PLAYBOOK = `- name: Mark the host
  hosts: all
  gather_facts: false
  tasks:
    - name: Append the inventory name
      ansible.builtin.raw: echo {{ inventory_hostname }} >> ${MARKER}
`;

function output(result: CliResult): string {
  return `exit ${result.code}\n--- stdout\n${result.stdout}\n--- stderr\n${result.stderr}`;
}

/** One ssh-keyscan call the CLI made: the gate's pid, and the addresses the call names (after its `--`). */
interface ScanCall {
  id: string;
  addresses: string[];
  /** As logged: `pid arguments…` */
  line: string;
}

interface KeyscanGate {
  env: NodeJS.ProcessEnv;
  calls(): Promise<ScanCall[]>;
  open(call: ScanCall): Promise<void>;
}

/**
 * A gate in front of the real ssh-keyscan, first on the CLI's PATH: each call
 * logs its pid and arguments, waits until the test opens its gate (a file named
 * by that pid), then runs the real one.
 */
async function keyscanGate(dir: string): Promise<KeyscanGate> {
  const bin = join(dir, 'keyscan-gate');
  const gates = join(dir, 'keyscan-gates');
  const log = join(dir, 'keyscan-calls.log');
  const real = (await runProcess('sh', ['-c', 'command -v ssh-keyscan'])).stdout.trim();
  await mkdir(bin);
  await mkdir(gates);
  await writeFile(
    join(bin, 'ssh-keyscan'),
    `#!/bin/sh\necho "$$ $*" >> '${log}'\nwhile [ ! -e '${gates}/'$$ ]; do sleep 0.05; done\nexec '${real}' "$@"\n`,
  );
  await chmod(join(bin, 'ssh-keyscan'), 0o755);
  return {
    env: { PATH: `${bin}:${process.env.PATH ?? ''}` },
    async calls() {
      const lines = (await readFile(log, 'utf8').catch(() => '')).split('\n').slice(0, -1);
      return lines.map((line) => ({
        id: line.slice(0, line.indexOf(' ')),
        addresses: line.slice(line.indexOf(' -- ') + 4).split(' '),
        line,
      }));
    },
    open: (call) => writeFile(join(gates, call.id), ''),
  };
}

/**
 * Lets the scan's calls through the gate until the chain ends: the first after
 * every host's one startup slot is filled, the first retry (a call naming a
 * host already asked) after they are freed. So every first-pass connection
 * meets a full host, and every retry an idle one.
 */
async function throttleTheScan(hosts: readonly LoopbackHost[], gate: KeyscanGate, chain: Promise<CliResult>) {
  let ended = false;
  void chain.then(() => (ended = true));
  const opened = new Set<string>();
  const asked = new Set<string>();
  let busy: Socket[] | undefined;
  let freed = false;
  try {
    while (!ended) {
      for (const call of await gate.calls()) {
        if (opened.has(call.id)) continue;
        busy ??= await Promise.all(hosts.map(silentConnection));
        if (!freed && call.addresses.some((address) => asked.has(address))) {
          busy.forEach((socket) => socket.destroy());
          freed = true;
        }
        call.addresses.forEach((address) => asked.add(address));
        await gate.open(call);
        opened.add(call.id);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  } finally {
    busy?.forEach((socket) => socket.destroy());
  }
}

describe(`${HOST_COUNT} loopback hosts whose sshd takes one unauthenticated connection at a time`, () => {
  let fx: ChainFixture;
  const hosts: LoopbackHost[] = [];
  const names: string[] = [];
  let scanCalls: ScanCall[];
  let provisioned: CliResult;
  let converged: CliResult;

  beforeAll(async () => {
    fx = await createChainFixture('edge');
    const addresses = await freeAddresses(HOST_COUNT);
    for (let i = 0; i < HOST_COUNT; i += START_BATCH) {
      await Promise.all(
        addresses.slice(i, i + START_BATCH).map(async (address) => {
          const host = await createLoopbackHost({
            address,
            rootAuthorizedKey: fx.bootstrap.publicKey,
            maxStartups: '1:100:1',
          });
          hosts.push(host);
          await host.start();
        }),
      );
    }
    hosts.forEach((_, i) => names.push(`h${String(i).padStart(3, '0')}`));
    await fx.setInventory({ all: { hosts: Object.fromEntries(hosts.map((h, i) => [names[i], sshHostVars(h)])) } });
    await writeFile(join(fx.dir, 'mark.yml'), MARK_PLAYBOOK);

    const gate = await keyscanGate(fx.dir);
    const { done } = fx.spawnCli(
      ['provision', 'run', fx.workspace, 'mark.yml', ...fx.keys, '--workspace-name', WORKSPACE],
      { env: gate.env },
    );
    await throttleTheScan(hosts, gate, done);
    provisioned = await done;
    scanCalls = await gate.calls();
    if (provisioned.code === 0) {
      converged = await fx.cli([
        ...['playbook', 'run', 'mark.yml', '--inventory', `tf:${WORKSPACE}`],
        ...fx.ledgerArgs,
        ...['--fleet-key', fx.fleet.privateKeyPath],
      ]);
    }
  }, TIMEOUT_MS);

  afterAll(async () => {
    for (let i = 0; i < hosts.length; i += START_BATCH) {
      await Promise.all(hosts.slice(i, i + START_BATCH).map((host) => host.destroy()));
    }
    await fx?.cleanup();
  }, TIMEOUT_MS);

  it('refuse the scan’s first pass, and are all pinned on its retries', async () => {
    const calls = scanCalls.map((call) => call.line.replace(/ -- .*/, ` -- (${call.addresses.length} hosts)`));
    expect(provisioned.code, `${output(provisioned)}\n--- ssh-keyscan calls\n${calls.join('\n')}`).toBe(0);
    expect(provisioned.stdout).toMatch(/workflow\s+\S+\s+provisioned/);
    // Every host was asked again: none answered while its slot was held.
    const timesAsked = new Map<string, number>();
    for (const address of scanCalls.flatMap((call) => call.addresses))
      timesAsked.set(address, (timesAsked.get(address) ?? 0) + 1);
    expect(hosts.filter((h) => (timesAsked.get(h.address) ?? 0) < 2).map((h) => h.address)).toEqual([]);
    const known = (await fx.ledgerFile('known_hosts')) ?? '';
    const pinned = new Set(known.split('\n').map((line) => line.split(' ').slice(0, 3).join(' ')));
    const unpinned: string[] = [];
    for (const host of hosts) {
      if (!pinned.has(`${host.knownHostsName} ${await host.hostPublicKey()}`)) unpinned.push(host.knownHostsName);
    }
    expect(unpinned).toEqual([]);
  });

  it('are each configured by the chain and converged through tf:<workspace>, each on itself', async () => {
    expect(converged?.code, converged && output(converged)).toBe(0);
    const workflow = JSON.parse((await fx.ledgerFile(`workflows/${workflowIdFrom(provisioned)}.json`))!) as {
      steps: { state: string }[];
    };
    expect(workflow.steps.map((s) => s.state)).toEqual(['succeeded', 'succeeded', 'succeeded', 'succeeded']);
    const wrong: string[] = [];
    for (let i = 0; i < hosts.length; i += START_BATCH) {
      const marks = await Promise.all(hosts.slice(i, i + START_BATCH).map((host) => host.readFile(MARKER)));
      marks.forEach((mark, j) => {
        const name = names[i + j]!;
        if (mark !== `${name}\n${name}\n`) wrong.push(`${name}: ${JSON.stringify(mark)}`);
      });
    }
    expect(wrong).toEqual([]);
  });
});
