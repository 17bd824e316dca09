/**
 * The chain through bastions (docs/networks.md): every bastion's key is pinned
 * (one-way, as any host's, ADR 0003) before the first hop through it, outer
 * bastions first; then one master connection per bastion carries the banner
 * probes, the key captures and the plays to the hosts behind it.
 */
import { describeRoute, formatBastion, type Hop } from '../../domain/bastion.js';
import { ExocompError } from '../../domain/errors.js';
import { formatDuration } from '../../domain/duration.js';
import { knownHostsName, type DerivedHost } from '../../domain/inventory.js';
import { parseKeyscanOutput, type Pin } from '../../domain/known-hosts.js';
import {
  ALL_KEY_TYPES,
  keyscan,
  probeSshBanner,
  waitForSsh,
  type BannerProbe,
  type KeyscanOptions,
  type SshTarget,
} from '../../adapters/ssh.js';
import { BastionError, JumpSession, type JumpCredentials } from '../../adapters/ssh-jump.js';
import type { AppContext } from '../runtime/context.js';
import { pinHostKeys, scanHostKeys, type ScannedHostKeys } from './pins.js';

export type RoutedHost = Pick<DerivedHost, 'name' | 'address' | 'port' | 'via' | 'trust'>;

const CAPTURE_TIMEOUT_MS = 15_000;

/** Whether any of the hosts is reached through a bastion. */
export function hasBastions(hosts: readonly RoutedHost[]): boolean {
  return hosts.some((host) => (host.via?.length ?? 0) > 0);
}

/** Each distinct route (and the routes to its outer hops), outer ones first. */
export function routesOf(hosts: readonly RoutedHost[]): Hop[][] {
  const routes = new Map<string, Hop[]>();
  for (const host of hosts) {
    const via = host.via ?? [];
    for (let depth = 1; depth <= via.length; depth += 1) {
      const route = via.slice(0, depth);
      routes.set(describeRoute(route), route);
    }
  }
  return [...routes.values()].sort((a, b) => a.length - b.length);
}

export interface BastionWait {
  /** The shared deadline (performance.now() based); absent: no waiting, one attempt. */
  deadline?: number | undefined;
  say?: ((message: string) => void) | undefined;
}

/**
 * Pins every bastion's key and opens a master to each, outer hops first: a
 * bastion behind another is probed and its key captured through the outer one.
 * With `wait`, each bastion's banner is awaited up to the shared deadline, and a
 * bastion that gives none fails as itself, naming the hosts behind it.
 */
export async function openBastions(
  app: AppContext,
  hosts: readonly RoutedHost[],
  options: {
    rotate: readonly string[];
    credentials: JumpCredentials;
    signal?: AbortSignal | undefined;
    wait?: BastionWait;
    /** The hosts a bastion is looked up in for its known keys or host CA; default: `hosts`. */
    inventory?: readonly RoutedHost[] | undefined;
  },
): Promise<{ session: JumpSession; knownHosts: string }> {
  const { signal, wait } = options;
  const session = await JumpSession.start({ knownHosts: '', credentials: options.credentials, signal });
  try {
    let knownHosts = '';
    for (const route of routesOf(hosts)) {
      const hop = route[route.length - 1] as Hop;
      const outer = route.slice(0, -1);
      const target: SshTarget = { name: hop.name, address: hop.address, port: hop.port };
      // The bastion is an inventory host: its own known keys or host CA check it (domain/host-trust.ts).
      const trust = (options.inventory ?? hosts).find((h) => h.name === hop.name)?.trust;
      if (wait?.deadline !== undefined) await waitForBastion(session, outer, target, hosts, wait.deadline, signal);
      const scanned =
        outer.length === 0
          ? await scanHostKeys([{ ...target, ...(trust ? { trust } : {}) }], { signal })
          : await captureThrough(session, [{ ...target, via: outer, ...(trust ? { trust } : {}) }], signal);
      const pins = await pinHostKeys(app, [{ ...target, ...(trust ? { trust } : {}) }], options.rotate, {
        ...(signal ? { signal } : {}),
        scanned,
      });
      knownHosts = pins.knownHosts;
      await session.setKnownHosts(knownHosts);
      wait?.say?.(`bastion ${describeRoute(route)}: key pinned, connecting through it`);
      await session.connect(route);
    }
    return { session, knownHosts };
  } catch (error) {
    await session.close();
    throw error;
  }
}

