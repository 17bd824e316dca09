import type { Command } from 'commander';
import { z } from 'zod';
import { UsageError } from '../../domain/errors.js';
import { parseInventoryRef } from '../../domain/names.js';
import { checkShardSpec, parseShardNumber } from '../../domain/shard.js';
import { readStandingInventory, shardOfInventory } from '../../app/hosts/inventories.js';
import { addLedgerOptions, buildContext, globalSettings, parseOptions, type Io } from '../common.js';

function standingName(raw: string): string {
  const ref = parseInventoryRef(raw);
  if (ref.kind !== 'standing')
    throw new UsageError(`${raw} is not a standing inventory`, 'name it as tf:<workspace-name>');
  return ref.name;
}

const shardOptions = z
  .object({ index: z.string(), shards: z.string() })
  .transform((o) => checkShardSpec(parseShardNumber(o.index, '--index'), parseShardNumber(o.shards, '--shards')));

export function registerInventory(program: Command, io: Io): void {
  const inventory = program.command('inventory').description('standing inventories tf:<name>');
  addLedgerOptions(
    inventory
      .command('show')
      .description('print a standing inventory, its hosts and where it came from (fails closed like a play would)')
      .argument('<ref>', 'tf:<name>'),
  ).action(async (raw: string, options: Record<string, unknown>) => {
    const name = standingName(raw);
    const settings = globalSettings(options);
    const resolved = await readStandingInventory(await buildContext(settings, io), name);
    const m = resolved.record.materialized!;
    if (settings.json) {
      io.out(JSON.stringify({ name, materialized: m, hosts: resolved.hosts, inventory: resolved.inventory }));
      return;
    }
    io.out(
      `tf:${name}  ${m.hostCount} host(s) from ${m.source}, applied ${m.appliedAt}${m.workflowId ? ` by ${m.workflowId}` : ''}`,
    );
    for (const h of resolved.hosts)
      io.out(`  ${h.name}  ${h.local ? 'local' : `${h.address}:${h.port}`}${h.user ? `  user ${h.user}` : ''}`);
  });

  addLedgerOptions(
    inventory
      .command('shard')
      .description(
        'print the hosts of one shard of tf:<name>: rendezvous hashing on the host name, so a host joining or leaving moves no other host',
      )
      .argument('<ref>', 'tf:<name>')
      .requiredOption('--shards <N>', 'how many shards the fleet is split into (1–256)')
      .requiredOption('--index <i>', 'which shard, from 1 to N (GitLab: $CI_NODE_INDEX)'),
  ).action(async (raw: string, options: Record<string, unknown>) => {
    const name = standingName(raw);
    const spec = parseOptions(shardOptions, options);
    const settings = globalSettings(options);
    const { hosts, fleetSize } = await shardOfInventory(await buildContext(settings, io), name, spec);
    if (settings.json) io.out(JSON.stringify({ name, shard: spec, hosts, fleetSize }));
    else for (const host of hosts) io.out(host);
  });
}
