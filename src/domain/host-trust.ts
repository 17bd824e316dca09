/**
 * What a host's key is checked against on first contact
 * (docs/decisions/0026-host-key-trust-modes.md): keys the workspace gives
 * (`exocomp_host_keys`), a host CA the workspace gives (`exocomp_host_ca`), or
 * trust on first use. Pure: the values come from tofu outputs and are
 * untrusted data, checked here before use.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { ExocompError } from './errors.js';
import { countedNames } from './host-list.js';
import { quoteValue } from './names.js';

export const HOST_KEYS_VARIABLE = 'exocomp_host_keys';
export const HOST_CA_VARIABLE = 'exocomp_host_ca';

/**
 * The run setting `host-keys`: `auto` checks hosts against the workspace's keys
 * or CA where given and trusts the others on first use; `known` refuses a host
 * with neither before any connection to it; `tofu` trusts every host on first use.
 */
export const HOST_KEY_MODES = ['auto', 'known', 'tofu'] as const;
export type HostKeyMode = (typeof HOST_KEY_MODES)[number];
export const hostKeyModeSchema = z.enum(HOST_KEY_MODES);

/** A public key as known_hosts holds it: its type and base64 blob. */
export interface PublicKey {
  keyType: string;
  key: string;
}

/** How a host's key is checked on first contact; absent: trust on first use. */
export type HostTrust = { kind: 'keys'; keys: PublicKey[] } | { kind: 'ca'; ca: PublicKey };

const KEY_TYPE = /^[a-z0-9][a-z0-9@.-]*$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const CERTIFICATE_TYPE = /-cert-v0[01]@openssh\.com$/;
// An OpenSSH public key line: type, blob, optional comment; printable ASCII only, one line.
const KEY_LINE = /^([^\s]+) ([^\s]+)(?: [\x20-\x7e]*)?$/;
/** Keys one host may be given: one per type is all ssh can present. */
const MAX_KEYS_PER_HOST = 8;

