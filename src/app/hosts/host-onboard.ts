/**
 * `host onboard`: pins one host's key (trust on first use; `rotate` replaces a
 * changed key confirmed out of band). A host of a standing inventory reached
 * through a bastion is scanned through it, the bastion pinned first, as the
 * chain does (hosts/jump.ts).
 */
import { UsageError } from '../../domain/errors.js';
import { knownHostsName, type DerivedHost } from '../../domain/inventory.js';
import { describeRoute } from '../../domain/bastion.js';
import { publicKeyOf } from '../../adapters/ssh-keys.js';
import type { AppContext } from '../runtime/context.js';
import { loadStandingInventory } from './inventories.js';
import { scanBehindBastions } from './jump.js';
import { pinHostKeys } from './pins.js';

/** The host `host onboard` pins: an address as given, or a host name of a standing inventory. */
export type HostToPin =
  | { kind: 'address'; name: string; address: string; port: number }
  | { kind: 'inventory'; inventory: string; host: string };

export async function onboardHost(
  app: AppContext,
  request: {
    host: HostToPin;
    rotate: boolean;
    fleetKeyFile?: string | undefined;
    /** A private key the bastion accepts, for a host reached through one. */
    bastionKeyFile?: string | undefined;
  },
): Promise<{ host: string; state: 'pinned' | 'rotated' | 'unchanged'; extraVars?: { exocomp_fleet_pubkey: string } }> {
  const { target, inventory } = await resolveHost(app, request.host);
  const rotate = request.rotate ? [target.name] : [];
  const route = target.via ?? [];
  let scanned;
  if (route.length > 0) {
    if (request.bastionKeyFile === undefined) {
      throw new UsageError(
        `${target.name} is reached through bastion ${describeRoute(route)}: give the key to log in to it with`,
        'pass --key <file>: a private key the bastion accepts (the fleet key, or the bootstrap key before onboarding)',
      );
    }
    scanned = await scanBehindBastions(app, [target], {
      rotate,
      credentials: { identityFiles: [request.bastionKeyFile] },
      inventory,
    });
  }
  const outcome = await pinHostKeys(app, [target], rotate, scanned ? { scanned } : {});
  const host = knownHostsName(target.address, target.port);
  const state = outcome.added.includes(host) ? 'pinned' : outcome.rotated.includes(host) ? 'rotated' : 'unchanged';
  if (request.fleetKeyFile === undefined) return { host, state };
  return { host, state, extraVars: { exocomp_fleet_pubkey: await publicKeyOf(request.fleetKeyFile) } };
}

async function resolveHost(
  app: AppContext,
  host: HostToPin,
): Promise<{ target: Pick<DerivedHost, 'name' | 'address' | 'port' | 'via' | 'trust'>; inventory?: DerivedHost[] }> {
  if (host.kind === 'address') return { target: host };
  const { hosts } = loadStandingInventory(await app.store.read(), host.inventory);
  const found = hosts.find((h) => h.name === host.host && !h.local);
  if (!found) throw new UsageError(`tf:${host.inventory} names no SSH host ${host.host}`);
  return { target: found, inventory: hosts };
}