async function waitForBastion(
  session: JumpSession,
  outer: readonly Hop[],
  bastion: SshTarget,
  hosts: readonly RoutedHost[],
  deadline: number,
  signal: AbortSignal | undefined,
): Promise<void> {
  const result = await waitForSsh([bastion], {
    timeoutMs: deadline - performance.now(),
    signal,
    ...(outer.length > 0
      ? { probe: (host, budget, probeSignal) => session.probe(outer, host.address, host.port, budget, probeSignal) }
      : {}),
  });
  const missing = result.missing[0];
  if (missing === undefined) return;
  const behind = hosts.filter((h) => h.via?.some((hop) => hop.name === bastion.name)).map((h) => h.name);
  throw new ExocompError(
    'ssh-wait',
    `bastion ${bastion.name} (${bastion.address}:${bastion.port}) gave no SSH banner within the wait (${missing.lastReason}); the ${behind.length} host(s) behind it (${behind.join(', ')}) could not be probed`,
    {
      help: 'check the bastion is up and its port is open to the runner; resume with a longer --ssh-wait',
    },
  );
}

/** The probe for a host: direct, or through its route's master. */
export function probeFor(
  session: JumpSession,
  hosts: readonly RoutedHost[],
): (host: SshTarget, budgetMs: number, signal?: AbortSignal) => Promise<BannerProbe> {
  const routes = new Map(hosts.map((h) => [h.name, h.via ?? []]));
  return (host, budgetMs, signal) => {
    const route = routes.get(host.name) ?? [];
    return route.length === 0
      ? probeSshBanner(host.address, host.port, budgetMs, { signal })
      : session.probe(route, host.address, host.port, budgetMs, signal);
  };
}

/**
 * A certified host's certificates, behind its bastion: ssh-keyscan -c through a
 * loopback relay of the master (JumpSession.relay), its lines renamed to the host's.
 */
async function certificatesThrough(
  session: JumpSession,
  host: RoutedHost,
  signal: AbortSignal | undefined,
): Promise<string> {
  const relay = await session.relay(host.via ?? [], host.address, host.port);
  try {
    const local = knownHostsName('127.0.0.1', relay.port);
    const scans = await keyscan([{ address: '127.0.0.1', port: relay.port }], {
      signal,
      keyTypes: ALL_KEY_TYPES,
      certificates: true,
    });
    const name = knownHostsName(host.address, host.port);
    return parseKeyscanOutput(scans.get(local) ?? '', local)
      .map((pin) => `${name} ${pin.keyType} ${pin.key}\n`)
      .join('');
  } finally {
    await relay.close();
  }
}

/** What a host behind a bastion presents through its master: its keys, or with `certificates` its certificates. */
async function captureOne(
  session: JumpSession,
  host: RoutedHost,
  certificates: boolean,
  signal: AbortSignal | undefined,
): Promise<Pin[]> {
  const text = certificates
    ? await certificatesThrough(session, host, signal)
    : await session.captureHostKeys(host.via ?? [], host.address, host.port, CAPTURE_TIMEOUT_MS, signal);
  return parseKeyscanOutput(text, knownHostsName(host.address, host.port));
}

/** Captures the keys (under a host CA: the certificates) of hosts behind bastions through their masters; a host that presents none fails, named. */
async function captureThrough(
  session: JumpSession,
  hosts: readonly RoutedHost[],
  signal: AbortSignal | undefined,
): Promise<Map<string, Pin[]>> {
  const scanned = new Map<string, Pin[]>();
  const silent: string[] = [];
  await Promise.all(
    hosts.map(async (host) => {
      const name = knownHostsName(host.address, host.port);
      const pins = await captureOne(session, host, host.trust?.kind === 'ca', signal);
      // A certified host that presents no certificate is left to the CA check, which says so.
      if (pins.length === 0 && host.trust?.kind !== 'ca')
        silent.push(`${host.name} (${name}, through ${describeRoute(host.via ?? [])})`);
      scanned.set(name, pins);
    }),
  );
  if (silent.length > 0) {
    throw new ExocompError('host-key', `no host key could be captured from ${silent.sort().join(', ')}`, {
      help: 'the host answered the SSH wait through its bastion but presented no key; check it is still up and resume',
    });
  }
  return scanned;
}

