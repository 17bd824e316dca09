import { z } from 'zod';
import { ExocompError } from './errors.js';
import { quoteValue } from './names.js';

/**
 * The static inventory model: the YAML/JSON inventory format ansible's yaml
 * plugin reads (groups at the top, each a mapping of `hosts`, `vars`,
 * `children`), and the hosts it derives under ansible's variable precedence.
 */

export type VarMap = Record<string, unknown>;
export interface InventoryGroup {
  hosts?: Record<string, VarMap | null> | null;
  vars?: VarMap | null;
  children?: Record<string, InventoryGroup | null> | null;
}
export type StaticInventory = Record<string, InventoryGroup | null>;

// ansible reads `[a:b]` in a host name as a range, `host:port` as a port, and `,` separates patterns.
const HOST_OR_GROUP_NAME = /^[^\s[\]:,]+$/;
// zod records drop `__proto__` silently; refuse it instead of losing a key.
const RESERVED_KEY = '__proto__';

function keyProblem(key: string, what: 'host' | 'group' | 'variable'): string | undefined {
  if (key === RESERVED_KEY) return `${quoteValue(key)} is not allowed as a ${what} name`;
  if (what === 'variable') return undefined;
  if (key === '') return `a ${what} name is empty`;
  if (!HOST_OR_GROUP_NAME.test(key)) {
    return `${what} name ${quoteValue(key)} contains whitespace, '[', ']', ':' or ','`;
  }
  return undefined;
}

/**
 * A mapping whose keys are checked on the input, before the record parse could
 * drop any, so errors can point at the offending key.
 */
function mapping<T extends z.ZodType>(values: T, what: 'host' | 'group' | 'variable') {
  const keysChecked = z.unknown().superRefine((raw, ctx) => {
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return;
    for (const key of Object.keys(raw)) {
      const problem = keyProblem(key, what);
      if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem, path: [key] });
    }
  });
  return keysChecked.pipe(z.record(z.string(), values));
}

const varMapSchema = mapping(z.unknown(), 'variable');

const groupSchema: z.ZodType<InventoryGroup> = z.strictObject({
  hosts: mapping(varMapSchema.nullable(), 'host').nullable().optional(),
  vars: varMapSchema.nullable().optional(),
  get children() {
    return mapping(groupSchema.nullable(), 'group').nullable().optional();
  },
});

const inventorySchema = mapping(groupSchema.nullable(), 'group');

function describeKind(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  return `a ${typeof value}`;
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let node = root;
  for (const key of path) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<PropertyKey, unknown>)[key];
  }
  return node;
}

/** `all.children.web.hosts`; keys that are not plain words are bracketed: `all.hosts["10.0.0.1"]`. */
export function formatInventoryPath(path: readonly PropertyKey[]): string {
  if (path.length === 0) return 'inventory';
  return path
    .map((key, index) => {
      const text = String(key);
      if (/^[A-Za-z_][A-Za-z0-9_-]*$/.test(text)) return index === 0 ? text : `.${text}`;
      return `[${quoteValue(text)}]`;
    })
    .join('');
}

function formatIssue(issue: z.core.$ZodIssue, input: unknown): string {
  const where = formatInventoryPath(issue.path);
  switch (issue.code) {
    case 'invalid_type':
      return `${where}: expected a mapping, got ${describeKind(valueAt(input, issue.path))}`;
    case 'unrecognized_keys':
      return `${where}: unexpected key(s) ${issue.keys.map((key) => quoteValue(key)).join(', ')} — a group has only hosts, vars and children`;
    default:
      return `${where}: ${issue.message}`;
  }
}

const INVENTORY_HELP =
  'shape the ansible_inventory output as a static inventory: { all = { hosts = { <name> = { ansible_host = … } }, vars = { … }, children = { <group> = { hosts = … } } } }';

/** Validates a static inventory object. Throws ExocompError('inventory') naming every bad path. */
export function parseInventory(value: unknown): StaticInventory {
  if (value !== null && typeof value === 'object' && !Array.isArray(value) && '_meta' in value) {
    throw new ExocompError('inventory', 'the inventory is in the `ansible-inventory --list` format (it has `_meta`), not a static inventory', {
      help: INVENTORY_HELP,
    });
  }
  const result = inventorySchema.safeParse(value);
  if (!result.success) {
    const problems = result.error.issues.map((issue) => formatIssue(issue, value));
    throw new ExocompError('inventory', `the inventory is not a valid static inventory: ${problems.join('; ')}`, {
      help: INVENTORY_HELP,
    });
  }
  return result.data;
}

export interface DerivedHost {
  name: string;
  /** ansible_host, or the host name. */
  address: string;
  /** ansible_port, or 22. */
  port: number;
  /** ansible_user, when set. */
  user?: string;
  /** ansible_connection is `local`: nothing to probe or scan. */
  local: boolean;
}

interface GroupFacts {
  vars: Map<string, unknown>;
  parents: Set<string>;
  hosts: string[];
}

