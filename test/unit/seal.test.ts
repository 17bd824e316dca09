import { describe, expect, it } from 'vitest';
import {
  parseSealKey,
  sealOutputs,
  sealedRecordSchema,
  unsealOutputs,
  type SealedRecord,
} from '../../src/domain/seal.js';
import { thrown } from '../support/errors.js';

const KEY = 'correct-horse-battery-staple-0123';
const NOW = new Date('2025-01-02T03:04:05.000Z');
const PASSWORD = 'pa55-w0rd-that-must-stay-secret';

const outputs = {
  db_password: { value: PASSWORD, sensitive: true },
  'api-token': { value: 'tok-9f8e7d6c5b4a', sensitive: true },
  db_settings: { value: { user: 'app', port: 5432, secret_flag: 'hush-hush-value' }, sensitive: true },
  web_ip: { value: '127.0.0.2', sensitive: false },
  ansible_inventory: { value: { all: { hosts: { web: { ansible_host: '127.0.0.2' } } } }, sensitive: false },
};

function seal(workspace = 'demo'): SealedRecord {
  return sealOutputs({ workspace, outputs, key: KEY, now: NOW });
}

describe('sealOutputs / unsealOutputs', () => {
  it('round-trips sensitive outputs bound to env names; non-strings as JSON; non-sensitive left out', () => {
    const record = seal();
    expect(record.entries.map((e) => [e.output, e.env])).toEqual([
      ['api-token', 'API_TOKEN'],
      ['db_password', 'DB_PASSWORD'],
      ['db_settings', 'DB_SETTINGS'],
    ]);
    expect(record).toMatchObject({
      schemaVersion: 1,
      workspace: 'demo',
      sealedAt: NOW.toISOString(),
      algorithm: 'aes-256-gcm',
    });
    expect(unsealOutputs(record, KEY)).toEqual({
      API_TOKEN: 'tok-9f8e7d6c5b4a',
      DB_PASSWORD: PASSWORD,
      DB_SETTINGS: JSON.stringify(outputs.db_settings.value),
    });
  });

  it('survives a trip through JSON and validates against the schema', () => {
    const stored = JSON.parse(JSON.stringify(seal())) as unknown;
    const record = sealedRecordSchema.parse(stored);
    expect(unsealOutputs(record, KEY).DB_PASSWORD).toBe(PASSWORD);
  });

  it('puts no plaintext and no key material in the record', () => {
    const json = JSON.stringify(seal());
    for (const clear of [
      PASSWORD,
      'tok-9f8e7d6c5b4a',
      'hush-hush-value',
      '5432',
      KEY,
      Buffer.from(KEY).toString('base64'),
      Buffer.from(PASSWORD).toString('base64'),
    ]) {
      expect(json).not.toContain(clear);
    }
    // Non-sensitive outputs are not the seal's business either.
    expect(json).not.toContain('127.0.0.2');
  });

  it('uses a fresh salt and fresh IVs each time', () => {
    const a = seal();
    const b = seal();
    expect(a.kdf.salt).not.toBe(b.kdf.salt);
    expect(a.entries[0]?.ciphertext).not.toBe(b.entries[0]?.ciphertext);
    expect(new Set(a.entries.map((e) => e.iv)).size).toBe(a.entries.length);
  });

  it('refuses a wrong key without echoing either key', () => {
    const wrongKey = 'not-the-right-key-at-all-4567';
    const error = thrown(() => unsealOutputs(seal('demo'), wrongKey));
    expect(error.kind).toBe('seal');
    expect(error.message).toBe('the seal key does not open the sealed outputs of workspace demo');
    expect(error.help).toBeTruthy();
    expect(`${error.message} ${error.help}`).not.toContain(wrongKey);
    expect(`${error.message} ${error.help}`).not.toContain(KEY);
  });

  it('refuses tampered ciphertext', () => {
    const record = seal();
    const entry = record.entries[1]!;
    const bytes = Buffer.from(entry.ciphertext, 'base64');
    bytes[0] = bytes[0]! ^ 0x01;
    entry.ciphertext = bytes.toString('base64');
    const error = thrown(() => unsealOutputs(record, KEY));
    expect(error.kind).toBe('seal');
    expect(error.message).toContain('"db_password"');
    expect(error.message).toContain('altered');
  });

  it('refuses entries swapped between outputs', () => {
    const record = seal();
    const [first, second] = record.entries;
    // Keep the names in place, swap the sealed payloads.
    record.entries = [
      { ...first!, iv: second!.iv, tag: second!.tag, ciphertext: second!.ciphertext },
      { ...second!, iv: first!.iv, tag: first!.tag, ciphertext: first!.ciphertext },
      ...record.entries.slice(2),
    ];
    expect(thrown(() => unsealOutputs(record, KEY)).kind).toBe('seal');
  });

  it('refuses an entry renamed to bind its value to another env name', () => {
    const record = seal();
    record.entries[1] = { ...record.entries[1]!, env: 'PATH_OVERRIDE' };
    expect(thrown(() => unsealOutputs(record, KEY)).message).toContain('altered or moved');
  });

  it('refuses a record moved to another workspace', () => {
    const record = { ...seal('demo'), workspace: 'other' };
    expect(thrown(() => unsealOutputs(record, KEY)).kind).toBe('seal');
  });

  it('refuses a malformed record and a crafted, ruinously expensive kdf cost', () => {
    const record = seal();
    expect(
      thrown(() => unsealOutputs({ ...record, algorithm: 'none' } as unknown as SealedRecord, KEY)).message,
    ).toContain('malformed');
    const expensive = { ...record, kdf: { ...record.kdf, N: 2 ** 30 } };
    expect(thrown(() => unsealOutputs(expensive, KEY)).message).toContain('malformed');
  });

  it('refuses two outputs that bind to the same env name', () => {
    const error = thrown(() =>
      sealOutputs({
        workspace: 'demo',
        outputs: { 'db-password': { value: 'a', sensitive: true }, db_password: { value: 'b', sensitive: true } },
        key: KEY,
        now: NOW,
      }),
    );
    expect(error.kind).toBe('seal');
    expect(error.message).toContain('DB_PASSWORD');
  });

  it('makes an empty record when nothing is sensitive', () => {
    const record = sealOutputs({
      workspace: 'demo',
      outputs: { ip: { value: '127.0.0.2', sensitive: false } },
      key: KEY,
      now: NOW,
    });
    expect(record.entries).toEqual([]);
    expect(unsealOutputs(record, KEY)).toEqual({});
  });
});

describe('parseSealKey', () => {
  it('accepts a key of 16 characters or more, ignoring a trailing newline', () => {
    expect(parseSealKey('0123456789abcdef')).toBe('0123456789abcdef');
    expect(parseSealKey(`${KEY}\n`)).toBe(KEY);
  });

  it('refuses empty and short keys without echoing them', () => {
    for (const raw of [undefined, '', '   \n']) {
      expect(thrown(() => parseSealKey(raw)).message).toBe('the seal key is empty');
    }
    const error = thrown(() => parseSealKey('short-secret15c'));
    expect(error.kind).toBe('usage');
    expect(error.message).toContain('too short');
    expect(`${error.message} ${error.help}`).not.toContain('short-secret15c');
  });
});
