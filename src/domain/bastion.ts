/**
 * Bastions (jump hosts) as data (docs/networks.md): a host is reached through at
 * most MAX_HOPS hops, each a host, a port and a user — never ssh options. exocomp
 * builds every ssh command line and ProxyCommand itself from these fields, so
 * each is checked to hold nothing ssh or a shell would read as more than a value.
 */
import { ExocompError } from './errors.js';
import { quoteValue } from './names.js';
import { ambiguousIpv4, canonicalAddress } from './address.js';

export interface Hop {
  /** The inventory host it is, or the address as given on the command line. */
  name: string;
  address: string;
  port: number;
  /** The user to log in to the hop as; absent: the play's user. */
  user?: string;
  /**
   * The run's bastion, no host of the workspace: every connection logs in to it
   * as `user`. An inventory bastion is onboarded like its hosts, so a play's user
   * replaces its `ansible_user` as it does theirs (docs/networks.md).
   */
  keepsUser?: true;
}

/** The host or group variable that names the inventory host a host is reached through. */
export const BASTION_VARIABLE = 'exocomp_bastion';
export const MAX_HOPS = 2;

// Like ansible_host, but without '%': ssh expands %-tokens in a ProxyCommand, so a hop's address holds none.
const HOP_ADDRESS = /^[A-Za-z0-9_:][A-Za-z0-9._:-]*$/;
const HOP_USER = /^[A-Za-z0-9_][A-Za-z0-9._-]*$/;

export type HopField = 'host' | 'port' | 'user';

const FIELD_HELP: Record<HopField, string> = {
  host: 'a bastion host is a DNS name or an IPv4/IPv6 address: letters, digits, . _ - and : (no spaces, %, quotes, templates or options)',
  port: 'a bastion port is a whole number from 1 to 65535',
  user: "a bastion user is letters, digits, '.', '_' and '-', not starting with '-'",
};

function hopError(source: string, field: HopField, value: string, why: string): ExocompError {
  return new ExocompError('usage', `${source}: bastion ${field} ${quoteValue(value)} ${why}`, {
    help: FIELD_HELP[field],
  });
}

/** Checks one hop's fields; throws naming the field. */
export function checkHop(hop: Hop, source: string): Hop {
  if (!HOP_ADDRESS.test(hop.address)) throw hopError(source, 'host', hop.address, 'is not a host name or IP address');
  const ambiguous = ambiguousIpv4(hop.address);
  if (ambiguous !== undefined) throw hopError(source, 'host', hop.address, `is ambiguous: ${ambiguous}`);
  if (!Number.isInteger(hop.port) || hop.port < 1 || hop.port > 65535) {
    throw hopError(source, 'port', String(hop.port), 'is not a port number');
  }
  if (hop.user !== undefined && !HOP_USER.test(hop.user)) {
    throw hopError(source, 'user', hop.user, 'is not a user name');
  }
  return hop;
}

// `[user@]host[:port]`, an IPv6 host in brackets when a port follows (`[fd00::1]:2222`) or bare without one.
const BASTION_SPEC = /^(?:([^@]*)@)?(?:\[([^\]]*)\](?::([^:]*))?|([^:[\]]*)(?::([^:]*))?|([^[\]]*:[^[\]]*))$/;
// Printable ASCII and short: checked before the fields, so no newline or control byte is ever echoed back.
const PRINTABLE_SPEC = /^[\x21-\x7e]{1,300}$/;

/**
 * A bastion given to the run (`--bastion`, the `bastion` input): `[user@]host[:port]`,
 * each field checked as an inventory bastion's is; absent user: the play's user (runBastionHop).
 * `source` names the setting in errors.
 */
export function parseBastion(text: string, source: string): Hop {
  const match = PRINTABLE_SPEC.test(text) ? BASTION_SPEC.exec(text) : null;
  if (match === null) {
    throw new ExocompError('usage', `${source}: ${quoteValue(text)} is not [user@]host[:port]`, {
      help: 'give the bastion as host, user@host, user@host:port or user@[IPv6 address]:port — never ssh options',
    });
  }
  const [, user, bracketed, bracketedPort, host, hostPort, bareIpv6] = match;
  // In the spelling ssh looks its key up by, as the inventory's addresses are (domain/address.ts).
  const address = canonicalAddress((bracketed ?? host ?? bareIpv6) as string);
  const port = bracketedPort ?? hostPort;
  if (port !== undefined && !/^\d{1,5}$/.test(port)) throw hopError(source, 'port', port, 'is not a port number');
  return checkHop(
    { name: address, address, port: port === undefined ? 22 : Number(port), ...(user !== undefined ? { user } : {}) },
    source,
  );
}

/** Why `text` is no bastion, or undefined when it is one. */
export function bastionProblem(text: string): string | undefined {
  try {
    parseBastion(text, 'bastion');
    return undefined;
  } catch (error) {
    if (error instanceof ExocompError) return error.message;
    throw error;
  }
}

/** The bastion as given back (`user@[fd00::1]:2222`): what a workflow records and messages show. */
export function formatBastion(hop: Hop): string {
  const host = hop.address.includes(':') ? `[${hop.address}]` : hop.address;
  return `${hop.user !== undefined ? `${hop.user}@` : ''}${host}:${hop.port}`;
}

/**
 * The user a connection logs in to `hop` as: the run's bastion keeps its own;
 * an inventory bastion is logged in to as the connection's play logs in to its
 * hosts (`playUser`, when the connection has one), else as its `ansible_user`.
 */
