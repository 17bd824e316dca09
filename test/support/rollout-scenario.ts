/**
 * A rolling converge over real loopback sshd hosts (issue 41), shared by the
 * default suite (20 hosts, 2 shards) and test:fleet (200 hosts, 4 shards): the
 * chain onboards the hosts, then `playbook run --rollout 1,10%,100%
 * --max-failures 2%` runs on every shard at once. 5 % of the hosts carry a
 * marker that fails the play; they sit in batch 2, so the budget is spent
 * there. Each host's sshd log says who logged in as the fleet user.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { freeAddresses } from './addresses.js';
import { createChainFixture, sshHostVars, type ChainFixture, type CliResult } from './chain-fixture.js';
import { createLoopbackHost, type LoopbackHost } from './loopback-host.js';

/** A host carrying this file fails the converge play; one carrying the other fails the health check. */
export const FAIL_MARKER = '/srv/exocomp-fail';
export const UNHEALTHY_MARKER = '/srv/exocomp-unhealthy';

/** A play whose one task fails on a host carrying `marker`. */
function markerPlay(name: string, marker: string): string {
  return `- name: ${name}
  hosts: all
  gather_facts: false
  tasks:
    - name: Fail where the marker says so
      ansible.builtin.raw: test ! -e ${marker}
`;
}

/** Hosts started at once (each an ssh-keygen, a namespace and an sshd). */
const START_BATCH = 16;

export interface RolloutScenario {
  fx: ChainFixture;
  hosts: LoopbackHost[];
  /** Inventory names in rollout order (sorted), index i naming hosts[i]. */
  names: string[];
  provisioned: CliResult;
  /** Every shard of one run with these extra arguments, at once. */
  rollOut(runId: string, shards: number, extra: string[]): Promise<CliResult[]>;
  /** Fleet-user logins per host so far. */
  fleetLogins(): Promise<number[]>;
  cleanup(): Promise<void>;
}

export async function createRolloutScenario(count: number): Promise<RolloutScenario> {
  const fx = await createChainFixture('edge');
  const hosts: LoopbackHost[] = [];
  const width = String(count - 1).length;
  const names = Array.from({ length: count }, (_, i) => `h${String(i).padStart(width, '0')}`);
  const scenario: RolloutScenario = {
    fx,
    hosts,
    names,
    provisioned: { code: -1, stdout: '', stderr: '' },
    rollOut: (runId, shards, extra) =>
      Promise.all(
        Array.from({ length: shards }, (_, i) =>
          fx.cli([
            ...['playbook', 'run', 'converge.yml', '--inventory', 'tf:fleet'],
            ...(shards > 1 ? ['--shard', `${i + 1}/${shards}`] : []),
            ...['--run-id', runId, ...extra, ...fx.ledgerArgs, '--fleet-key', fx.fleet.privateKeyPath],
          ]),
        ),
      ),
    fleetLogins: async () => {
      const counts: number[] = [];
      for (let i = 0; i < hosts.length; i += START_BATCH)
        for (const log of await Promise.all(hosts.slice(i, i + START_BATCH).map((h) => h.sshdLog())))
          counts.push(log.match(/Accepted publickey for exocomp /g)?.length ?? 0);
      return counts;
    },
    cleanup: async () => {
      for (let i = 0; i < hosts.length; i += START_BATCH)
        await Promise.all(hosts.slice(i, i + START_BATCH).map((host) => host.destroy()));
      await fx.cleanup();
    },
  };
  const addresses = await freeAddresses(count);
  for (let i = 0; i < count; i += START_BATCH) {
    const started = await Promise.all(
      addresses.slice(i, i + START_BATCH).map(async (address) => {
        const host = await createLoopbackHost({ address, rootAuthorizedKey: fx.bootstrap.publicKey });
        await host.start();
        return host;
      }),
    );
    hosts.push(...started);
  }
  await fx.setInventory({ all: { hosts: Object.fromEntries(hosts.map((h, i) => [names[i], sshHostVars(h)])) } });
  await writeFile(join(fx.dir, 'converge.yml'), markerPlay('Converge', FAIL_MARKER));
  await writeFile(join(fx.dir, 'health.yml'), markerPlay('Health', UNHEALTHY_MARKER));
  // The chain configures with a play that touches nothing the rollout reads.
  await mkdir(join(fx.dir, 'noop'), { recursive: true });
  await writeFile(
    join(fx.dir, 'noop', 'site.yml'),
    '- hosts: all\n  gather_facts: false\n  tasks:\n    - ansible.builtin.raw: "true"\n',
  );
  scenario.provisioned = await fx.cli([
    ...['provision', 'run', fx.workspace, 'noop/site.yml', ...fx.keys, '--workspace-name', 'fleet'],
  ]);
  return scenario;
}
