import { describe, expect, it } from 'vitest';
import { parseEgressPorts } from '../../src/domain/egress.js';
import {
  decideAcquire,
  describeHolder,
  holdsLock,
  LockHeldError,
  parseConcurrencyKey,
  renewLock,
  type LockRecord,
} from '../../src/domain/lock.js';
import type { Lease } from '../../src/domain/workflow.js';

const t0 = new Date('2030-01-01T00:00:00.000Z');
const later = (ms: number) => new Date(t0.getTime() + ms);

function lease(holder: string, at: Date, ttlMs = 60_000): Lease {
  return {
    holder,
    origin: { kind: 'local', hostname: 'box', pid: 4242 },
    acquiredAt: at.toISOString(),
    heartbeatAt: at.toISOString(),
    ttlMs,
  };
}

const held = (holder: string, at = t0): LockRecord => ({
  schemaVersion: 1,
  key: 'k',
  lease: lease(holder, at),
  purpose: 'playbook run a.yml --inventory tf:edge',
});

describe('decideAcquire', () => {
  it('takes a free lock', () => {
    const decision = decideAcquire('k', undefined, lease('me', t0), 'p', t0);
    expect(decision).toEqual({
      kind: 'acquire',
      record: { schemaVersion: 1, key: 'k', lease: lease('me', t0), purpose: 'p' },
    });
  });

  it('refuses a live lease of another holder', () => {
    expect(decideAcquire('k', held('other'), lease('me', later(1000)), 'p', later(1000))).toEqual({
      kind: 'held',
      record: held('other'),
    });
  });

  it('takes over a lease whose heartbeat expired', () => {
    const decision = decideAcquire('k', held('other'), lease('me', later(60_001)), 'p', later(60_001));
    expect(decision.kind).toBe('acquire');
    expect(decision.kind === 'acquire' && decision.replaced?.holder).toBe('other');
  });

  it('takes over a lease whose holder is gone, however fresh', () => {
    const decision = decideAcquire('k', held('other'), lease('me', later(1)), 'p', later(1), { holderGone: true });
    expect(decision.kind === 'acquire' && decision.record.lease.holder).toBe('me');
  });

  it('re-acquiring its own lease keeps the original acquisition time', () => {
    const decision = decideAcquire('k', held('me'), lease('me', later(5000)), 'p', later(5000));
    expect(decision.kind === 'acquire' && decision.record.lease.acquiredAt).toBe(t0.toISOString());
  });
});

describe('renewLock / holdsLock', () => {
  it('renews only its own lease', () => {
    expect(renewLock(held('me'), 'me', later(15_000))?.lease.heartbeatAt).toBe(later(15_000).toISOString());
    expect(renewLock(held('other'), 'me', later(15_000))).toBeUndefined();
    expect(renewLock(undefined, 'me', later(15_000))).toBeUndefined();
    expect(holdsLock(held('me'), 'me')).toBe(true);
    expect(holdsLock(held('other'), 'me')).toBe(false);
  });
});

describe('LockHeldError', () => {
  it('names the holder, where it runs and what it does', () => {
    const error = new LockHeldError(held('local:box:4242:ab'), '10m 00s');
    expect(error.message).toBe(
      `concurrency key k is held by ${describeHolder(held('local:box:4242:ab'))}; gave up after waiting 10m 00s`,
    );
    expect(error.message).toContain('pid 4242 on box');
    expect(error.message).toContain('playbook run a.yml --inventory tf:edge');
    expect(error.exitCode).toBe(1);
  });
});

describe('parseConcurrencyKey', () => {
  it.each(['fleet-converge', 'a', 'edge.converge_1'])('accepts %s', (key) =>
    expect(parseConcurrencyKey(key)).toBe(key),
  );
  it.each(['', 'Fleet', '-a', 'a/b', 'a..b', 'a b', 'x'.repeat(65)])('refuses %j', (key) => {
    expect(() => parseConcurrencyKey(key)).toThrow(/invalid concurrency key/);
  });
});

describe('parseEgressPorts', () => {
  it('always includes 22, sorted, without duplicates', () => {
    expect(parseEgressPorts([])).toEqual([22]);
    expect(parseEgressPorts(['2222', '443', '22', '443'])).toEqual([22, 443, 2222]);
  });
  it.each(['0', '65536', 'ssh', '-1', '22.5', ''])('refuses %j', (value) => {
    expect(() => parseEgressPorts([value])).toThrow(/invalid --egress port/);
  });
});