/** Says why `key` is not a public key blob of `keyType`, or undefined when it is one. */
export function publicKeyProblem(keyType: string, key: string): string | undefined {
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

/** `SHA256:…`, as ssh-keygen -l prints a key's fingerprint. */
export function fingerprint(key: PublicKey): string {
  const digest = createHash('sha256').update(Buffer.from(key.key, 'base64')).digest('base64');
  return `SHA256:${digest.replace(/=+$/, '')}`;
}

/** `ssh-ed25519 SHA256:…` for each key, comma-separated. */
export function describeKeys(keys: readonly PublicKey[]): string {
  return keys.map((key) => `${key.keyType} ${fingerprint(key)}`).join(', ');
}

function parseKeyLine(line: string): PublicKey | string {
  const match = KEY_LINE.exec(line.trim());
  if (match === null) return 'expected one `keytype base64 [comment]` line of printable ASCII';
  const [, keyType = '', key = ''] = match;
  if (CERTIFICATE_TYPE.test(keyType)) return `${keyType} is a certificate, not a host key`;
  return publicKeyProblem(keyType, key) ?? { keyType, key };
}

// A list of key lines, or one string of them (the `tls` provider's public_key_openssh ends with a newline).
const keyLinesSchema = z.union([
  z.string().transform((text) => text.split(/\r?\n/).filter((line) => line.trim() !== '')),
  z.array(z.string()),
]);

function trustError(host: string, variable: string, problem: string, help: string): ExocompError {
  return new ExocompError('inventory', `host ${quoteValue(host)}: ${variable} ${problem}`, { help });
}

const KEYS_HELP = `set ${HOST_KEYS_VARIABLE} to the host's public key lines (\`ssh-ed25519 AAAA…\`), e.g. tls_private_key.host.public_key_openssh; see docs/networks.md`;
const CA_HELP = `set ${HOST_CA_VARIABLE} to the host CA's public key line (\`ssh-ed25519 AAAA…\`, the .pub of the key that signs host certificates); see docs/networks.md`;

/** The host keys `exocomp_host_keys` gives, checked; refused naming the host and the variable. */
export function parseHostKeys(host: string, value: unknown): PublicKey[] {
  const lines = keyLinesSchema.safeParse(value);
  if (!lines.success) throw trustError(host, HOST_KEYS_VARIABLE, 'must be a string or a list of strings', KEYS_HELP);
  if (lines.data.length === 0) throw trustError(host, HOST_KEYS_VARIABLE, 'gives no key', KEYS_HELP);
  if (lines.data.length > MAX_KEYS_PER_HOST)
    throw trustError(host, HOST_KEYS_VARIABLE, `gives more than ${MAX_KEYS_PER_HOST} keys`, KEYS_HELP);
  const keys: PublicKey[] = [];
  lines.data.forEach((line, index) => {
    const parsed = parseKeyLine(line);
    if (typeof parsed === 'string')
      throw trustError(host, HOST_KEYS_VARIABLE, `line ${index + 1}: ${parsed}`, KEYS_HELP);
    if (keys.some((key) => key.keyType === parsed.keyType))
      throw trustError(host, HOST_KEYS_VARIABLE, `gives two ${parsed.keyType} keys`, KEYS_HELP);
    keys.push(parsed);
  });
  return keys;
}

/** The host CA `exocomp_host_ca` gives, checked: one public key line. */
export function parseHostCa(host: string, value: unknown): PublicKey {
  if (typeof value !== 'string') throw trustError(host, HOST_CA_VARIABLE, 'must be a string', CA_HELP);
  const parsed = parseKeyLine(value);
  if (typeof parsed === 'string') throw trustError(host, HOST_CA_VARIABLE, parsed, CA_HELP);
  return parsed;
}

/** A host's trust from its variables (host or group): keys, a CA, or none; both at once is refused. */
export function hostTrustOf(host: string, vars: ReadonlyMap<string, unknown>): HostTrust | undefined {
  const hasKeys = vars.has(HOST_KEYS_VARIABLE);
  const hasCa = vars.has(HOST_CA_VARIABLE);
  if (hasKeys && hasCa) {
    throw trustError(
      host,
      HOST_KEYS_VARIABLE,
      `and ${HOST_CA_VARIABLE} are both set: a host is checked against its known keys or a host CA, not both`,
      `drop one of them for this host (set ${HOST_CA_VARIABLE} on the groups of certified hosts only)`,
    );
  }
  if (hasKeys) return { kind: 'keys', keys: parseHostKeys(host, vars.get(HOST_KEYS_VARIABLE)) };
  if (hasCa) return { kind: 'ca', ca: parseHostCa(host, vars.get(HOST_CA_VARIABLE)) };
  return undefined;
}

/**
 * The hosts as the run's `host-keys` mode checks them: `tofu` drops every
 * workspace key and CA; `known` refuses, before any connection, every SSH host
 * that has neither, naming them all.
 */
export function underHostKeyMode<T extends { name: string; local: boolean; trust?: HostTrust }>(
  hosts: readonly T[],
  mode: HostKeyMode,
): T[] {
  if (mode === 'tofu') return hosts.map(({ trust: _dropped, ...host }) => host as T);
  if (mode === 'known') {
    const unknown = hosts.filter((h) => !h.local && h.trust === undefined).map((h) => h.name);
    if (unknown.length > 0) {
      throw new ExocompError(
        'host-key',
        `host-keys is known, but ${countedNames(unknown)} have no known key and no host CA; no connection was made to them`,
        {
          help: `give their keys in ${HOST_KEYS_VARIABLE} or a host CA in ${HOST_CA_VARIABLE} (docs/networks.md), or run with host-keys auto to trust them on first use`,
          detail: unknown.join('\n'),
          hosts: unknown,
        },
      );
    }
  }
  return [...hosts];
}

const sameKey = (a: PublicKey, b: PublicKey): boolean => a.keyType === b.keyType && a.key === b.key;

/**
 * Whether what a host presented matches the keys the workspace gives: at least
 * one presented key is one of them, and no presented key of a given type differs
 * from it. Undefined when it matches, else the problem, with both fingerprints.
 */
export function knownKeysProblem(expected: readonly PublicKey[], presented: readonly PublicKey[]): string | undefined {
  const shares = presented.some((got) => expected.some((want) => sameKey(got, want)));
  const differs = presented.some((got) =>
    expected.some((want) => want.keyType === got.keyType && want.key !== got.key),
  );
  if (shares && !differs) return undefined;
  const got = presented.length > 0 ? describeKeys(presented) : 'no key of those types';
  return `it presents ${got}; the workspace gives ${describeKeys(expected)}`;
}

/** What a host certificate says that a host CA check needs. */
export interface HostCertificate {
  keyType: string;
  /** 1: user, 2: host. */
  certType: number;
  principals: string[];
  validAfter: bigint;
  validBefore: bigint;
  signatureKey: PublicKey;
}

/** The fields of the certified key between the nonce and the serial, per key type (PROTOCOL.certkeys). */
const KEY_FIELDS: Record<string, number> = {
  'ssh-ed25519': 1,
  'sk-ssh-ed25519@openssh.com': 2,
  'ssh-rsa': 2,
  'ssh-dss': 4,
  'ecdsa-sha2-nistp256': 2,
  'ecdsa-sha2-nistp384': 2,
  'ecdsa-sha2-nistp521': 2,
  'sk-ecdsa-sha2-nistp256@openssh.com': 3,
};

class SshReader {
  private offset = 0;
  constructor(private readonly data: Buffer) {}
  bytes(): Buffer {
    const length = this.uint32();
    if (this.offset + length > this.data.length) throw new Error('truncated');
    const out = this.data.subarray(this.offset, this.offset + length);
    this.offset += length;
    return out;
  }
  uint32(): number {
    if (this.offset + 4 > this.data.length) throw new Error('truncated');
    const value = this.data.readUInt32BE(this.offset);
    this.offset += 4;
    return value;
  }
  uint64(): bigint {
    if (this.offset + 8 > this.data.length) throw new Error('truncated');
    const value = this.data.readBigUInt64BE(this.offset);
    this.offset += 8;
    return value;
  }
}

/** Reads an OpenSSH certificate blob (base64); undefined when it is not one this reader knows. */
export function readCertificate(certificate: PublicKey): HostCertificate | undefined {
  const plainType = certificate.keyType.replace(CERTIFICATE_TYPE, '');
  const fields = KEY_FIELDS[plainType];
  if (fields === undefined || plainType === certificate.keyType) return undefined;
  try {
    const reader = new SshReader(Buffer.from(certificate.key, 'base64'));
    if (reader.bytes().toString('latin1') !== certificate.keyType) return undefined;
    reader.bytes(); // nonce
    for (let i = 0; i < fields; i += 1) reader.bytes();
    reader.uint64(); // serial
    const certType = reader.uint32();
    reader.bytes(); // key id
    const packed = new SshReader(reader.bytes());
    const principals: string[] = [];
    for (;;) {
      let principal: Buffer;
      try {
        principal = packed.bytes();
      } catch {
        break;
      }
      principals.push(principal.toString('latin1'));
    }
    const validAfter = reader.uint64();
    const validBefore = reader.uint64();
    reader.bytes(); // critical options
    reader.bytes(); // extensions
    reader.bytes(); // reserved
    const signatureBlob = reader.bytes();
    const signatureType = new SshReader(signatureBlob).bytes().toString('latin1');
    return {
      keyType: certificate.keyType,
      certType,
      principals,
      validAfter,
      validBefore,
      signatureKey: { keyType: signatureType, key: signatureBlob.toString('base64') },
    };
  } catch {
    return undefined;
  }
}

/**
 * Whether a host presents a certificate for `address` that `ca` signed, valid
 * at `nowSeconds`. It reads who claims to have signed; ssh checks the signature
 * itself on every connection, against the `@cert-authority` pin. Undefined when
 * one certificate passes, else the problem, naming the fingerprints.
 */
export function certificateProblem(
  ca: PublicKey,
  presented: readonly PublicKey[],
  address: string,
  nowSeconds: number,
): string | undefined {
  const now = BigInt(Math.floor(nowSeconds));
  const problems: string[] = [];
  for (const presentedCert of presented) {
    const cert = readCertificate(presentedCert);
    if (cert === undefined) {
      problems.push(`a ${presentedCert.keyType} key that is not a certificate this reader knows`);
    } else if (!sameKey(cert.signatureKey, ca)) {
      problems.push(`a certificate signed by ${describeKeys([cert.signatureKey])}`);
    } else if (cert.certType !== 2) {
      problems.push('a user certificate, not a host certificate');
    } else if (cert.principals.length > 0 && !cert.principals.includes(address)) {
      problems.push(`a certificate for ${cert.principals.map((p) => quoteValue(p)).join(', ')}, not ${address}`);
    } else if (now < cert.validAfter || now >= cert.validBefore) {
      problems.push('a certificate outside its validity period');
    } else {
      return undefined;
    }
  }
  const got = problems.length > 0 ? problems.join('; ') : 'no host certificate (a plain key only)';
  return `it presents ${got}; the host CA is ${describeKeys([ca])}`;
}
