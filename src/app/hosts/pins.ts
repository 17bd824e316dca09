/**
 * Pins host keys in the ledger's known_hosts store before anything is pushed to
 * a host (docs/architecture.md, "The chain"; ADR 0003). Trust on first use is one-way: a changed key
 * fails and is not re-pinned unless rotation was asked for that host.
 */
import { ExocompError } from '../../domain/errors.js';
import { knownHostsName, type DerivedHost } from '../../domain/inventory.js';
import {
  judgeFirstContact,
  parseKeyscanOutput,
  pinnedTypesToScan,
  reconcilePins,
  renderKnownHosts,
  scanTypeOf,
  type Pin,
  type PinnedKnownHosts,
} from '../../domain/known-hosts.js';
import { ALL_KEY_TYPES, keyscan, type KeyscanTarget } from '../../adapters/ssh.js';
import { readKnownHostsText, readPinnedKnownHosts, readPins, RecordWrites } from '../../ledger/records.js';
import type { AppContext } from '../runtime/context.js';
import { LookAhead } from '../provision/look-ahead.js';
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

/** A host to scan and pin; with `trust`, checked against the workspace's keys or host CA (domain/host-trust.ts). */
type HostAddress = Pick<DerivedHost, 'name' | 'address' | 'port' | 'trust'>;

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

/** A host's -t: the types of the keys the workspace gives for it, else the scan's. */
function scanTarget(host: HostAddress, keyTypes: string | undefined): KeyscanTarget {
  const known = host.trust?.kind === 'keys' && keyTypes === undefined ? host.trust.keys : [];
  const types = [...new Set(known.map((key) => scanTypeOf(key.keyType)))].join(',');
  return { address: host.address, port: host.port, ...(types === '' ? {} : { keyTypes: types }) };
}

/**
 * Scans every host's keys (a host under a host CA: its certificates); a host
 * that presents none, after its retries, fails the scan, named. A certified
 * host without a certificate is left to the CA check, which says so.
 */
export async function scanHostKeys(
  hosts: readonly HostAddress[],
  options: { signal?: AbortSignal | undefined; keyTypes?: string } = {},
): Promise<ScannedHostKeys> {
  const { signal } = options;
  const certified = hosts.filter((h) => h.trust?.kind === 'ca');
  const plain = hosts.filter((h) => h.trust?.kind !== 'ca');
  const [plainScans, certificateScans] = await Promise.all([
    plain.length === 0
      ? new Map<string, string>()
      : keyscan(
          plain.map((h) => scanTarget(h, options.keyTypes)),
          { signal, keyTypes: options.keyTypes ?? FIRST_SCAN_TYPES },
        ),
    certified.length === 0
      ? new Map<string, string>()
      : keyscan(
          certified.map((h) => ({ address: h.address, port: h.port })),
          { signal, keyTypes: ALL_KEY_TYPES, certificates: true },
        ),
  ]);
  const scanned = new Map<string, Pin[]>();
  const silent: string[] = [];
  for (const host of hosts) {
    const name = knownHostsName(host.address, host.port);
    const pins = parseKeyscanOutput(plainScans.get(name) ?? certificateScans.get(name) ?? '', name);
    if (pins.length === 0 && host.trust?.kind !== 'ca') silent.push(`${host.name} (${name})`);
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
  const { judged, trusting } = judgeHosts(hosts, scanned, app.now());
  try {
    return await recordPins(app, judged, trusting, rotateSet, { signal, scanPinnedTypes: true });
  } catch (error) {
    if (!(error instanceof PinnedTypesUnscanned)) throw error;
    scanned = await withPinnedTypes(hosts, scanned, error.wanted, signal);
    return recordPins(app, judgeHosts(hosts, scanned, app.now()).judged, trusting, rotateSet, {
      signal,
      scanPinnedTypes: false,
    });
  }
}

/**
 * The pins each host gets from what it presented (judgeFirstContact); a host
 * that presented something else than the workspace's keys or CA allows fails
 * them all, named with the fingerprints, before anything is pinned. `trusting`:
 * the names trusted on first use, whose pinned types may still be scanned.
 */
function judgeHosts(
  hosts: readonly HostAddress[],
  scanned: ScannedHostKeys,
  now: Date,
): { judged: ScannedHostKeys; trusting: ScannedHostKeys } {
  const judged = new Map<string, Pin[]>();
  const trusting = new Map<string, Pin[]>();
  const refused: string[] = [];
  const refusedHosts: string[] = [];
  for (const host of hosts) {
    const name = knownHostsName(host.address, host.port);
    const presented = scanned.get(name) ?? [];
    const verdict = judgeFirstContact(
      { name, address: host.address, ...(host.trust ? { trust: host.trust } : {}) },
      presented,
      now.getTime() / 1000,
    );
    if ('problem' in verdict) {
      refused.push(`${host.name} (${name}) is refused: ${verdict.problem}`);
      refusedHosts.push(host.name);
      continue;
    }
    judged.set(name, verdict.pins);
    if (host.trust === undefined) trusting.set(name, presented);
  }
  if (refused.length > 0) {
    throw new ExocompError(
      'host-key',
      `${refused.length === 1 ? refused[0] : `${countedNames(refusedHosts)} present keys the workspace does not vouch for; first: ${refused[0]}`}`,
      {
        detail: refused.join('\n'),
        hosts: refusedHosts,
        help: "nothing was pinned or pushed to it; if the host was rebuilt, the workspace's exocomp_host_keys or exocomp_host_ca is stale (apply again); otherwise someone may be in the middle (docs/networks.md)",
      },
    );
  }
  return { judged, trusting };
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
  trusting: ScannedHostKeys,
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
      const wanted = scanPinnedTypes ? pinnedTypesToScan(current, trusting) : new Map<string, string[]>();
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

/** `host known-hosts`: the pinned store, as records and as a known_hosts file. */
export async function pinnedHosts(app: AppContext): Promise<{ pins: Pin[]; knownHosts: PinnedKnownHosts }> {
  const snapshot = await app.store.read();
  return { pins: readPins(snapshot), knownHosts: readPinnedKnownHosts(snapshot) };
}