/** Collects every group definition (a group may be defined in several places) in document order. */
function collectGroups(inv: StaticInventory): { groups: Map<string, GroupFacts>; hostVars: Map<string, Map<string, unknown>> } {
  const groups = new Map<string, GroupFacts>();
  const hostVars = new Map<string, Map<string, unknown>>();
  const factsOf = (name: string): GroupFacts => {
    let facts = groups.get(name);
    if (facts === undefined) {
      facts = { vars: new Map(), parents: new Set(), hosts: [] };
      groups.set(name, facts);
    }
    return facts;
  };
  const visit = (name: string, group: InventoryGroup | null, parent: string | undefined): void => {
    const facts = factsOf(name);
    if (parent !== undefined) facts.parents.add(parent);
    // Sections in the object's own key order, as ansible reads the file we write from it.
    for (const section of Object.keys(group ?? {})) {
      if (section === 'vars') {
        for (const [key, value] of Object.entries(group?.vars ?? {})) facts.vars.set(key, value);
      } else if (section === 'hosts') {
        for (const [host, vars] of Object.entries(group?.hosts ?? {})) {
          facts.hosts.push(host);
          const merged = hostVars.get(host) ?? new Map<string, unknown>();
          hostVars.set(host, merged);
          for (const [key, value] of Object.entries(vars ?? {})) merged.set(key, value);
        }
      } else if (section === 'children') {
        for (const [child, childGroup] of Object.entries(group?.children ?? {})) visit(child, childGroup, name);
      }
    }
  };
  for (const [name, group] of Object.entries(inv)) visit(name, group, undefined);
  // Groups without a parent hang under `all`, as ansible reconciles them.
  for (const [name, facts] of groups) {
    if (name !== 'all' && facts.parents.size === 0) facts.parents.add('all');
  }
  factsOf('all');
  return { groups, hostVars };
}

/** Depth of every group (longest path from `all`), refusing parent/child loops as ansible does. */
function groupDepths(groups: Map<string, GroupFacts>): Map<string, number> {
  const depths = new Map<string, number>();
  const visiting = new Set<string>();
  const depthOf = (name: string): number => {
    const known = depths.get(name);
    if (known !== undefined) return known;
    if (visiting.has(name)) {
      throw new ExocompError('inventory', `group ${quoteValue(name)} is its own ancestor (a children loop)`, {
        help: 'remove one of the children entries that form the loop',
      });
    }
    visiting.add(name);
    const parents = [...(groups.get(name)?.parents ?? [])];
    const depth = name === 'all' && parents.length === 0 ? 0 : Math.max(...parents.map((parent) => depthOf(parent) + 1));
    visiting.delete(name);
    depths.set(name, depth);
    return depth;
  };
  for (const name of groups.keys()) depthOf(name);
  return depths;
}

function groupPriority(group: string, facts: GroupFacts): number {
  const raw = facts.vars.get('ansible_group_priority');
  if (raw === undefined) return 1;
  const priority = typeof raw === 'string' && /^-?\d+$/.test(raw) ? Number(raw) : raw;
  if (typeof priority !== 'number' || !Number.isInteger(priority)) {
    throw new ExocompError('inventory', `group ${quoteValue(group)}: ansible_group_priority must be a whole number`, {
      help: 'set ansible_group_priority to an integer, or remove it',
    });
  }
  return priority;
}

// ansible honours these aliases; refusing them keeps what we probe and pin identical to what ansible connects to.
const ALIASES: Record<string, string> = {
  ansible_ssh_host: 'ansible_host',
  ansible_ssh_port: 'ansible_port',
  ansible_ssh_user: 'ansible_user',
};

// A DNS name, IPv4 or IPv6 address; never starting with '-', which a command line reads as an option.
const ADDRESS = /^[A-Za-z0-9_:][A-Za-z0-9._:%-]*$/;

export function isValidAddress(address: string): boolean {
  return ADDRESS.test(address);
}

function hostError(host: string, problem: string, help: string): ExocompError {
  return new ExocompError('inventory', `host ${quoteValue(host)}: ${problem}`, { help });
}

function stringVar(host: string, vars: Map<string, unknown>, name: string): string | undefined {
  if (!vars.has(name)) return undefined;
  const value = vars.get(name);
  if (typeof value !== 'string' || value === '') {
    throw hostError(host, `${name} must be a non-empty string, got ${describeKind(value)}`, `set ${name} to a string, or leave it out`);
  }
  return value;
}

function derivePort(host: string, vars: Map<string, unknown>): number {
  if (!vars.has('ansible_port')) return 22;
  const raw = vars.get('ansible_port');
  const port = typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : raw;
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) {
    const shown = typeof raw === 'string' ? quoteValue(raw) : typeof raw === 'number' ? String(raw) : describeKind(raw);
    throw hostError(host, `ansible_port ${shown} is not a port number`, 'set ansible_port to a whole number from 1 to 65535');
  }
  return port;
}