/** The keys every host presents: directly by ssh-keyscan, behind a bastion through the session's masters. */
export async function scanAnyRoute(
  session: JumpSession,
  hosts: readonly RoutedHost[],
  signal?: AbortSignal,
): Promise<ScannedHostKeys> {
  const direct = hosts.filter((h) => (h.via?.length ?? 0) === 0);
  const behind = hosts.filter((h) => (h.via?.length ?? 0) > 0);
  const [directKeys, behindKeys] = await Promise.all([
    direct.length > 0 ? scanHostKeys(direct, { signal }) : new Map<string, Pin[]>(),
    captureThrough(session, behind, signal),
  ]);
  return new Map([...directKeys, ...behindKeys]);
}

/** What a host presents now, or why it could not be asked. */
export type Presented = { keys: Pin[] } | { unreachable: string };

/**
 * The keys (for `certified` hosts: the certificates) each host presents now,
 * by host name, for a check that pins nothing (drift, the preview before
 * approval): directly by ssh-keyscan, behind a bastion through its master.
 * Every bastion is checked against the pinned store as it is — never pinned
 * here — and one that cannot be passed (down, rekeyed, refusing the key)
 * leaves the hosts behind it unreachable, with its reason.
 */
export async function presentedKeys(
  hosts: readonly RoutedHost[],
  options: {
    knownHosts: string;
    credentials: JumpCredentials;
    certified: (host: RoutedHost) => boolean;
    signal?: AbortSignal | undefined;
  },
): Promise<Map<string, Presented>> {
  const { signal, certified } = options;
  const presented = new Map<string, Presented>();
  const direct = hosts.filter((h) => (h.via?.length ?? 0) === 0);
  const scan = async (targets: RoutedHost[], keyscanOptions: KeyscanOptions) => {
    if (targets.length === 0) return;
    const scans = await keyscan(targets, { signal, ...keyscanOptions });
    for (const host of targets) {
      const name = knownHostsName(host.address, host.port);
      const keys = parseKeyscanOutput(scans.get(name) ?? '', name);
      presented.set(
        host.name,
        keys.length > 0 || certified(host) ? { keys } : { unreachable: `no host key could be scanned from ${name}` },
      );
    }
  };
  const behind = hosts.filter((h) => (h.via?.length ?? 0) > 0);
  await Promise.all([
    scan(
      direct.filter((h) => !certified(h)),
      {},
    ),
    scan(direct.filter(certified), { keyTypes: ALL_KEY_TYPES, certificates: true }),
    behind.length > 0 ? presentedBehindBastions(behind, presented, options) : undefined,
  ]);
  return presented;
}

async function presentedBehindBastions(
  hosts: readonly RoutedHost[],
  into: Map<string, Presented>,
  options: Parameters<typeof presentedKeys>[1],
): Promise<void> {
  const { signal, certified } = options;
  const session = await JumpSession.start({ knownHosts: options.knownHosts, credentials: options.credentials, signal });
  try {
    const blocked = new Map<string, string>();
    for (const route of routesOf(hosts)) {
      const outerBlocked = blocked.get(describeRoute(route.slice(0, -1)));
      if (outerBlocked !== undefined) blocked.set(describeRoute(route), outerBlocked);
      else
        await session.connect(route).catch((error: unknown) => {
          if (!(error instanceof ExocompError)) throw error;
          blocked.set(describeRoute(route), error.message);
        });
    }
    await Promise.all(
      hosts.map(async (host) => {
        const why = blocked.get(describeRoute(host.via ?? []));
        if (why !== undefined) {
          into.set(host.name, { unreachable: why });
          return;
        }
        const name = knownHostsName(host.address, host.port);
        const keys = await captureOne(session, host, certified(host), signal);
        into.set(
          host.name,
          keys.length > 0 || certified(host)
            ? { keys }
            : { unreachable: `no host key could be captured from ${name} through ${describeRoute(host.via ?? [])}` },
        );
      }),
    );
  } finally {
    await session.close();
  }
}

