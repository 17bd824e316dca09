/**
 * Short-lived fleet credentials (issue 42, docs/keys.md "User CA"): a host
 * trusts a user CA for the fleet user, and each run signs a fresh key with it
 * that expires with the job. Pure rules here; ssh-keygen lives in
 * adapters/ssh-keys.ts, the record in ledger/records.ts.
 */
import { z } from 'zod';
import { UsageError } from './errors.js';
import { quoteValue } from './names.js';

/** What a host accepts for the fleet user: the fleet key (today's default), a CA certificate, or both (migration). */
export const FLEET_AUTH_MODES = ['key', 'cert', 'both'] as const;
export type FleetAuthMode = (typeof FLEET_AUTH_MODES)[number];
export const fleetAuthModeSchema = z.enum(FLEET_AUTH_MODES);

/** A certificate lives this long when the job's own limit is not known (issue 42: default 1 h). */
export const DEFAULT_CERTIFICATE_LIFETIME_MS = 60 * 60 * 1000;
/**
 * Backdated this much: a host whose clock runs behind the runner's would refuse a certificate that is not yet valid
 * (sshd compares valid-after with its own clock). A minute covers NTP-kept clocks without widening the window much.
 */
export const CLOCK_SKEW_ALLOWANCE_MS = 60 * 1000;

/** The window a run's certificate is valid in, in whole seconds since the epoch. */
export interface ValidityWindow {
  validAfter: number;
  validBefore: number;
}

export function validityWindow(nowMs: number, lifetimeMs: number): ValidityWindow {
  if (!Number.isFinite(lifetimeMs) || lifetimeMs <= 0)
    throw new UsageError(`a certificate lifetime must be positive (got ${lifetimeMs} ms)`, 'give e.g. 1h or 30m');
  return {
    validAfter: Math.floor((nowMs - CLOCK_SKEW_ALLOWANCE_MS) / 1000),
    validBefore: Math.ceil((nowMs + lifetimeMs) / 1000),
  };
}

/** ssh-keygen -V's absolute form (raw seconds as hexadecimal, ssh-keygen(1)): no time zone involved. */
export function validityArgument(window: ValidityWindow): string {
  return `0x${window.validAfter.toString(16)}:0x${window.validBefore.toString(16)}`;
}

/**
 * A certificate's key id names who held it (the workflow or CI run); it reaches ssh-keygen's argv and every host's
 * auth log, so it is kept to plain characters.
 */
const KEY_ID = /^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,127}$/;

export function checkKeyId(keyId: string): string {
  if (!KEY_ID.test(keyId))
    throw new UsageError(
      `the certificate key id ${quoteValue(keyId.slice(0, 80))} is not usable`,
      'a key id is 1-128 letters, digits and . _ : @ / - (the workflow or run id)',
    );
  return keyId;
}

/** The certificate's source-address critical option: a comma-separated list of addresses or CIDR blocks (sshd(8)). */
export const sourceAddressSchema = z
  .string()
  .max(1024)
  .regex(
    /^[0-9A-Fa-f.:]+(\/\d{1,3})?(,[0-9A-Fa-f.:]+(\/\d{1,3})?)*$/,
    'a comma-separated list of addresses or CIDR blocks, e.g. 203.0.113.0/24,2001:db8::/32',
  );

/** A certificate serial as ssh-keygen prints and takes it: a decimal u64, never 0 (0 means "no serial" to a KRL). */
export const serialSchema = z.string().regex(/^[1-9]\d{0,19}$/, 'a certificate serial is a positive decimal number');

/** A random serial below 2^63 (decimal), so each run's certificate can be revoked on its own. */
export function serialFrom(random: Uint8Array): string {
  if (random.length < 8) throw new Error('a serial needs 8 random bytes');
  let value = 0n;
  for (const byte of random.subarray(0, 8)) value = (value << 8n) | BigInt(byte);
  value &= (1n << 63n) - 1n;
  return (value === 0n ? 1n : value).toString();
}

/** A certificate a run was issued: who held which credential when (the private key never leaves the run). */
export const issuedCertificateSchema = z.object({
  serial: serialSchema,
  keyId: z.string().regex(KEY_ID),
  principal: z.string().min(1),
  /** Seconds since the epoch. */
  validAfter: z.number().int(),
  validBefore: z.number().int(),
  /** SHA256 fingerprint of the CA that signed it. */
  caFingerprint: z.string().min(1),
  sourceAddress: z.string().optional(),
});
export type IssuedCertificate = z.infer<typeof issuedCertificateSchema>;

/** A revocation: a serial or a key id, for every CA trusted when it was made. */
export const revocationSchema = z.union([
  z.object({ serial: serialSchema, at: z.string() }),
  z.object({ keyId: z.string().regex(KEY_ID), at: z.string() }),
]);
export type Revocation = z.infer<typeof revocationSchema>;

export const USER_CA_SCHEMA_VERSION = 1;
/** The issued list keeps this many recent entries; the record's history in git keeps every one. */
export const ISSUED_KEPT = 500;

export const userCaRecordSchema = z
  .object({
    schemaVersion: z.literal(USER_CA_SCHEMA_VERSION),
    issued: z.array(issuedCertificateSchema),
    revoked: z.array(revocationSchema),
  })
  .strict();
export type UserCaRecord = z.infer<typeof userCaRecordSchema>;

export function emptyUserCaRecord(): UserCaRecord {
  return { schemaVersion: USER_CA_SCHEMA_VERSION, issued: [], revoked: [] };
}

export function withIssued(record: UserCaRecord, issued: IssuedCertificate): UserCaRecord {
  return { ...record, issued: [...record.issued, issued].slice(-ISSUED_KEPT) };
}

/** `keys revoke <serial|key-id>`: a decimal number is a serial, anything else a key id. */
export function parseRevocationTarget(raw: string, at: string): Revocation {
  const text = raw.trim();
  if (serialSchema.safeParse(text).success) return { serial: text, at };
  return { keyId: checkKeyId(text), at };
}

export function withRevocation(record: UserCaRecord, revocation: Revocation): UserCaRecord {
  const same = (r: Revocation) =>
    'serial' in r && 'serial' in revocation
      ? r.serial === revocation.serial
      : 'keyId' in r && 'keyId' in revocation && r.keyId === revocation.keyId;
  return record.revoked.some(same) ? record : { ...record, revoked: [...record.revoked, revocation] };
}

/** The KRL specification ssh-keygen -k -s <CA> reads (ssh-keygen(1) "KEY REVOCATION LISTS"). */
export function krlSpecification(revoked: readonly Revocation[]): string {
  return revoked.map((r) => ('serial' in r ? `serial: ${r.serial}\n` : `id: ${r.keyId}\n`)).join('');
}
