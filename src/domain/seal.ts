import { createCipheriv, createDecipheriv, createHmac, randomBytes, scryptSync, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { ExocompError, UsageError } from './errors.js';
import { envNameForOutput, quoteValue } from './names.js';

/**
 * Sealing of sensitive tofu outputs (docs/architecture.md, "Secrets"): AES-256-GCM, one record per
 * workspace, stored in the ledger branch. The record holds no plaintext and no
 * key material.
 *
 * Key derivation is scrypt with a random per-record salt, not HKDF: the seal key
 * is whatever a team pastes into a CI secret, often a passphrase, and the sealed
 * record sits in a git branch that may be readable by many (or public). scrypt
 * makes offline guessing of a weak key expensive; HKDF would only be safe for a
 * key that is already high-entropy. The cost is paid once per record, not per entry.
 *
 * Each entry is authenticated with additional data binding it to the workspace,
 * its output name and its env name, so an entry cannot be moved to another
 * output or another workspace's record. (Dropping an entry from a record is not
 * detected; it only makes a variable missing, it reveals nothing.)
 */

const SCRYPT_COST = { N: 2 ** 15, r: 8, p: 1 } as const;
/** Bounds for cost parameters read from a record, so a crafted record cannot make unsealing hang. */
const MAX_SCRYPT = { N: 2 ** 20, r: 16, p: 4 } as const;
const AAD_CONTEXT = 'exocomp-seal/v1';
const KEY_CHECK_CONTEXT = 'exocomp-seal/v1 key check';
const MIN_KEY_LENGTH = 16;

const base64 = z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/, 'must be base64');

export const SEALED_SCHEMA_VERSION = 1;

export const sealedRecordSchema = z.object({
  schemaVersion: z.literal(SEALED_SCHEMA_VERSION),
  workspace: z.string().min(1),
  sealedAt: z.iso.datetime(),
  algorithm: z.literal('aes-256-gcm'),
  kdf: z.object({
    name: z.literal('scrypt'),
    salt: base64,
    N: z
      .number()
      .int()
      .min(2)
      .max(MAX_SCRYPT.N)
      .refine((n) => (n & (n - 1)) === 0, 'must be a power of two'),
    r: z.number().int().min(1).max(MAX_SCRYPT.r),
    p: z.number().int().min(1).max(MAX_SCRYPT.p),
    /** HMAC of a fixed label under a derived subkey: tells a wrong key from a tampered entry. */
    keyCheck: base64,
  }),
  entries: z.array(
    z.object({
      output: z.string().min(1),
      env: z.string().regex(/^[A-Z_][A-Z0-9_]*$/),
      iv: base64,
      tag: base64,
      ciphertext: base64,
    }),
  ),
});

export type SealedRecord = z.infer<typeof sealedRecordSchema>;

export interface SealInput {
  workspace: string;
  outputs: Record<string, { value: unknown; sensitive: boolean }>;
  key: string;
  now: Date;
}

/** Validates a seal key from `--seal-key` / `EXOCOMP_SEAL_KEY` without ever echoing it. */
export function parseSealKey(raw: string | undefined): string {
  // A trailing newline from a pasted secret or a file must not change the key.
  const key = (raw ?? '').trim();
  const help = 'use a random value of at least 32 characters, e.g. the output of `openssl rand -base64 32`';
  if (key.length === 0) throw new UsageError('the seal key is empty', help);
  if (key.length < MIN_KEY_LENGTH) {
    throw new UsageError(
      `the seal key is too short (${key.length} characters; at least ${MIN_KEY_LENGTH} required)`,
      help,
    );
  }
  return key;
}

