import { ExocompError } from './errors.js';
import { isValidAddress } from './inventory.js';
import { quoteValue } from './names.js';
import { certificateProblem, knownKeysProblem, publicKeyProblem as keyProblem, type HostTrust } from './host-trust.js';

/**
 * The pinned known_hosts store: an unhashed known_hosts text, one line per
 * name and key type (`name keytype base64`), so `ssh-keygen -F name -f FILE`
 * and `UserKnownHostsFile` read it as is.
 */

declare const exactPinsOnly: unique symbol;
/**
 * A known_hosts text of exact pins only, rendered from validated pins by
 * renderKnownHosts: the only kind of text exocomp hands ssh as
 * UserKnownHostsFile, so a record's own text (a wildcard, a pattern, a marker)
 * can never reach ssh.
 */
export type PinnedKnownHosts = string & { readonly [exactPinsOnly]: true };

export interface Pin {
  /** The known_hosts name: `address`, or `[address]:port` off port 22. */
  name: string;
  keyType: string;
  /** The base64 public key blob. */
  key: string;
  /**
   * `cert-authority`: the key is a host CA's, trusted for certificates it signed
   * for `name` (docs/decisions/0026-host-key-trust-modes.md).
   */
  marker?: 'cert-authority';
}

const BRACKETED = /^\[([^\]]+)\]:(\d+)$/;

/** Says why `name` is not an exact known_hosts host name, or undefined when it is one. */
function nameProblem(name: string): string | undefined {
  const bracketed = BRACKETED.exec(name);
  if (bracketed !== null) {
    const port = Number(bracketed[2]);
    if (!isValidAddress(bracketed[1] as string)) return `${quoteValue(name)} does not name a host`;
    if (port < 1 || port > 65535 || port === 22)
      return `${quoteValue(name)} has port ${bracketed[2]} (1-65535, and port 22 is written without brackets)`;
    return undefined;
  }
  return isValidAddress(name)
    ? undefined
    : `${quoteValue(name)} is not an exact host name (patterns, lists and markers are not pins)`;
}

function storeError(message: string): ExocompError {
  return new ExocompError('host-key', message, {
    help: 'the pinned store holds unhashed `name keytype key` lines only; fix or remove the line (the ledger branch history has earlier versions)',
  });
}

const compareStrings = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const comparePins = (a: Pin, b: Pin): number =>
  compareStrings(a.name, b.name) ||
  compareStrings(a.marker ?? '', b.marker ?? '') ||
  compareStrings(a.keyType, b.keyType);
const samePin = (a: Pin, b: Pin): boolean => a.marker === b.marker && a.keyType === b.keyType && a.key === b.key;
/** What may appear once in the store: a name's key of one type, or its host CA of one type. */
const identityOf = (pin: Pin): string =>
  `${pin.marker === undefined ? '' : `@${pin.marker} `}${pin.name} ${pin.keyType}`;
const describePin = (pin: Pin): string => `${pin.marker === undefined ? '' : 'host CA '}${pin.keyType}`;

/** One line of the pinned store, as read. */
type StoreLine = { kind: 'blank' } | { kind: 'pin'; pin: Pin } | { kind: 'refused'; problem: string };

/**
 * Classifies one line of the pinned store. Only exact pins are accepted, and
 * `@cert-authority <exact name> <keytype> <key>` — a host CA for one host, as
 * the host-CA mode writes it; a CA line for a pattern, a list or a wildcard, and
 * every other marker, is refused.
 */
function readStoreLine(rawLine: string): StoreLine {
  const line = rawLine.trim();
  if (line === '' || line.startsWith('#')) return { kind: 'blank' };
  const refused = (problem: string): StoreLine => ({ kind: 'refused', problem });
  if (line.startsWith('|'))
    return refused('hashed host names (|1|…) are not kept in the pinned store; it must stay unhashed');
  const fields = line.split(/\s+/);
  const marked = fields[0] === '@cert-authority';
  if (!marked && line.startsWith('@'))
    return refused('markers such as @revoked are not pins (only @cert-authority for one exact name is kept)');
  const [name = '', keyType = '', key = ''] = marked ? fields.slice(1) : fields;
  if (key === '')
    return refused(marked ? 'expected `@cert-authority name keytype key`' : 'expected `name keytype key`');
  const problem = nameProblem(name) ?? keyProblem(keyType, key);
  if (problem !== undefined) return refused(problem);
  return { kind: 'pin', pin: marked ? { name, keyType, key, marker: 'cert-authority' } : { name, keyType, key } };
}

/**
 * Parses the pinned store. Blank and `#` lines are ignored; any other line that
 * is not an exact pin (hashed, marked, a pattern, a wildcard, garbage) is
 * refused with its line number: the store is used whole or not at all.
 */
