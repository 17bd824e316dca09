import { ExocompError } from './errors.js';
import { isValidAddress } from './inventory.js';
import { quoteValue } from './names.js';

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
}

const KEY_TYPE = /^[a-z0-9][a-z0-9@.-]*$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
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

/** Says why `key` is not a public key blob of `keyType`, or undefined when it is one. */
function keyProblem(keyType: string, key: string): string | undefined {
  if (!KEY_TYPE.test(keyType)) return `key type ${quoteValue(keyType)} is not a key type`;
  if (!BASE64.test(key) || key.length % 4 !== 0) return `the ${keyType} key is not base64`;
  // The blob starts with its own type as an SSH string (uint32 length, bytes): a cheap check that the line is intact.
  const blob = Buffer.from(key, 'base64');
  const typeLength = blob.length >= 4 ? blob.readUInt32BE(0) : -1;
  const embedded =
    typeLength >= 0 && blob.length >= 4 + typeLength ? blob.subarray(4, 4 + typeLength).toString('latin1') : undefined;
  if (embedded !== keyType) return `the key blob is not a ${keyType} key`;
  return undefined;
}

function storeError(message: string): ExocompError {
  return new ExocompError('host-key', message, {
    help: 'the pinned store holds unhashed `name keytype key` lines only; fix or remove the line (the ledger branch history has earlier versions)',
  });
}

const compareStrings = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const comparePins = (a: Pin, b: Pin): number => compareStrings(a.name, b.name) || compareStrings(a.keyType, b.keyType);
const samePin = (a: Pin, b: Pin): boolean => a.keyType === b.keyType && a.key === b.key;

/** One line of the pinned store, as read. */
type StoreLine = { kind: 'blank' } | { kind: 'pin'; pin: Pin } | { kind: 'refused'; problem: string };

/**
 * Classifies one line of the pinned store. Only exact pins are accepted: a
 * marker line is refused, `@cert-authority` included — a host-CA mode would
 * add its own line kind here, accepted only when that mode is configured.
 */
function readStoreLine(rawLine: string): StoreLine {
  const line = rawLine.trim();
  if (line === '' || line.startsWith('#')) return { kind: 'blank' };
  const refused = (problem: string): StoreLine => ({ kind: 'refused', problem });
  if (line.startsWith('|'))
    return refused('hashed host names (|1|…) are not kept in the pinned store; it must stay unhashed');
  if (line.startsWith('@cert-authority'))
    return refused('@cert-authority lines are not pins, and the pinned store holds pins only');
  if (line.startsWith('@')) return refused('markers such as @revoked are not pins');
  const [name = '', keyType = '', key = ''] = line.split(/\s+/);
  if (key === '') return refused('expected `name keytype key`');
  const problem = nameProblem(name) ?? keyProblem(keyType, key);
  return problem === undefined ? { kind: 'pin', pin: { name, keyType, key } } : refused(problem);
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
    const identity = `${line.pin.name} ${line.pin.keyType}`;
    if (seen.has(identity))
      throw storeError(`${where}: a second ${line.pin.keyType} key for ${quoteValue(line.pin.name)}`);
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
    const identity = `${pin.name} ${pin.keyType}`;
    if (identities.has(identity))
      throw new ExocompError('internal', `refusing to write two ${pin.keyType} pins for ${quoteValue(pin.name)}`);
    identities.add(identity);
  }
  return [...pins]
    .sort(comparePins)
    .map((pin) => `${pin.name} ${pin.keyType} ${pin.key}\n`)
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
      pinned.some((pin) => pin.keyType === scan.keyType && pin.key !== scan.key),
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
    const pinned = current.filter((pin) => pin.name === name);
    if (pinned.length === 0 || keys.some((key) => pinned.some((pin) => samePin(pin, key)))) continue;
    const scannedTypes = new Set(keys.map((key) => key.keyType));
    const missing = [
      ...new Set(pinned.filter((pin) => !scannedTypes.has(pin.keyType)).map((pin) => scanTypeOf(pin.keyType))),
    ];
    if (missing.length > 0) wanted.set(name, missing.sort());
  }
  return wanted;
}
