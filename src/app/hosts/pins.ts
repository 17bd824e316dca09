/**
 * Pins host keys in the ledger's known_hosts store before anything is pushed to
 * a host (docs/architecture.md, "The chain"; ADR 0003). Trust on first use is one-way: a changed key
 * fails and is not re-pinned unless rotation was asked for that host.
 */
import { ExocompError, UsageError } from '../../domain/errors.js';
import { knownHostsName, type DerivedHost } from '../../domain/inventory.js';
import {
  parseKeyscanOutput,
  pinnedTypesToScan,
  reconcilePins,
  renderKnownHosts,
  type Pin,
  type PinnedKnownHosts,
} from '../../domain/known-hosts.js';
import { keyscan } from '../../adapters/ssh.js';
import { publicKeyOf } from '../../adapters/ssh-keys.js';
import { readKnownHostsText, readPinnedKnownHosts, readPins, RecordWrites } from '../../ledger/records.js';
import type { AppContext } from '../runtime/context.js';
import { LookAhead } from '../provision/look-ahead.js';
import { loadStandingInventory } from './inventories.js';
import { countedNames } from '../../domain/host-list.js';

export interface PinOutcome {
  added: string[];
  unchanged: string[];
  rotated: string[];
  /** The whole store after pinning, for UserKnownHostsFile. */
  knownHosts: PinnedKnownHosts;
}

/** Rotation may be asked by inventory name, address or known_hosts name. */
function rotationNames(
  hosts: readonly Pick<DerivedHost, 'name' | 'address' | 'port'>[],
  asked: readonly string[],
): Set<string> {
  const wanted = new Set(asked);
  return new Set(
    hosts
      .filter((h) => wanted.has(h.name) || wanted.has(h.address) || wanted.has(knownHostsName(h.address, h.port)))
      .map((h) => knownHostsName(h.address, h.port)),
  );
}

type HostAddress = Pick<DerivedHost, 'name' | 'address' | 'port'>;

/** The keys each host presents (by known_hosts name), as ssh-keyscan saw them: no authentication, nothing written. */
export type ScannedHostKeys = ReadonlyMap<string, Pin[]>;

/**
 * The type scanned first: OpenSSH clients (the plays') prefer ed25519 and, once a
 * host's ed25519 key is in known_hosts, ask for it first, so that pin is what
 * every play checks. Each type costs the host a key exchange and this machine
 * its CPU; a host that has no ed25519 key is retried with every type, and a host
 * pinned with other types has those scanned (pinHostKeys).
 */
export const FIRST_SCAN_TYPES = 'ed25519';

/** Scans every host's keys; a host that presents none, after its retries, fails the scan, named. */
export async function scanHostKeys(
  hosts: readonly HostAddress[],
  options: { signal?: AbortSignal | undefined; keyTypes?: string } = {},
): Promise<ScannedHostKeys> {
  const scans = await keyscan(
    hosts.map((h) => ({ address: h.address, port: h.port })),
    { signal: options.signal, keyTypes: options.keyTypes ?? FIRST_SCAN_TYPES },
  );
  const scanned = new Map<string, Pin[]>();
  const silent: string[] = [];
  for (const host of hosts) {
    const name = knownHostsName(host.address, host.port);
    const pins = parseKeyscanOutput(scans.get(name) ?? '', name);
    if (pins.length === 0) silent.push(`${host.name} (${name})`);
    scanned.set(name, pins);
  }
  if (silent.length > 0) {
    throw new ExocompError('host-key', `no host key could be scanned from ${countedNames(silent)}`, {
      help: 'the host answered the SSH wait but not ssh-keyscan; check it is still up and resume',
      detail: silent.join('\n'),
      hosts: silent,
    });
  }
  return scanned;
}

/**
 * scanHostKeys started now, for an onboarding that takes it later (ssh-wait
 * starts it once every banner answered, so the scan runs while the ledger
 * records the hand-over).
 */
export function lookAheadToHostKeys(
  hosts: readonly HostAddress[],
  interrupt?: AbortSignal,
): LookAhead<ScannedHostKeys> {
  return new LookAhead(
    (_say, signal) => scanHostKeys(hosts, { signal }),
    async () => undefined,
    interrupt,
  );
}

/** The keys scanned beforehand, for exactly these hosts; undefined when one of them was not scanned then. */
function scannedFor(hosts: readonly HostAddress[], given: ScannedHostKeys | undefined): ScannedHostKeys | undefined {
  const names = hosts.map((h) => knownHostsName(h.address, h.port));
  if (given === undefined || !names.every((name) => given.has(name))) return undefined;
  return new Map(names.map((name) => [name, given.get(name)!]));
}

/**
 * Pins the keys the hosts present (scanned here, or `scanned` beforehand for
 * exactly these hosts), reconciled with the store: a new host is pinned, a
 * changed key refused unless rotation was asked for that host.
 */
export async function pinHostKeys(
  app: AppContext,
  hosts: readonly HostAddress[],
  rotate: readonly string[],
  options: { signal?: AbortSignal; scanned?: ScannedHostKeys } = {},
): Promise<PinOutcome> {
  const { signal } = options;
  let scanned = scannedFor(hosts, options.scanned) ?? (await scanHostKeys(hosts, { signal }));
  const rotateSet = rotationNames(hosts, rotate);
  try {
    return await recordPins(app, scanned, rotateSet, { signal, scanPinnedTypes: true });
  } catch (error) {
    if (!(error instanceof PinnedTypesUnscanned)) throw error;
    scanned = await withPinnedTypes(hosts, scanned, error.wanted, signal);
    return recordPins(app, scanned, rotateSet, { signal, scanPinnedTypes: false });
  }
}