export function parseKnownHosts(text: string): Pin[] {
  const pins: Pin[] = [];
  const seen = new Set<string>();
  text.split(/\r?\n/).forEach((rawLine, index) => {
    const where = `known_hosts line ${index + 1}`;
    const line = readStoreLine(rawLine);
    if (line.kind === 'blank') return;
    if (line.kind === 'refused') throw storeError(`${where}: ${line.problem}`);
    const identity = identityOf(line.pin);
    if (seen.has(identity))
      throw storeError(`${where}: a second ${describePin(line.pin)} key for ${quoteValue(line.pin.name)}`);
    seen.add(identity);
    pins.push(line.pin);
  });
  return pins.sort(comparePins);
}

/** Renders the pinned store: one `name keytype key` line per pin, sorted by name then key type. */
export function renderKnownHosts(pins: readonly Pin[]): PinnedKnownHosts {
  const identities = new Set<string>();
  for (const pin of pins) {
    const problem = nameProblem(pin.name) ?? keyProblem(pin.keyType, pin.key);
    if (problem !== undefined) throw new ExocompError('internal', `refusing to write a pin: ${problem}`);
    const identity = identityOf(pin);
    if (identities.has(identity))
      throw new ExocompError('internal', `refusing to write two ${describePin(pin)} pins for ${quoteValue(pin.name)}`);
    identities.add(identity);
  }
  return [...pins]
    .sort(comparePins)
    .map((pin) => `${pin.marker === undefined ? '' : `@${pin.marker} `}${pin.name} ${pin.keyType} ${pin.key}\n`)
    .join('') as PinnedKnownHosts;
}

/**
 * The keys `ssh-keyscan` printed for one known_hosts `name` (as
 * `knownHostsName` builds it). Comment lines and lines for other names are
 * skipped; names compare case-insensitively, as ssh looks them up.
 */
export function parseKeyscanOutput(text: string, name: string): Pin[] {
  const wanted = name.toLowerCase();
  const pins: Pin[] = [];
  for (const rawLine of text.split(/\r?\n/)) {
    const line = rawLine.trim();
    if (line === '' || line.startsWith('#')) continue;
    const [lineName = '', keyType = '', key = ''] = line.split(/\s+/);
    if (lineName.toLowerCase() !== wanted) continue;
    const problem = key === '' ? 'expected `name keytype key`' : keyProblem(keyType, key);
    if (problem !== undefined) {
      throw new ExocompError('host-key', `ssh-keyscan printed an unreadable line for ${quoteValue(name)}: ${problem}`, {
        help: 'scan the host by hand with ssh-keyscan to see what it presents',
      });
    }
    const existing = pins.find((pin) => pin.keyType === keyType);
    if (existing !== undefined && existing.key !== key) {
      throw new ExocompError('host-key', `ssh-keyscan returned two different ${keyType} keys for ${quoteValue(name)}`, {
        help: 'something answers for this host with more than one identity; check the network path before pinning',
      });
    }
    if (existing === undefined) pins.push({ name, keyType, key });
  }
  return pins.sort(comparePins);
}

export interface ReconcileInput {
  current: readonly Pin[];
  /** Keys scanned now, by known_hosts name. */
  scanned: ReadonlyMap<string, readonly Pin[]>;
  /** Names whose changed key the operator confirmed out of band. */
  rotate: ReadonlySet<string>;
  /** When given, pins of names outside it (and not scanned now) are retired. */
  inventoryNames?: ReadonlySet<string>;
}

export interface KeyChange {
  name: string;
  expected: Pin[];
  got: Pin[];
}

export interface ReconcileResult {
  next: Pin[];
  added: string[];
  unchanged: string[];
  rotated: string[];
  retired: string[];
  changed: KeyChange[];
}

/**
 * Trust on first use, one way. A name never pinned gets all its scanned keys.
 * A pinned name is unchanged when every scanned key either matches a pin or is of
 * a type not pinned; its pins are kept exactly — a key type first seen now is not
 * added, because keyscan fetches each type over a separate connection and one
 * unauthenticated answer must not widen what we trust. A scanned key of a pinned
 * type that differs from the pin, or a scan sharing no key with the pins, is a
 * change: it stays pinned as before and is reported, unless the name is in
 * `rotate`, which replaces its pins with the scan (rotation is also how new key
 * types are accepted deliberately).
 */