function deriveHost(name: string, vars: Map<string, unknown>): DerivedHost {
  for (const [alias, preferred] of Object.entries(ALIASES)) {
    if (vars.has(alias)) {
      throw hostError(name, `uses ${alias}`, `write ${preferred} instead of ${alias}`);
    }
  }
  const connection = stringVar(name, vars, 'ansible_connection');
  const address = stringVar(name, vars, 'ansible_host') ?? name;
  if (!isValidAddress(address)) {
    throw hostError(
      name,
      `address ${quoteValue(address)} is not a host name or IP address`,
      'set ansible_host to a DNS name or an IPv4/IPv6 address (no brackets, no port, no templates)',
    );
  }
  const port = derivePort(name, vars);
  const user = stringVar(name, vars, 'ansible_user');
  if (user !== undefined && !/^[A-Za-z0-9_][A-Za-z0-9._-]*$/.test(user)) {
    throw hostError(name, `ansible_user ${quoteValue(user)} is not a user name`, "set ansible_user to letters, digits, '.', '_' and '-'");
  }
  return { name, address, port, ...(user === undefined ? {} : { user }), local: connection === 'local' };
}

/**
 * The hosts an inventory names, once each, sorted by name, with their
 * connection variables resolved as ansible does: group vars merge by group depth
 * (parents first), then ansible_group_priority, then group name; host vars win.
 */
export function deriveHosts(inv: StaticInventory): DerivedHost[] {
  const { groups, hostVars } = collectGroups(inv);
  const depths = groupDepths(groups);
  const ancestorsOf = (group: string, into: Set<string>): Set<string> => {
    if (into.has(group)) return into;
    into.add(group);
    for (const parent of groups.get(group)?.parents ?? []) ancestorsOf(parent, into);
    return into;
  };
  const memberships = new Map<string, Set<string>>();
  for (const [group, facts] of groups) {
    for (const host of facts.hosts) {
      const set = memberships.get(host) ?? new Set<string>();
      memberships.set(host, ancestorsOf(group, set));
    }
  }
  const sortKey = (group: string): [number, number, string] => [
    depths.get(group) ?? 0,
    groupPriority(group, groups.get(group) as GroupFacts),
    group,
  ];
  const byPrecedence = (a: string, b: string): number => {
    const [depthA, priorityA, nameA] = sortKey(a);
    const [depthB, priorityB, nameB] = sortKey(b);
    return depthA - depthB || priorityA - priorityB || (nameA < nameB ? -1 : nameA > nameB ? 1 : 0);
  };
  return [...memberships.keys()].sort().map((host) => {
    const effective = new Map<string, unknown>();
    for (const group of [...(memberships.get(host) as Set<string>)].sort(byPrecedence)) {
      for (const [key, value] of (groups.get(group) as GroupFacts).vars) effective.set(key, value);
    }
    for (const [key, value] of hostVars.get(host) ?? []) effective.set(key, value);
    return deriveHost(host, effective);
  });
}

/** The name known_hosts files use: `address` on port 22, `[address]:port` otherwise; lower-cased as ssh looks it up. */
export function knownHostsName(address: string, port: number): string {
  const name = address.toLowerCase();
  return port === 22 ? name : `[${name}]:${port}`;
}

export interface TofuOutput {
  value: unknown;
  sensitive: boolean;
}
export type TofuOutputs = Record<string, TofuOutput>;

export const INVENTORY_OUTPUT = 'ansible_inventory';

/** Every non-sensitive output as a var of group `all`: a valid inventory that names no hosts. */
export function fallbackInventory(outputs: TofuOutputs): StaticInventory {
  const vars = Object.fromEntries(
    Object.keys(outputs)
      .sort()
      .filter((name) => outputs[name]?.sensitive === false)
      .map((name) => [name, outputs[name]?.value]),
  );
  return { all: { vars } };
}

export interface CapturedInventory {
  inventory: StaticInventory;
  source: 'ansible_inventory' | 'fallback';
  /** How many outputs went into the inventory. */
  outputCount: number;
  hostCount: number;
}

/**
 * The inventory an apply's outputs describe: the `ansible_inventory` output when
 * there is one, else the fallback. A sensitive `ansible_inventory` is refused —
 * the inventory file is stored in the ledger in clear.
 */
export function captureInventory(outputs: TofuOutputs): CapturedInventory {
  const declared = Object.hasOwn(outputs, INVENTORY_OUTPUT) ? outputs[INVENTORY_OUTPUT] : undefined;
  if (declared === undefined) {
    const inventory = fallbackInventory(outputs);
    return { inventory, source: 'fallback', outputCount: Object.keys(inventory.all?.vars ?? {}).length, hostCount: 0 };
  }
  if (declared.sensitive) {
    throw new ExocompError('inventory', 'the ansible_inventory output is marked sensitive, but the inventory is stored in clear', {
      help: 'keep secrets out of ansible_inventory and drop sensitive = true from it (use nonsensitive() for values that are not secret); sensitive outputs reach the play as environment variables instead',
    });
  }
  const inventory = parseInventory(declared.value);
  return { inventory, source: 'ansible_inventory', outputCount: 1, hostCount: deriveHosts(inventory).length };
}

export function captureEventLine(outputCount: number, path: string, hostCount: number): string {
  return `captured ${outputCount} output(s) to inventory ${path} naming ${hostCount} host(s)`;
}
