import { describe, expect, it } from 'vitest';
import { countedNames, MAX_NAMES_SHOWN, someNames } from '../../src/domain/host-list.js';

const hosts = (count: number) => Array.from({ length: count }, (_, i) => `h${i + 1}`);

describe('host lists on one line', () => {
  it('names every host up to ten', () => {
    expect(someNames(['web1'])).toBe('web1');
    expect(countedNames(hosts(10))).toBe('10 host(s): h1, h2, h3, h4, h5, h6, h7, h8, h9, h10');
  });

  it('names the first ten of 300 and counts the rest', () => {
    const line = countedNames(hosts(300));
    expect(line).toBe('300 host(s): h1, h2, h3, h4, h5, h6, h7, h8, h9, h10 and 290 more');
    expect(line.match(/\bh\d+/g)).toHaveLength(MAX_NAMES_SHOWN);
    expect(line).not.toContain('\n');
  });

  it('shows at least one name whatever the limit', () => {
    expect(someNames(hosts(3), 0)).toBe('h1 and 2 more');
  });
});
