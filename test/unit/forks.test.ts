/**
 * Issue 29 item 4: a play's forks follow its host count and the runner's cores,
 * bounded, and the caller's own ANSIBLE_FORKS wins.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ANSIBLE_DEFAULT_FORKS, chooseForks, FORKS_PER_CORE, MAX_FORKS } from '../../src/domain/forks.js';

describe('forks', () => {
  it('a few hosts get one fork each, never more forks than hosts', () => {
    expect(chooseForks(1, 8)).toBe(1);
    expect(chooseForks(3, 2)).toBe(3);
    expect(chooseForks(0, 2)).toBe(1);
  });

  it('many hosts get a few forks per core, never fewer than ansible’s default, never more than the ceiling', () => {
    expect(chooseForks(400, 1)).toBe(ANSIBLE_DEFAULT_FORKS);
    expect(chooseForks(400, 2)).toBe(2 * FORKS_PER_CORE);
    expect(chooseForks(400, 4)).toBe(4 * FORKS_PER_CORE);
    expect(chooseForks(2000, 64)).toBe(MAX_FORKS);
  });

  it('an unknown host count (a user’s inventory file) takes the cores’ share', () => {
    expect(chooseForks(undefined, 2)).toBe(2 * FORKS_PER_CORE);
    expect(chooseForks(undefined, 1)).toBe(ANSIBLE_DEFAULT_FORKS);
    expect(chooseForks(undefined, 128)).toBe(MAX_FORKS);
  });

  it('odd core counts are read as at least one whole core', () => {
    expect(chooseForks(400, 0)).toBe(ANSIBLE_DEFAULT_FORKS);
    expect(chooseForks(400, Number.NaN)).toBe(ANSIBLE_DEFAULT_FORKS);
    expect(chooseForks(400, 2.9)).toBe(2 * FORKS_PER_CORE);
  });

  it('the caller’s ANSIBLE_FORKS wins: exocomp sets nothing, ansible reads theirs', () => {
    expect(chooseForks(400, 2, '25')).toBeUndefined();
    expect(chooseForks(1, 2, '3')).toBeUndefined();
    // Set but empty is not a setting.
    expect(chooseForks(400, 2, '')).toBe(2 * FORKS_PER_CORE);
    expect(chooseForks(400, 2, '  ')).toBe(2 * FORKS_PER_CORE);
  });

  it('is always a whole number between 1 and the ceiling, and never above the host count', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 100_000 }), fc.integer({ min: 0, max: 1024 }), (hosts, cores) => {
        const forks = chooseForks(hosts, cores)!;
        expect(Number.isInteger(forks)).toBe(true);
        expect(forks).toBeGreaterThanOrEqual(1);
        expect(forks).toBeLessThanOrEqual(Math.min(MAX_FORKS, Math.max(1, hosts)));
        if (hosts >= ANSIBLE_DEFAULT_FORKS) expect(forks).toBeGreaterThanOrEqual(ANSIBLE_DEFAULT_FORKS);
      }),
    );
  });
});