/** Thrown from inside a ledger change that met hosts pinned with types not scanned yet; they are scanned, and the change retried. */
class PinnedTypesUnscanned extends Error {
  constructor(readonly wanted: Map<string, string[]>) {
    super('pinned key types not scanned yet');
  }
}

/** `scanned`, plus what the hosts in `wanted` present of their pinned types (each host asked once). */
async function withPinnedTypes(
  hosts: readonly HostAddress[],
  scanned: ScannedHostKeys,
  wanted: Map<string, string[]>,
  signal: AbortSignal | undefined,
): Promise<ScannedHostKeys> {
  const next = new Map(scanned);
  for (const [name, types] of wanted) {
    const host = hosts.find((h) => knownHostsName(h.address, h.port) === name)!;
    const more = await scanHostKeys([host], { signal, keyTypes: types.join(',') }).catch(() => undefined);
    next.set(name, [...(scanned.get(name) ?? []), ...(more?.get(name) ?? [])]);
  }
  return next;
}

async function recordPins(
  app: AppContext,
  scanned: ScannedHostKeys,
  rotateSet: Set<string>,
  { signal, scanPinnedTypes }: { signal: AbortSignal | undefined; scanPinnedTypes: boolean },
): Promise<PinOutcome> {
  // Reads and writes the pins only: may be tried on the ledger as last seen (ADR 0016).
  return app.store.update(
    (snapshot) => {
      // A runner that lost its step pins nothing.
      signal?.throwIfAborted();
      const current = readPins(snapshot);
      // Asked once: after that, the pins are judged on what the hosts presented.
      const wanted = scanPinnedTypes ? pinnedTypesToScan(current, scanned) : new Map<string, string[]>();
      if (wanted.size > 0) throw new PinnedTypesUnscanned(wanted);
      const result = reconcilePins({ current, scanned, rotate: rotateSet });
      if (result.changed.length > 0) {
        const names = result.changed.map((c) => c.name);
        throw new ExocompError(
          'host-key',
          `host key changed for ${countedNames(names)}: the pinned key no longer matches what the host presents`,
          {
            detail: names.join('\n'),
            hosts: names,
            help: `either the host was rekeyed — confirm out of band, then rotate it (exocomp host onboard ${result.changed[0]!.name} --rotate, or the rotate-host-keys input) — or someone is in the middle; nothing was pushed to it`,
          },
        );
      }
      const knownHosts = renderKnownHosts(result.next);
      const parts = [
        result.added.length > 0 ? `pin ${result.added.join(', ')}` : '',
        result.rotated.length > 0 ? `rotate ${result.rotated.join(', ')}` : '',
      ].filter(Boolean);
      const changedStore = knownHosts !== readKnownHostsText(snapshot);
      return {
        writes: changedStore ? new RecordWrites().knownHosts(knownHosts) : new RecordWrites(),
        message: `known_hosts: ${parts.join('; ') || 'unchanged'}`,
        result: { added: result.added, unchanged: result.unchanged, rotated: result.rotated, knownHosts },
      };
    },
    { readsOnlyItsWrites: true },
  );
}

/** The host `host onboard` pins: an address as given, or a host name of a standing inventory. */
export type HostToPin =
  | { kind: 'address'; name: string; address: string; port: number }
  | { kind: 'inventory'; inventory: string; host: string };

/**
 * `host onboard`: pins one host's key (trust on first use; `rotate` replaces a
 * changed key confirmed out of band). With `fleetKeyFile`, also the extra-vars
 * the onboarding play takes (the fleet public key).
 */
export async function onboardHost(
  app: AppContext,
  request: { host: HostToPin; rotate: boolean; fleetKeyFile?: string | undefined },
): Promise<{ host: string; state: 'pinned' | 'rotated' | 'unchanged'; extraVars?: { exocomp_fleet_pubkey: string } }> {
  const target = await resolveHost(app, request.host);
  const outcome = await pinHostKeys(app, [target], request.rotate ? [target.name] : []);
  const host = knownHostsName(target.address, target.port);
  const state = outcome.added.includes(host) ? 'pinned' : outcome.rotated.includes(host) ? 'rotated' : 'unchanged';
  if (request.fleetKeyFile === undefined) return { host, state };
  return { host, state, extraVars: { exocomp_fleet_pubkey: await publicKeyOf(request.fleetKeyFile) } };
}

async function resolveHost(app: AppContext, host: HostToPin): Promise<Pick<DerivedHost, 'name' | 'address' | 'port'>> {
  if (host.kind === 'address') return host;
  const found = loadStandingInventory(await app.store.read(), host.inventory).hosts.find(
    (h) => h.name === host.host && !h.local,
  );
  if (!found) throw new UsageError(`tf:${host.inventory} names no SSH host ${host.host}`);
  if (found.via !== undefined) {
    throw new UsageError(
      `${host.host} is reached through bastion ${found.via.map((hop) => hop.name).join(' → ')}: host onboard scans directly`,
      'pin or rotate it with the chain: exocomp provision run or resume with --rotate-host-key <host> (docs/networks.md)',
    );
  }
  return found;
}

/** `host known-hosts`: the pinned store, as records and as a known_hosts file. */
export async function pinnedHosts(app: AppContext): Promise<{ pins: Pin[]; knownHosts: PinnedKnownHosts }> {
  const snapshot = await app.store.read();
  return { pins: readPins(snapshot), knownHosts: readPinnedKnownHosts(snapshot) };
}
