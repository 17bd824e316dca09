/**
 * A play against an inventory named by reference: `tf:<name>` (the standing
 * inventory, failing closed, with the workspace's sealed outputs) or a plain
 * file (no sealed outputs: they reach only runs that name the inventory).
 */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { ExocompError } from '../../domain/errors.js';
import type { PinnedKnownHosts } from '../../domain/known-hosts.js';
import type { InventoryRef } from '../../domain/names.js';
import { unsealOutputs } from '../../domain/seal.js';
import { restrictInventory } from '../../domain/shard.js';
import { renderAnsibleInventory } from '../../domain/inventory.js';
import { throughRunBastion, type Hop } from '../../domain/bastion.js';
import { readPinnedKnownHosts, readSealedOutputs } from '../../ledger/records.js';
import type { LedgerSnapshot } from '../../ledger/store.js';
import type { AppContext } from '../runtime/context.js';
import { loadStandingInventory } from '../hosts/inventories.js';
import { runPlay, type PlayOutcome, type PlayRequest } from './play.js';
import type { AnsibleEvent } from '../../domain/play-events.js';
import type { SecretRegistry } from '../runtime/secrets.js';

export interface StandingPlayRequest {
  name: string;
  playbook: string;
  remoteUser?: string;
  fleetKeyPath?: string;
  /** An agent already holding the fleet key (see PlayRequest.agent). */
  fleetAgent?: PlayRequest['agent'];
  fleetConnections?: PlayRequest['controlDir'];
  /** A key file granted to the run as its identity (a 0600 copy), never a directory. */
  identityFile?: string;
  sealKey?: string | undefined;
  runSecrets: Record<string, string>;
  /** Extra vars for the play (passed as data, -e @file.json). */
  extraVars?: Record<string, unknown>;
  check?: boolean;
  /** --diff: changed tasks report their diffs (in the outcome's events). */
  diff?: boolean;
  /** The run's bastion: every SSH host of tf:<name> is reached through it (domain/bastion.ts). */
  bastion?: Hop | undefined;
  /** Run against only these hosts of the inventory (a shard, or the hosts a check can reach). */
  onlyHosts?: ReadonlySet<string>;
  limit?: string | undefined;
  tags?: string | undefined;
  passthrough?: string[];
  secrets: SecretRegistry;
  info(message: string): void;
  onOutput?: ((line: string) => void) | undefined;
  onEvent?: ((event: AnsibleEvent) => void) | undefined;
  /** Stops the play when aborted; the run then rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
  /** Receives the closing of the play's connections and files, awaited by the caller (see PlayRequest). */
  deferClose?: PlayRequest['deferClose'];
}

function unsealedFor(snapshot: LedgerSnapshot, name: string, request: StandingPlayRequest): Record<string, string> {
  const record = readSealedOutputs(snapshot, name);
  if (record === undefined) return {};
  if (request.sealKey === undefined) {
    request.info(
      `tf:${name} has ${record.entries.length} sealed output(s); without a seal key they are not handed to the play`,
    );
    return {};
  }
  const values = unsealOutputs(record, request.sealKey);
  request.secrets.add(...Object.values(values));
  return values;
}

/** The run boundary's request for a play of `request` against `inventoryText`. */
function playRequest(
  app: AppContext,
  request: Omit<StandingPlayRequest, 'name' | 'sealKey'>,
  inventoryText: string,
  knownHosts: PinnedKnownHosts,
  envAdditions: Record<string, string>,
): PlayRequest {
  return {
    playbook: request.playbook,
    cwd: app.cwd,
    parentEnv: app.env,
    inventoryText,
    knownHosts,
    ...(request.remoteUser ? { remoteUser: request.remoteUser } : {}),
    ...(request.fleetKeyPath ? { agentKeyFile: request.fleetKeyPath } : {}),
    agent: request.fleetAgent,
    controlDir: request.fleetConnections,
    ...(request.identityFile ? { identityFile: request.identityFile } : {}),
    envAdditions,
    ...(request.extraVars ? { extraVars: request.extraVars } : {}),
    check: request.check ?? false,
    ...(request.diff ? { diff: true } : {}),
    ...(request.limit ? { limit: request.limit } : {}),
    ...(request.tags ? { tags: request.tags } : {}),
    ...(request.passthrough ? { passthrough: request.passthrough } : {}),
    secrets: request.secrets,
    ...(request.onOutput ? { onOutput: request.onOutput } : {}),
    ...(request.onEvent ? { onEvent: request.onEvent } : {}),
    signal: request.signal,
    deferClose: request.deferClose,
  };
}

export async function runStandingPlay(
  app: AppContext,
  request: StandingPlayRequest,
): Promise<{ outcome: PlayOutcome; hostCount: number }> {
  const snapshot = await app.store.read();
  const inventory = loadStandingInventory(snapshot, request.name);
  const sealed = unsealedFor(snapshot, request.name, request);
  const knownHosts = readPinnedKnownHosts(snapshot);
  const only = request.onlyHosts;
  const text =
    only === undefined ? inventory.ansibleText : renderAnsibleInventory(restrictInventory(inventory.inventory, only));
  const hostCount =
    only === undefined ? inventory.hosts.length : inventory.hosts.filter((h) => only.has(h.name)).length;
  // Closed by default: a selection that names nobody runs no play (callers decide what an empty selection means).
  if (hostCount === 0) {
    throw new ExocompError(
      'inventory',
      `the hosts selected from tf:${request.name} are none of its hosts: no play runs`,
      {
        help: 'select hosts the inventory names',
      },
    );
  }
  const outcome = await runPlay({
    ...playRequest(app, request, text, knownHosts, { ...sealed, ...request.runSecrets }),
    hostCount,
    hosts: throughRunBastion(inventory.hosts, request.bastion, request.remoteUser).filter(
      (h) => !h.local && (only === undefined || only.has(h.name)),
    ),
  });
  return { outcome, hostCount };
}

/** The same boundary for a plain inventory file: sealed outputs reach only runs that name tf:<name>. */
export async function runFilePlay(
  app: AppContext,
  ref: Extract<InventoryRef, { kind: 'file' }>,
  request: Omit<StandingPlayRequest, 'name' | 'sealKey'>,
): Promise<{ outcome: PlayOutcome }> {
  const path = resolve(app.cwd, ref.path);
  const text = await readFile(path, 'utf8').catch(() => {
    throw new ExocompError('inventory', `inventory file ${ref.path} cannot be read`, {
      help: 'pass an existing inventory file, or tf:<name> for a standing inventory',
    });
  });
  const knownHosts = readPinnedKnownHosts(await app.store.read());
  return { outcome: await runPlay(playRequest(app, request, text, knownHosts, { ...request.runSecrets })) };
}