export function hopUser(hop: Hop, playUser: string | undefined): string | undefined {
  return hop.keepsUser ? hop.user : (playUser ?? hop.user);
}

/**
 * The run's bastion as a hop: the user given with it, else `playUser` (the user
 * configure and converges log in as), in every connection of the run.
 */
export function runBastionHop(bastion: Hop, playUser: string | undefined): Hop {
  const user = bastion.user ?? playUser;
  return { ...bastion, ...(user === undefined ? {} : { user }), keepsUser: true };
}

/**
 * The hosts as a run with its own bastion reaches them: every SSH host through
 * it, before any inventory bastion; the host at the bastion's own address and
 * port is the bastion, reached directly. More than MAX_HOPS in all is refused.
 * The bastion logs in as runBastionHop says.
 */
export function throughRunBastion<
  T extends { name: string; address: string; port: number; local: boolean; via?: Hop[] },
>(hosts: readonly T[], runBastion: Hop | undefined, playUser: string | undefined): T[] {
  if (runBastion === undefined) return [...hosts];
  const bastion = runBastionHop(runBastion, playUser);
  const isBastion = (h: T) => h.address.toLowerCase() === bastion.address.toLowerCase() && h.port === bastion.port;
  return hosts.map((host) => {
    if (host.local || isBastion(host)) return host;
    const via = [bastion, ...(host.via ?? [])];
    if (via.length > MAX_HOPS) {
      throw new ExocompError(
        'usage',
        `host ${quoteValue(host.name)} would be reached through ${via.length} hops (${describeRoute(via)}) with the run's bastion; at most ${MAX_HOPS} are allowed`,
        { help: `give the run's bastion, or ${BASTION_VARIABLE} bastions behind another, not both` },
      );
    }
    return { ...host, via };
  });
}

/** The hosts a route is resolved for: a name, its connection, and the host its `exocomp_bastion` names. */
export interface RoutedHost {
  name: string;
  address: string;
  port: number;
  user?: string | undefined;
  local: boolean;
  bastion?: string | undefined;
}

function routeError(host: string, problem: string, help: string): ExocompError {
  return new ExocompError('inventory', `host ${quoteValue(host)}: ${BASTION_VARIABLE} ${problem}`, { help });
}

/**
 * The hops each host is reached through (outermost first), resolved from the
 * inventory host its `exocomp_bastion` names; that host may itself be reached
 * through one more. Refuses a name that is no SSH host of the inventory, a loop,
 * and more than MAX_HOPS hops.
 */
export function resolveRoutes(hosts: readonly RoutedHost[]): Map<string, Hop[]> {
  const byName = new Map(hosts.map((h) => [h.name, h]));
  const routes = new Map<string, Hop[]>();
  const routeOf = (host: RoutedHost, seen: readonly string[]): Hop[] => {
    const known = routes.get(host.name);
    if (known !== undefined) return known;
    if (host.bastion === undefined) return [];
    const bastion = byName.get(host.bastion);
    if (bastion === undefined || bastion.local) {
      throw routeError(
        host.name,
        `names ${quoteValue(host.bastion)}, which is no SSH host of the inventory`,
        `set ${BASTION_VARIABLE} to the name of the inventory host to connect through`,
      );
    }
    if (bastion.name === host.name || seen.includes(bastion.name)) {
      throw routeError(
        host.name,
        `forms a loop (${[...seen, host.name, bastion.name].join(' → ')})`,
        'a bastion cannot be reached through the hosts behind it',
      );
    }
    const outer = routeOf(bastion, [...seen, host.name]);
    const hop = checkHop(
      {
        name: bastion.name,
        address: bastion.address,
        port: bastion.port,
        ...(bastion.user ? { user: bastion.user } : {}),
      },
      `host ${quoteValue(bastion.name)} (the bastion of ${quoteValue(host.name)})`,
    );
    const route = [...outer, hop];
    if (route.length > MAX_HOPS) {
      throw routeError(
        host.name,
        `leads through ${route.length} hops (${route.map((h) => h.name).join(' → ')}); at most ${MAX_HOPS} are allowed`,
        'reach the host through one bastion, or a bastion behind another',
      );
    }
    routes.set(host.name, route);
    return route;
  };
  for (const host of hosts) routeOf(host, []);
  checkOneRoutePerAddress(hosts, routes);
  return routes;
}

/** ssh matches its configuration on the address alone: one address, one way to reach it. */
function checkOneRoutePerAddress(hosts: readonly RoutedHost[], routes: ReadonlyMap<string, Hop[]>): void {
  const seen = new Map<string, { host: string; route: string }>();
  for (const host of hosts) {
    if (host.local) continue;
    const route = (routes.get(host.name) ?? []).map((h) => `${h.user ?? ''}@${h.address}:${h.port}`).join(',');
    const address = host.address.toLowerCase();
    const earlier = seen.get(address);
    if (earlier !== undefined && earlier.route !== route) {
      throw routeError(
        host.name,
        `reaches address ${quoteValue(host.address)} another way than host ${quoteValue(earlier.host)} does`,
        'hosts that share an address must share their bastion',
      );
    }
    seen.set(address, { host: host.name, route });
  }
}

/** The route as people read it: `bastion` or `outer → inner`. */
export function describeRoute(route: readonly Hop[]): string {
  return route.map((hop) => hop.name).join(' → ');
}