/** Every host's keys when some sit behind bastions (each bastion pinned first), for onboarding in a job of its own. */
export async function scanBehindBastions(
  app: AppContext,
  hosts: readonly RoutedHost[],
  options: {
    rotate: readonly string[];
    credentials: JumpCredentials;
    signal?: AbortSignal | undefined;
    inventory?: readonly RoutedHost[] | undefined;
  },
): Promise<ScannedHostKeys> {
  const { session } = await openBastions(app, hosts, options);
  try {
    return await scanAnyRoute(session, hosts, options.signal);
  } finally {
    await session.close();
  }
}

/**
 * Before onboarding changes anything: the run's bastion (the hops that keep
 * their user, domain/bastion.ts) lets its user in with the fleet key, the key
 * configure and converges pass it with, checked against the pinned store. An
 * inventory bastion is onboarded in the same play as the hosts behind it, so
 * only the fleet-login proof after it can check that one. Throws naming the hop,
 * the user and the fix.
 */
export async function checkConfigurePassage(
  hosts: readonly RoutedHost[],
  options: { knownHosts: string; fleetKeyPath: string; signal?: AbortSignal | undefined },
): Promise<void> {
  const routes = routesOf(hosts).filter((route) => route.every((hop) => hop.keepsUser));
  if (routes.length === 0) return;
  let session: JumpSession | undefined;
  try {
    session = await JumpSession.open(routes, {
      knownHosts: options.knownHosts,
      credentials: { identityFiles: [options.fleetKeyPath] },
      signal: options.signal,
    });
  } catch (error) {
    if (!(error instanceof BastionError) || error.kind !== 'bastion') throw error;
    const { bastion } = error;
    const hop = routes.flat().find((h) => h.name === bastion);
    if (hop === undefined) throw error;
    const user = hop.user ?? "the runner's own user name";
    const fix = `let ${user} log in to the bastion with the fleet key (its public half in ${user}'s authorized_keys there), or give the bastion with a user that may (user@host, docs/networks.md), then resume`;
    // The step's failure line shows the message alone: the fix goes in it.
    throw new BastionError(
      hop.name,
      `configure could not pass bastion ${formatBastion(hop)} as ${user} with the fleet key, so nothing was onboarded (${error.message}); ${fix}`,
      fix,
    );
  } finally {
    await session?.close();
  }
}

/**
 * The wait of step 2 when hosts sit behind bastions: each bastion first (its
 * key pinned, its master opened), then every host under the same deadline.
 */
export async function waitThroughBastions(
  app: AppContext,
  hosts: readonly RoutedHost[],
  options: {
    boundMs: number;
    rotate: readonly string[];
    credentials: JumpCredentials;
    scanKeys: boolean;
    say: (message: string) => void;
    signal?: AbortSignal | undefined;
  },
): Promise<{ missing: { name: string; line: string }[]; scanned?: ScannedHostKeys }> {
  const started = performance.now();
  const deadline = started + options.boundMs;
  const { session } = await openBastions(app, hosts, {
    rotate: options.rotate,
    credentials: options.credentials,
    signal: options.signal,
    wait: { deadline, say: options.say },
  });
  try {
    const result = await waitForSsh(
      hosts.map((h) => ({ name: h.name, address: h.address, port: h.port })),
      {
        timeoutMs: deadline - performance.now(),
        signal: options.signal,
        probe: probeFor(session, hosts),
        onReady: (host) =>
          options.say(`${host.name} answered after ${formatDuration(Math.round(performance.now() - started))}`),
      },
    );
    const missing = result.missing.map((m) => ({
      name: m.name,
      line: `${m.name} (${m.address}:${m.port}: ${m.lastReason})`,
    }));
    if (missing.length > 0 || !options.scanKeys) return { missing };
    return { missing, scanned: await scanAnyRoute(session, hosts, options.signal) };
  } finally {
    await session.close();
  }
}
