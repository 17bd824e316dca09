import type { Command } from 'commander';
import { UsageError } from '../../domain/errors.js';
import { parseInventoryRef } from '../../domain/names.js';
import { checkShardSpec, hostsOfShard, parseShardNumber } from '../../domain/shard.js';
import { loadStandingInventory } from '../../app/inventories.js';
import { addLedgerOptions, buildContext, globalSettings, type Io } from '../common.js';

export function registerInventory(program: Command, io: Io): void {
  const inventory = program.command('inventory').description('standing inventories tf:<name>');
  addLedgerOptions(
    inventory.command('show').description('print a standing inventory, its hosts and where it came from (fails closed like a play would)').argument('<ref>', 'tf:<name>'),
  ).action(async (raw: string, options: Record<string, unknown>) => {
    const ref = parseInventoryRef(raw);
    if (ref.kind !== 'standing') throw new UsageError(`${raw} is not a standing inventory`, 'name it as tf:<workspace-name>');
    const settings = globalSettings(options);
    const context = await buildContext(settings, io);
    const resolved = loadStandingInventory(await context.store.read(), ref.name);
    const m = resolved.record.materialized!;
    if (settings.json) {
      io.out(JSON.stringify({ name: ref.name, materialized: m, hosts: resolved.hosts, inventory: resolved.inventory }));
      return;
    }
    io.out(`tf:${ref.name}  ${m.hostCount} host(s) from ${m.source}, applied ${m.appliedAt}${m.workflowId ? ` by ${m.workflowId}` : ''}`);
    for (const h of resolved.hosts) io.out(`  ${h.name}  ${h.local ? 'local' : `${h.address}:${h.port}`}${h.user ? `  user ${h.user}` : ''}`);
  });

  addLedgerOptions(
    inventory
      .command('shard')
      .description('print the hosts of one shard of tf:<name>: rendezvous hashing on the host name, so a host joining or leaving moves no other host')
      .argument('<ref>', 'tf:<name>')
      .requiredOption('--shards <N>', 'how many shards the fleet is split into (1–256)')
      .requiredOption('--index <i>', 'which shard, from 1 to N (GitLab: $CI_NODE_INDEX)'),
  ).action(async (raw: string, options: Record<string, unknown>) => {
    const ref = parseInventoryRef(raw);
    if (ref.kind !== 'standing') throw new UsageError(`${raw} is not a standing inventory`, 'name it as tf:<workspace-name>');
    const spec = checkShardSpec(parseShardNumber(String(options.index), '--index'), parseShardNumber(String(options.shards), '--shards'));
    const settings = globalSettings(options);
    const context = await buildContext(settings, io);
    const resolved = loadStandingInventory(await context.store.read(), ref.name);
    const hosts = hostsOfShard(
      resolved.hosts.map((h) => h.name),
      spec,
    );
    if (settings.json) io.out(JSON.stringify({ name: ref.name, shard: spec, hosts, fleetSize: resolved.hosts.length }));
    else for (const host of hosts) io.out(host);
  });
}