/** Encrypts the sensitive outputs of a workspace; non-sensitive outputs are not included. */
export function sealOutputs({ workspace, outputs, key, now }: SealInput): SealedRecord {
  const salt = randomBytes(16);
  const keys = deriveKeys(key, salt, SCRYPT_COST);
  const sealedAt = now.toISOString();
  const envOwners = new Map<string, string>();
  const entries: SealedRecord['entries'] = [];
  for (const [output, { value, sensitive }] of Object.entries(outputs).sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (!sensitive) continue;
    const env = envNameForOutput(output);
    const owner = envOwners.get(env);
    if (owner !== undefined) {
      throw new ExocompError(
        'seal',
        `sensitive outputs ${quoteValue(owner)} and ${quoteValue(output)} of workspace ${workspace} both map to ${env}`,
        {
          help: 'rename one of the outputs so each maps to its own environment variable',
        },
      );
    }
    envOwners.set(env, output);
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', keys.encryption, iv);
    cipher.setAAD(additionalData(workspace, output, env));
    const ciphertext = Buffer.concat([cipher.update(envValue(value), 'utf8'), cipher.final()]);
    entries.push({
      output,
      env,
      iv: iv.toString('base64'),
      tag: cipher.getAuthTag().toString('base64'),
      ciphertext: ciphertext.toString('base64'),
    });
  }
  return sealedRecordSchema.parse({
    schemaVersion: SEALED_SCHEMA_VERSION,
    workspace,
    sealedAt,
    algorithm: 'aes-256-gcm',
    kdf: {
      name: 'scrypt',
      salt: salt.toString('base64'),
      ...SCRYPT_COST,
      keyCheck: keyCheck(keys.check).toString('base64'),
    },
    entries,
  });
}

/** Decrypts a sealed record into env name → value. */
export function unsealOutputs(record: SealedRecord, key: string): Record<string, string> {
  const parsed = sealedRecordSchema.safeParse(record);
  if (!parsed.success) {
    throw new ExocompError('seal', `the sealed outputs record is malformed: ${z.prettifyError(parsed.error)}`, {
      help: 'seal the outputs again by re-running the apply step',
    });
  }
  const { workspace, kdf, entries } = parsed.data;
  const keys = deriveKeys(key, Buffer.from(kdf.salt, 'base64'), kdf);
  const expectedCheck = Buffer.from(kdf.keyCheck, 'base64');
  const actualCheck = keyCheck(keys.check);
  if (expectedCheck.length !== actualCheck.length || !timingSafeEqual(expectedCheck, actualCheck)) {
    throw new ExocompError('seal', `the seal key does not open the sealed outputs of workspace ${workspace}`, {
      help: 'pass the seal key the outputs were sealed with (--seal-key or EXOCOMP_SEAL_KEY), or re-run the apply step to seal them with the current key',
    });
  }
  const values: Record<string, string> = {};
  for (const entry of entries) {
    try {
      const decipher = createDecipheriv('aes-256-gcm', keys.encryption, Buffer.from(entry.iv, 'base64'));
      decipher.setAAD(additionalData(workspace, entry.output, entry.env));
      decipher.setAuthTag(Buffer.from(entry.tag, 'base64'));
      values[entry.env] = Buffer.concat([
        decipher.update(Buffer.from(entry.ciphertext, 'base64')),
        decipher.final(),
      ]).toString('utf8');
    } catch (error) {
      throw new ExocompError(
        'seal',
        `sealed output ${quoteValue(entry.output)} of workspace ${workspace} fails authentication: it was altered or moved`,
        {
          help: 'restore the sealed record from the ledger branch history, or re-run the apply step to seal the outputs again',
          cause: error,
        },
      );
    }
  }
  return values;
}

function deriveKeys(
  key: string,
  salt: Buffer,
  cost: { N: number; r: number; p: number },
): { encryption: Buffer; check: Buffer } {
  const material = scryptSync(key, salt, 64, { ...cost, maxmem: 256 * cost.N * cost.r });
  return { encryption: material.subarray(0, 32), check: material.subarray(32) };
}

function keyCheck(checkKey: Buffer): Buffer {
  return createHmac('sha256', checkKey).update(KEY_CHECK_CONTEXT).digest();
}

function additionalData(workspace: string, output: string, env: string): Buffer {
  return Buffer.from(JSON.stringify([AAD_CONTEXT, workspace, output, env]), 'utf8');
}

/** What the play sees: strings as they are, anything else as JSON. */
function envValue(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value ?? null);
}