export function reconcilePins(input: ReconcileInput): ReconcileResult {
  const pinnedByName = new Map<string, Pin[]>();
  for (const pin of input.current) pinnedByName.set(pin.name, [...(pinnedByName.get(pin.name) ?? []), pin]);

  const nextByName = new Map(pinnedByName);
  const result: Omit<ReconcileResult, 'next'> = { added: [], unchanged: [], rotated: [], retired: [], changed: [] };

  for (const name of [...input.scanned.keys()].sort()) {
    const scanned = [...(input.scanned.get(name) ?? [])].sort(comparePins);
    if (scanned.length === 0) {
      throw new ExocompError('host-key', `no host key was scanned for ${quoteValue(name)}`, {
        help: 'the host answered no key exchange; check that sshd is running on that address and port',
      });
    }
    const foreign = scanned.find((pin) => pin.name !== name);
    if (foreign !== undefined) {
      throw new ExocompError('internal', `a key scanned for ${quoteValue(name)} is named ${quoteValue(foreign.name)}`);
    }
    const pinned = pinnedByName.get(name);
    if (pinned === undefined) {
      nextByName.set(name, scanned);
      result.added.push(name);
      continue;
    }
    const sharesKey = scanned.some((scan) => pinned.some((pin) => samePin(pin, scan)));
    const conflicts = scanned.some((scan) =>
      pinned.some((pin) => pin.marker === scan.marker && pin.keyType === scan.keyType && pin.key !== scan.key),
    );
    const identical =
      scanned.length === pinned.length && scanned.every((scan) => pinned.some((pin) => samePin(pin, scan)));
    if (input.rotate.has(name) && !identical) {
      nextByName.set(name, scanned);
      result.rotated.push(name);
    } else if (sharesKey && !conflicts) {
      result.unchanged.push(name);
    } else {
      result.changed.push({ name, expected: [...pinned].sort(comparePins), got: scanned });
    }
  }

  if (input.inventoryNames !== undefined) {
    for (const name of [...pinnedByName.keys()].sort()) {
      if (!input.inventoryNames.has(name) && !input.scanned.has(name)) {
        nextByName.delete(name);
        result.retired.push(name);
      }
    }
  }

  return { next: [...nextByName.values()].flat().sort(comparePins), ...result };
}

/** ssh-keyscan's -t name of a known_hosts key type. */
export function scanTypeOf(keyType: string): string {
  if (keyType === 'ssh-ed25519') return 'ed25519';
  if (keyType === 'ssh-rsa') return 'rsa';
  if (keyType.startsWith('ecdsa-sha2-')) return 'ecdsa';
  if (keyType === 'sk-ssh-ed25519@openssh.com') return 'ed25519-sk';
  if (keyType === 'sk-ecdsa-sha2-nistp256@openssh.com') return 'ecdsa-sk';
  return keyType;
}

/**
 * Hosts whose scan shares no key with their pins while they are pinned with
 * types the scan did not ask for (a scan of the types the plays prefer, against
 * a host pinned with others): their pinned types are to be scanned before the
 * key counts as changed. By known_hosts name, the -t names to scan.
 */
export function pinnedTypesToScan(
  current: readonly Pin[],
  scanned: ReadonlyMap<string, readonly Pin[]>,
): Map<string, string[]> {
  const wanted = new Map<string, string[]>();
  for (const [name, keys] of scanned) {
    // A host CA is not asked of the host: its key is the workspace's.
    const pinned = current.filter((pin) => pin.name === name && pin.marker === undefined);
    if (pinned.length === 0 || keys.some((key) => pinned.some((pin) => samePin(pin, key)))) continue;
    const scannedTypes = new Set(keys.map((key) => key.keyType));
    const missing = [
      ...new Set(pinned.filter((pin) => !scannedTypes.has(pin.keyType)).map((pin) => scanTypeOf(pin.keyType))),
    ];
    if (missing.length > 0) wanted.set(name, missing.sort());
  }
  return wanted;
}

/** A host as its first contact is judged: its known_hosts name, the address ssh connects to, what the workspace gives. */
export interface HostToJudge {
  /** The known_hosts name (`knownHostsName`). */
  name: string;
  address: string;
  trust?: HostTrust;
}

/**
 * The pins a host gets from what it presented: without trust, what it presented
 * (trust on first use); with known keys, those keys, once what it presented
 * matches them; with a host CA, the CA as `@cert-authority` for its name, once
 * it presented a certificate that CA signed. Pins never come from the host
 * where the workspace gave them. Returns the problem when it does not match.
 */
export function judgeFirstContact(
  host: HostToJudge,
  presented: readonly Pin[],
  nowSeconds: number,
): { pins: Pin[] } | { problem: string } {
  const { trust, name } = host;
  if (trust === undefined) return { pins: [...presented] };
  const problem =
    trust.kind === 'keys'
      ? knownKeysProblem(trust.keys, presented)
      : certificateProblem(trust.ca, presented, host.address, nowSeconds);
  if (problem !== undefined) return { problem };
  return trust.kind === 'keys'
    ? { pins: trust.keys.map((key) => ({ name, ...key })).sort(comparePins) }
    : { pins: [{ name, ...trust.ca, marker: 'cert-authority' }] };
}
