/** The user CA's pure rules (issue 42): validity windows, serials, key ids, revocations and the KRL specification. */
import { describe, expect, it } from 'vitest';
import {
  CLOCK_SKEW_ALLOWANCE_MS,
  ISSUED_KEPT,
  emptyUserCaRecord,
  krlSpecification,
  parseRevocationTarget,
  serialFrom,
  sourceAddressSchema,
  userCaRecordSchema,
  validityArgument,
  validityWindow,
  withIssued,
  withRevocation,
  type IssuedCertificate,
} from '../../src/domain/user-ca.js';

const issued = (serial: string): IssuedCertificate => ({
  serial,
  keyId: 'edge-1',
  principal: 'exocomp',
  validAfter: 1,
  validBefore: 2,
  caFingerprint: 'SHA256:abc',
});

describe('user CA rules', () => {
  it('makes a window from now (backdated for clock skew) to the lifetime, as ssh-keygen -V raw seconds', () => {
    const now = Date.UTC(2026, 0, 1);
    const window = validityWindow(now, 3_600_000);
    expect(window.validAfter).toBe((now - CLOCK_SKEW_ALLOWANCE_MS) / 1000);
    expect(window.validBefore).toBe(now / 1000 + 3600);
    expect(validityArgument(window)).toBe(`0x${window.validAfter.toString(16)}:0x${window.validBefore.toString(16)}`);
    expect(() => validityWindow(now, 0)).toThrow(/must be positive/);
  });

  it('draws serials below 2^63 and never 0', () => {
    expect(serialFrom(new Uint8Array(8))).toBe('1');
    expect(serialFrom(new Uint8Array(8).fill(0xff))).toBe(((1n << 63n) - 1n).toString());
    expect(() => serialFrom(new Uint8Array(4))).toThrow();
  });

  it('reads a revocation target as a serial when it is a number, else as a checked key id', () => {
    expect(parseRevocationTarget('42', 't')).toEqual({ serial: '42', at: 't' });
    expect(parseRevocationTarget('edge-123', 't')).toEqual({ keyId: 'edge-123', at: 't' });
    expect(() => parseRevocationTarget('bad id; rm -rf /', 't')).toThrow(/not usable/);
    expect(() => parseRevocationTarget('', 't')).toThrow(/not usable/);
  });

  it('keeps revocations once each and writes the KRL specification ssh-keygen -k reads', () => {
    let record = withRevocation(emptyUserCaRecord(), { serial: '7', at: 't' });
    record = withRevocation(record, { serial: '7', at: 'u' });
    record = withRevocation(record, { keyId: 'edge-1', at: 't' });
    expect(record.revoked).toHaveLength(2);
    expect(krlSpecification(record.revoked)).toBe('serial: 7\nid: edge-1\n');
    expect(krlSpecification([])).toBe('');
  });

  it('keeps the latest issued certificates and refuses a record it does not understand', () => {
    let record = emptyUserCaRecord();
    for (let i = 1; i <= ISSUED_KEPT + 2; i++) record = withIssued(record, issued(String(i)));
    expect(record.issued).toHaveLength(ISSUED_KEPT);
    expect(record.issued[0]!.serial).toBe('3');
    expect(userCaRecordSchema.safeParse(record).success).toBe(true);
    expect(userCaRecordSchema.safeParse({ ...record, extra: 1 }).success).toBe(false);
    expect(userCaRecordSchema.safeParse({ ...record, issued: [{ ...issued('0') }] }).success).toBe(false);
  });
});

describe('source-address', () => {
  it('takes addresses and CIDR blocks, and nothing an option line could carry more in', () => {
    for (const ok of ['203.0.113.7/32', '10.0.0.0/8,2001:db8::/32', '127.0.0.1'])
      expect(sourceAddressSchema.safeParse(ok).success, ok).toBe(true);
    for (const bad of ['', 'any', '10.0.0.0/8 ,1.2.3.4', '1.2.3.4\nforce-command=sh', '1.2.3.4,'])
      expect(sourceAddressSchema.safeParse(bad).success, bad).toBe(false);
  });
});
