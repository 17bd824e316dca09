import { z } from 'zod';
import { ExocompError } from './errors.js';
import { quoteValue } from './names.js';
import { BASTION_VARIABLE, resolveRoutes, type Hop } from './bastion.js';
import { hostTrustOf, type HostTrust } from './host-trust.js';
import { ambiguousIpv4, canonicalAddress } from './address.js';

/**
 * The static inventory model: the YAML/JSON inventory format ansible's yaml
 * plugin reads (groups at the top, each a mapping of `hosts`, `vars`,
 * `children`), and the hosts it derives under ansible's variable precedence.
 */

export type VarMap = Record<string, unknown>;
export interface InventoryGroup {
  hosts?: Record<string, VarMap | null> | null | undefined;
  vars?: VarMap | null | undefined;
  children?: Record<string, InventoryGroup | null> | null | undefined;
}
export type StaticInventory = Record<string, InventoryGroup | null>;

// ansible reads `[a:b]` in a host name as a range, `host:port` as a port, and `,` separates patterns.
const HOST_OR_GROUP_NAME = /^[^\s[\]:,]+$/;
// zod records drop `__proto__` silently; refuse it instead of losing a key.
const RESERVED_KEY = '__proto__';
// Names cannot be marked unsafe as values are; one holding a template could be evaluated where it is shown.
const TEMPLATE_MARKER = /\{\{|\{%|\{#/;

/** How deep `children` may nest, and how deep a variable's value may nest. */
export const MAX_GROUP_DEPTH = 64;
export const MAX_VALUE_DEPTH = 32;

function keyProblem(key: string, what: 'host' | 'group' | 'variable'): string | undefined {
  if (key === RESERVED_KEY) return `${quoteValue(key)} is not allowed as a ${what} name`;
  if (TEMPLATE_MARKER.test(key))
    return `${what} name ${quoteValue(key)} contains a template marker ('{{', '{%' or '{#')`;
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

const isMapping = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** How deep a JSON value nests (a scalar is 0), walked without recursion so no input can exhaust the stack. */
function valueDepth(value: unknown, limit: number): number {
  let deepest = 0;
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop() as [unknown, number];
    if (node === null || typeof node !== 'object') continue;
    if (depth + 1 > deepest) deepest = depth + 1;
    if (deepest > limit) return deepest;
    for (const child of Object.values(node)) stack.push([child, depth + 1]);
  }
  return deepest;
}

/** Refuses `children` nested deeper than MAX_GROUP_DEPTH before anything recurses into the inventory. */
function checkGroupDepth(value: unknown, source: string): void {
  const stack: Array<[unknown, number]> = isMapping(value) ? Object.values(value).map((group) => [group, 1]) : [];
  while (stack.length > 0) {
    const [group, depth] = stack.pop() as [unknown, number];
    if (!isMapping(group) || !isMapping(group.children)) continue;
    if (depth + 1 > MAX_GROUP_DEPTH) {
      throw new ExocompError(
        'inventory',
        `${source} nests groups (children within children) more than ${MAX_GROUP_DEPTH} levels deep`,
        {
          help: `flatten the inventory to at most ${MAX_GROUP_DEPTH} levels of children`,
        },
      );
    }
    for (const child of Object.values(group.children)) stack.push([child, depth + 1]);
  }
}

/**
 * Inventory variables ansible's connection, shell and become plugins read that an
 * inventory from tofu outputs may set; every other `ansible_*` variable is refused
 * (docs/threat-model.md): ansible_ssh_executable, ansible_ssh_common_args and
 * friends run commands on the control machine.
 */
export const ALLOWED_CONNECTION_VARIABLES: Readonly<Record<string, string>> = {
  ansible_host: 'the address to connect to (a DNS name or IP address)',
  ansible_port: 'the SSH port (1-65535)',
  ansible_user: 'the user to connect as',
  ansible_connection: 'ssh or local (local: the play runs on the runner)',
  ansible_python_interpreter: 'an absolute path to python on the host, or auto',
  ansible_become: 'true or false',
  ansible_become_user: 'the user to become',
  ansible_become_method: 'sudo or su',
  ansible_group_priority: 'a whole number (group vars only)',
};

// ansible honours these aliases; refusing them keeps what we probe and pin identical to what ansible connects to.
const ALIASES: Record<string, string> = {
  ansible_ssh_host: 'ansible_host',
  ansible_ssh_port: 'ansible_port',
  ansible_ssh_user: 'ansible_user',
};

const ALLOWLIST_HELP = `an inventory from tofu outputs may set only ${Object.keys(ALLOWED_CONNECTION_VARIABLES).join(', ')} among ansible_* variables (see docs/threat-model.md); connection options belong in the playbook or ansible.cfg of the repository`;

/** Why ansible would act on this variable name in a way the inventory must not choose, or undefined. */
function variableProblem(name: string): { problem: string; help: string } | undefined {
  const alias = ALIASES[name];
  if (alias !== undefined) return { problem: `uses ${name}`, help: `write ${alias} instead of ${name}` };
  if (!name.toLowerCase().startsWith('ansible_') || Object.hasOwn(ALLOWED_CONNECTION_VARIABLES, name)) return undefined;
  const why = /(executable|_exe|command|args|interpreter|shell|pipelining)$/.test(name)
    ? 'it would choose what runs or how, possibly on the runner itself'
    : 'it is a connection or behaviour setting the inventory may not choose';
  return { problem: `sets ${name}, which is not allowed from an inventory: ${why}`, help: ALLOWLIST_HELP };
}

/** Checks every host's and group's variables against the allowlist and the nesting limit. */
function checkVariables(inv: StaticInventory): void {
  const checkMap = (owner: string, vars: VarMap | null | undefined) => {
    for (const [name, value] of Object.entries(vars ?? {})) {
      const refusal = variableProblem(name);
      if (refusal !== undefined)
        throw new ExocompError('inventory', `${owner}: ${refusal.problem}`, { help: refusal.help });
      if (valueDepth(value, MAX_VALUE_DEPTH) > MAX_VALUE_DEPTH) {
        throw new ExocompError(
          'inventory',
          `${owner}: variable ${quoteValue(name)} nests values more than ${MAX_VALUE_DEPTH} levels deep`,
          {
            help: 'flatten the value',
          },
        );
      }
      const key = templatedKey(value);
      if (key !== undefined) {
        throw new ExocompError(
          'inventory',
          `${owner}: variable ${quoteValue(name)} has a key ${quoteValue(key)} with a template marker ('{{', '{%' or '{#')`,
          {
            help: 'keys cannot be marked unsafe for templating as values are; rename the key',
          },
        );
      }
    }
  };
  const visit = (name: string, group: InventoryGroup | null) => {
    checkMap(`group ${quoteValue(name)}`, group?.vars);
    for (const [host, vars] of Object.entries(group?.hosts ?? {})) checkMap(`host ${quoteValue(host)}`, vars);
    for (const [child, childGroup] of Object.entries(group?.children ?? {})) visit(child, childGroup);
  };
  for (const [name, group] of Object.entries(inv)) visit(name, group);
}

function templatedKey(value: unknown): string | undefined {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const node = stack.pop();
    if (node === null || typeof node !== 'object') continue;
    if (!Array.isArray(node)) {
      const key = Object.keys(node).find((k) => TEMPLATE_MARKER.test(k));
      if (key !== undefined) return key;
    }
    stack.push(...(Object.values(node) as unknown[]));
  }
  return undefined;
}

/**
 * Validates a static inventory object: its shape, its nesting, and that it sets
 * only allowed connection variables. Throws ExocompError('inventory') naming
 * the bad path, host or group. `source` names the inventory in messages.
 */
export function parseInventory(value: unknown, source = 'the inventory'): StaticInventory {
  if (value !== null && typeof value === 'object' && !Array.isArray(value) && '_meta' in value) {
    throw new ExocompError(
      'inventory',
      `${source} is in the \`ansible-inventory --list\` format (it has \`_meta\`), not a static inventory`,
      {
        help: INVENTORY_HELP,
      },
    );
  }
  checkGroupDepth(value, source);
  const result = inventorySchema.safeParse(value);
  if (!result.success) {
    const problems = result.error.issues.map((issue) => formatIssue(issue, value));
    throw new ExocompError('inventory', `${source} is not a valid static inventory: ${problems.join('; ')}`, {
      help: INVENTORY_HELP,
    });
  }
  checkVariables(result.data);
  canonicaliseAddresses(result.data);
  return result.data;
}

/**
 * Every ansible_host (host or group var) that is an IP address, in the one
 * spelling ssh looks host keys up by (domain/address.ts), so pins, the scan,
 * ssh_config and the play all name a host alike. Rewrites the parsed copy.
 */
function canonicaliseAddresses(inv: StaticInventory): void {
  const rewrite = (vars: VarMap | null | undefined) => {
    const address = vars?.ansible_host;
    if (vars && typeof address === 'string') vars.ansible_host = canonicalAddress(address);
  };
  const visit = (group: InventoryGroup | null) => {
    rewrite(group?.vars);
    for (const vars of Object.values(group?.hosts ?? {})) rewrite(vars);
    for (const child of Object.values(group?.children ?? {})) visit(child);
  };
  for (const group of Object.values(inv)) visit(group);
}

/**
 * The inventory as ansible reads it: YAML (flow style) in which every string
 * value is tagged `!unsafe`, so nothing from tofu outputs is ever templated
 * (`{{ lookup('pipe', …) }}` stays text). Keys are plain quoted strings; names
 * with template markers were refused by parseInventory.
 */
export function renderAnsibleInventory(inv: StaticInventory): string {
  return `${renderYamlValue(inv, true)}\n`;
}

function renderYamlValue(value: unknown, isKeyLevel = false): string {
  if (typeof value === 'string') return `!unsafe ${yamlDoubleQuoted(value)}`;
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : 'null';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (value === null || value === undefined) return 'null';
  if (Array.isArray(value)) return `[${value.map((item) => renderYamlValue(item)).join(', ')}]`;
  const entries = Object.entries(value as Record<string, unknown>).map(
    ([key, item]) => `${yamlDoubleQuoted(key)}: ${renderYamlValue(item)}`,
  );
  return isKeyLevel ? `{\n${entries.map((e) => `  ${e}`).join(',\n')}\n}` : `{${entries.join(', ')}}`;
}

/** A YAML double-quoted scalar holding only printable ASCII: everything else is escaped (YAML refuses some raw characters). */
function yamlDoubleQuoted(text: string): string {
  let out = '"';
  for (const char of text) {
    const code = char.codePointAt(0) as number;
    if (char === '"' || char === '\\') out += `\\${char}`;
    else if (code >= 0x20 && code <= 0x7e) out += char;
    else if (code <= 0xffff) out += `\\u${code.toString(16).padStart(4, '0')}`;
    else out += `\\U${code.toString(16).padStart(8, '0')}`;
  }
  return `${out}"`;
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
  /** The bastions it is reached through, outermost first (from `exocomp_bastion`); absent: reached directly. */
  via?: Hop[];
  /** The keys or host CA the workspace gives for it (`exocomp_host_keys`, `exocomp_host_ca`); absent: none given. */
  trust?: HostTrust;
}

interface GroupFacts {
  vars: Map<string, unknown>;
  parents: Set<string>;
  hosts: string[];
}

/** Collects every group definition (a group may be defined in several places) in document order. */
function collectGroups(inv: StaticInventory): {
  groups: Map<string, GroupFacts>;
  hostVars: Map<string, Map<string, unknown>>;
} {
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
    const depth =
      name === 'all' && parents.length === 0 ? 0 : Math.max(...parents.map((parent) => depthOf(parent) + 1));
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
    throw hostError(
      host,
      `${name} must be a non-empty string, got ${describeKind(value)}`,
      `set ${name} to a string, or leave it out`,
    );
  }
  return value;
}

function derivePort(host: string, vars: Map<string, unknown>): number {
  if (!vars.has('ansible_port')) return 22;
  const raw = vars.get('ansible_port');
  const port = typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : raw;
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) {
    const shown = typeof raw === 'string' ? quoteValue(raw) : typeof raw === 'number' ? String(raw) : describeKind(raw);
    throw hostError(
      host,
      `ansible_port ${shown} is not a port number`,
      'set ansible_port to a whole number from 1 to 65535',
    );
  }
  return port;
}

const USER_NAME = /^[A-Za-z0-9_][A-Za-z0-9._-]*$/;
const AUTO_INTERPRETER = /^auto(_legacy)?(_silent)?$/;
// A local host's interpreter runs on the runner: only a system python, never a path the inventory chose.
const LOCAL_INTERPRETER = /^(\/usr\/bin|\/usr\/local\/bin|\/bin)\/python[0-9.]*$/;
const REMOTE_INTERPRETER = /^\/[A-Za-z0-9._/+-]+$/;
const BOOLEAN_WORDS = /^(true|false|yes|no|on|off|1|0)$/i;

/** The allowed variables whose values need more than a type check. */
function checkConnectionValues(name: string, vars: Map<string, unknown>, local: boolean): void {
  const interpreter = stringVar(name, vars, 'ansible_python_interpreter');
  if (interpreter !== undefined && !AUTO_INTERPRETER.test(interpreter)) {
    if (local && !LOCAL_INTERPRETER.test(interpreter)) {
      throw hostError(
        name,
        `ansible_python_interpreter ${quoteValue(interpreter)} is not allowed for a local host: a local host's interpreter runs on the runner`,
        'for a local host, leave ansible_python_interpreter out, or set it to auto or a system python such as /usr/bin/python3',
      );
    }
    if (!REMOTE_INTERPRETER.test(interpreter)) {
      throw hostError(
        name,
        `ansible_python_interpreter ${quoteValue(interpreter)} is not an absolute path`,
        'set ansible_python_interpreter to an absolute path such as /usr/bin/python3, or auto',
      );
    }
  }
  if (vars.has('ansible_become')) {
    const become = vars.get('ansible_become');
    if (typeof become !== 'boolean' && !(typeof become === 'string' && BOOLEAN_WORDS.test(become))) {
      throw hostError(name, 'ansible_become must be true or false', 'set ansible_become to true or false');
    }
  }
  const becomeUser = stringVar(name, vars, 'ansible_become_user');
  if (becomeUser !== undefined && !USER_NAME.test(becomeUser)) {
    throw hostError(
      name,
      `ansible_become_user ${quoteValue(becomeUser)} is not a user name`,
      "set ansible_become_user to letters, digits, '.', '_' and '-'",
    );
  }
  const becomeMethod = stringVar(name, vars, 'ansible_become_method');
  if (becomeMethod !== undefined && becomeMethod !== 'sudo' && becomeMethod !== 'su') {
    throw hostError(
      name,
      `ansible_become_method ${quoteValue(becomeMethod)} is not allowed`,
      'set ansible_become_method to sudo or su, or leave it out',
    );
  }
}

function deriveHost(name: string, vars: Map<string, unknown>): DerivedHost {
  const connection = stringVar(name, vars, 'ansible_connection');
  if (connection !== undefined && connection !== 'ssh' && connection !== 'local') {
    throw hostError(
      name,
      `ansible_connection ${quoteValue(connection)} is not allowed: only ssh and local are`,
      'set ansible_connection to ssh (the default) or local (the play then runs on the runner), or leave it out',
    );
  }
  checkConnectionValues(name, vars, connection === 'local');
  const address = stringVar(name, vars, 'ansible_host') ?? name;
  if (!isValidAddress(address)) {
    throw hostError(
      name,
      `address ${quoteValue(address)} is not a host name or IP address`,
      'set ansible_host to a DNS name or an IPv4/IPv6 address (no brackets, no port, no templates)',
    );
  }
  const ambiguous = ambiguousIpv4(address);
  if (ambiguous !== undefined) {
    throw hostError(
      name,
      `address ${quoteValue(address)} is ambiguous: ${ambiguous}`,
      'set ansible_host to the IPv4 address as four decimal numbers (e.g. 10.0.0.1), or to a DNS name',
    );
  }
  const port = derivePort(name, vars);
  const user = stringVar(name, vars, 'ansible_user');
  if (user !== undefined && !USER_NAME.test(user)) {
    throw hostError(
      name,
      `ansible_user ${quoteValue(user)} is not a user name`,
      "set ansible_user to letters, digits, '.', '_' and '-'",
    );
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
  const derived = [...memberships.keys()].sort().map((host) => {
    const effective = new Map<string, unknown>();
    for (const group of [...(memberships.get(host) as Set<string>)].sort(byPrecedence)) {
      for (const [key, value] of (groups.get(group) as GroupFacts).vars) effective.set(key, value);
    }
    for (const [key, value] of hostVars.get(host) ?? []) effective.set(key, value);
    const trust = hostTrustOf(host, effective);
    return { ...deriveHost(host, effective), ...(trust ? { trust } : {}), bastion: bastionName(host, effective) };
  });
  const routes = resolveRoutes(derived);
  return derived.map(({ bastion: _named, ...host }) => {
    const via = routes.get(host.name) ?? [];
    if (via.length === 0 || host.local) return host;
    return { ...host, via };
  });
}

/** The inventory host `exocomp_bastion` names: a host name, never options or templates. */
function bastionName(host: string, vars: Map<string, unknown>): string | undefined {
  const name = stringVar(host, vars, BASTION_VARIABLE);
  if (name === undefined) return undefined;
  const problem = keyProblem(name, 'host');
  if (problem !== undefined) {
    throw hostError(
      host,
      `${BASTION_VARIABLE} must name another host of the inventory: ${problem}`,
      `set ${BASTION_VARIABLE} to the name of the inventory host to connect through`,
    );
  }
  return name;
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
    const inventory = parseInventory(fallbackInventory(outputs), 'the inventory built from the outputs');
    return { inventory, source: 'fallback', outputCount: Object.keys(inventory.all?.vars ?? {}).length, hostCount: 0 };
  }
  if (declared.sensitive) {
    throw new ExocompError(
      'inventory',
      'the ansible_inventory output is marked sensitive, but the inventory is stored in clear',
      {
        help: 'keep secrets out of ansible_inventory and drop sensitive = true from it (use nonsensitive() for values that are not secret); sensitive outputs reach the play as environment variables instead',
      },
    );
  }
  const inventory = parseInventory(declared.value, 'the ansible_inventory output');
  return { inventory, source: 'ansible_inventory', outputCount: 1, hostCount: deriveHosts(inventory).length };
}

export function captureEventLine(outputCount: number, path: string, hostCount: number): string {
  return `captured ${outputCount} output(s) to inventory ${path} naming ${hostCount} host(s)`;
}
