/** Reads `tf:<name>` from the ledger (and one shard of it), failing closed (docs/architecture.md, "The standing inventory"). */
import {
  resolveStandingInventory,
  InventoryUnusableError,
  type ResolvedInventory,
} from '../../domain/standing-inventory.js';
import { LedgerRecordError, readInventoryFile, readInventoryRecord } from '../../ledger/records.js';
import type { LedgerSnapshot } from '../../ledger/store.js';
import { hostsOfShard, type ShardSpec } from '../../domain/shard.js';
import type { AppContext } from '../runtime/context.js';
import { underHostKeyMode, type HostKeyMode } from '../../domain/host-trust.js';
import { throughRunBastion, type Hop } from '../../domain/bastion.js';

export function loadStandingInventory(snapshot: LedgerSnapshot, name: string): ResolvedInventory {
  let record;
  try {
    record = readInventoryRecord(snapshot, name);
  } catch (error) {
    if (error instanceof LedgerRecordError) {
      throw new InventoryUnusableError(
        'corrupt',
        `inventory tf:${name} is corrupt: ${error.message}`,
        're-apply the workspace, or restore the record from the ledger branch history',
      );
    }
    throw error;
  }
  return resolveStandingInventory(name, record, readInventoryFile(snapshot, name));
}

/** `inventory show`: tf:<name> as a play would get it (fails closed like a play). */
export async function readStandingInventory(app: AppContext, name: string): Promise<ResolvedInventory> {
  return loadStandingInventory(await app.store.read(), name);
}

/** `inventory shard`: the hosts of one shard of tf:<name>, and how many hosts the fleet has. */
export async function shardOfInventory(
  app: AppContext,
  name: string,
  shard: ShardSpec,
): Promise<{ hosts: string[]; fleetSize: number }> {
  const resolved = await readStandingInventory(app, name);
  const names = resolved.hosts.map((h) => h.name);
  return { hosts: hostsOfShard(names, shard), fleetSize: names.length };
}

/** The run settings that decide how its hosts are reached: how first contact is trusted, and the run's own bastion. */
export interface RunReach {
  hostKeys: HostKeyMode;
  bastion?: Hop | undefined;
  /** The user the run's plays log in as after onboarding: the run's bastion's user when none is given with it. */
  playUser?: string | undefined;
}

/**
 * The inventory as the run reaches it: its `host-keys` mode checks the hosts
 * (domain/host-trust.ts), then the run's bastion goes in front of every SSH host
 * (domain/bastion.ts). Called by every step and play that would contact them,
 * so `known` refuses a host without a known key before any connection.
 */
export function asTheRunReachesIt(inventory: ResolvedInventory, reach: RunReach): ResolvedInventory {
  return {
    ...inventory,
    hosts: throughRunBastion(underHostKeyMode(inventory.hosts, reach.hostKeys), reach.bastion, reach.playUser),
  };
}
