/**
 * Pins host keys in the ledger's known_hosts store before anything is pushed to
 * a host (docs/architecture.md, "The chain"; ADR 0003). Trust on first use is one-way: a changed key
 * fails and is not re-pinned unless rotation was asked for that host.
 */
import { ExocompError } from '../domain/errors.js';
import { knownHostsName, type DerivedHost } from '../domain/inventory.js';
import { parseKeyscanOutput, reconcilePins, renderKnownHosts, type Pin } from '../domain/known-hosts.js';
import { keyscan } from '../adapters/ssh.js';
import { readKnownHostsText, readPins, RecordWrites } from '../ledger/records.js';
import type { AppContext } from './context.js';

export interface PinOutcome {
  added: string[];
  unchanged: string[];
  rotated: string[];
  /** The whole store after pinning, for UserKnownHostsFile. */
  knownHosts: string;
}

/** Rotation may be asked by inventory name, address or known_hosts name. */
function rotationNames(hosts: Array<Pick<DerivedHost, 'name' | 'address' | 'port'>>, asked: readonly string[]): Set<string> {
  const wanted = new Set(asked);
  return new Set(hosts.filter((h) => wanted.has(h.name) || wanted.has(h.address) || wanted.has(knownHostsName(h.address, h.port))).map((h) => knownHostsName(h.address, h.port)));
}

export async function pinHostKeys(
  app: AppContext,
  hosts: Array<Pick<DerivedHost, 'name' | 'address' | 'port'>>,
  rotate: readonly string[],
  options: { signal?: AbortSignal } = {},
): Promise<PinOutcome> {
  const { signal } = options;
  const scans = await keyscan(
    hosts.map((h) => ({ address: h.address, port: h.port })),
    { signal },
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
    throw new ExocompError('host-key', `no host key could be scanned from ${silent.join(', ')}`, {
      help: 'the host answered the SSH wait but not ssh-keyscan; check it is still up and resume',
    });
  }
  const rotateSet = rotationNames(hosts, rotate);
  return app.store.update((snapshot) => {
    // A runner that lost its step pins nothing.
    signal?.throwIfAborted();
    const current = readPins(snapshot);
    const result = reconcilePins({ current, scanned, rotate: rotateSet });
    if (result.changed.length > 0) {
      const names = result.changed.map((c) => c.name).join(', ');
      throw new ExocompError('host-key', `host key changed for ${names}: the pinned key no longer matches what the host presents`, {
        help: `either the host was rekeyed — confirm out of band, then rotate it (exocomp host onboard ${result.changed[0]!.name} --rotate, or the rotate-host-keys input) — or someone is in the middle; nothing was pushed to it`,
      });
    }
    const knownHosts = renderKnownHosts(result.next);
    const parts = [result.added.length > 0 ? `pin ${result.added.join(', ')}` : '', result.rotated.length > 0 ? `rotate ${result.rotated.join(', ')}` : ''].filter(Boolean);
    const changedStore = knownHosts !== readKnownHostsText(snapshot);
    return {
      writes: changedStore ? new RecordWrites().knownHosts(knownHosts) : new RecordWrites(),
      message: `known_hosts: ${parts.join('; ') || 'unchanged'}`,
      result: { added: result.added, unchanged: result.unchanged, rotated: result.rotated, knownHosts },
    };
  });
}
