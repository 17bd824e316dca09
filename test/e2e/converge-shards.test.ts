/**
 * Issue 12 acceptance, sharding: a converge of 6 hosts over 3 shards (run at
 * once, as a matrix would) whose folded record names all 6. The hosts are
 * cheap ones (ansible_connection: local) and the play is trivial: what is under
 * test is the split, the per-shard records and the fold.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConvergeRun } from '../../src/domain/converge-record.js';
import { shardOf } from '../../src/domain/shard.js';
import { createChainFixture, type ChainFixture } from '../support/chain-fixture.js';

const HOSTS = ['h1', 'h2', 'h3', 'h4', 'h5', 'h6'];
const PLAY = `- hosts: all
  gather_facts: false
  tasks:
    - name: Trivial
      ansible.builtin.ping:
    - name: One host is broken
      ansible.builtin.fail: { msg: "h4 is broken" }
      when: inventory_hostname == 'h4'
`;

describe('a converge split over 3 shards', () => {
  let fx: ChainFixture;

  beforeAll(async () => {
    fx = await createChainFixture('edge');
    await writeFile(join(fx.dir, 'trivial.yml'), PLAY);
    const local = { ansible_connection: 'local', ansible_python_interpreter: '/usr/bin/python3' };
    await fx.setInventory({ all: { hosts: Object.fromEntries(HOSTS.map((h) => [h, local])) } });
    const apply = await fx.cli(['workspace', 'apply', fx.workspace, '--workspace-name', 'fleet', ...fx.common]);
    expect(apply.code, apply.stderr).toBe(0);
  });

  afterAll(async () => {
    await fx?.cleanup();
  });

  it('runs every host in exactly one shard, and the fold names all 6 and the failed one with its shard', async () => {
    const listed = await Promise.all(
      [1, 2, 3].map((i) =>
        fx.cli(['inventory', 'shard', 'tf:fleet', '--shards', '3', '--index', String(i), ...fx.ledgerArgs]),
      ),
    );
    const split = listed.map((r) => r.stdout.split('\n').filter(Boolean));
    expect(split.flat().sort()).toEqual(HOSTS);
    for (const [i, hosts] of split.entries()) for (const h of hosts) expect(shardOf(h, 3)).toBe(i + 1);

    const shards = await Promise.all(
      [1, 2, 3].map((i) =>
        fx.cli([
          'playbook',
          'run',
          'trivial.yml',
          '--inventory',
          'tf:fleet',
          '--shard',
          `${i}/3`,
          '--run-id',
          '4242',
          ...fx.ledgerArgs,
        ]),
      ),
    );
    const brokenShard = shardOf('h4', 3);
    for (const [i, r] of shards.entries()) expect(r.code, r.stderr).toBe(i + 1 === brokenShard ? 1 : 0);

    const fold = await fx.cli([
      'converge',
      'fold',
      'tf:fleet',
      '--run-id',
      '4242',
      '--shards',
      '3',
      ...fx.ledgerArgs,
      '--json',
    ]);
    expect(fold.code, fold.stderr).toBe(1);
    const run = (JSON.parse(fold.stdout) as { result: ConvergeRun }).result;
    expect(run.hosts.map((h) => h.host)).toEqual(HOSTS);
    expect(run.hosts.filter((h) => !h.ok)).toEqual([{ host: 'h4', shard: brokenShard, ok: false, reason: 'failed' }]);
    expect(run.missingShards).toEqual([]);
    expect(run.failedShards).toEqual([brokenShard]);
    const history = JSON.parse((await fx.ledgerFile('converges/fleet/history.json')) ?? '{}') as {
      runs: ConvergeRun[];
    };
    expect(history.runs.map((r) => r.runId)).toEqual(['4242']);
    // The folded shard records left the branch; its history keeps them.
    expect(await fx.ledgerFile(`converges/fleet/shards/4242/${brokenShard}.json`)).toBeUndefined();

    const text = await fx.cli(['converge', 'fold', 'tf:fleet', '--run-id', '4243', '--shards', '3', ...fx.ledgerArgs]);
    expect(text.code).toBe(1);
    expect(text.stdout).toContain('shard(s) 1/3, 2/3, 3/3 never reported');
  });

  it('refuses --shard without a run id, and a bad shard, as bad usage', async () => {
    expect(
      (await fx.cli(['playbook', 'run', 'trivial.yml', '--inventory', 'tf:fleet', '--shard', '1/3', ...fx.ledgerArgs]))
        .code,
    ).toBe(2);
    expect(
      (
        await fx.cli([
          'playbook',
          'run',
          'trivial.yml',
          '--inventory',
          'tf:fleet',
          '--shard',
          '4/3',
          '--run-id',
          '1',
          ...fx.ledgerArgs,
        ])
      ).code,
    ).toBe(2);
  });
});
