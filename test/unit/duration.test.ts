import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/domain/errors.js';
import { quoteValue } from '../../src/domain/names.js';
import { MAX_DURATION_MS, formatDuration, parseDuration } from '../../src/domain/duration.js';
import { thrown } from '../support/errors.js';

describe('parseDuration', () => {
  it.each([
    ['90s', 90_000],
    ['5m', 300_000],
    ['1h', 3_600_000],
    ['1h30m', 5_400_000],
    ['500ms', 500],
    ['2s', 2_000],
    ['1m30s', 90_000],
    ['1h1m1s1ms', 3_661_001],
    ['0h5m', 300_000],
    ['05m', 300_000],
    ['1ms', 1],
    ['  5m  ', 300_000],
    ['596h', 596 * 3_600_000],
    ['2147483647ms', MAX_DURATION_MS],
  ])('%j → %d ms', (raw, ms) => {
    expect(parseDuration(raw)).toBe(ms);
  });

  it.each([
    ['', 'it is empty'],
    ['   ', 'it is empty'],
    ['-5m', 'a duration cannot be negative'],
    ['5', 'it has no unit'],
    ['300', 'it has no unit'],
    ['5d', 'unknown unit "d"'],
    ['5min', 'unknown unit "min"'],
    ['5M', 'unknown unit "M"'],
    ['5sec', 'unknown unit "sec"'],
    ['1h30', 'cannot read "30"'],
    ['1.5h', 'use whole numbers (1h30m, not 1.5h)'],
    ['h', 'cannot read "h"'],
    ['1h 30m', 'cannot read " 30m"'],
    ['5m5m', 'unit m is repeated or out of order (largest unit first)'],
    ['30m1h', 'unit h is repeated or out of order (largest unit first)'],
    ['1s1m', 'unit m is repeated or out of order (largest unit first)'],
    ['0s', 'it must be longer than zero'],
    ['0h0m', 'it must be longer than zero'],
    ['597h', 'it is longer than the maximum of 596h'],
    ['2147483648ms', 'it is longer than the maximum of 596h'],
    [`${'9'.repeat(400)}h`, 'it is longer than the maximum of 596h'],
    ['+5m', 'cannot read "+5m"'],
  ])('refuses %j: %s', (raw, problem) => {
    const error = thrown(() => parseDuration(raw));
    expect(error).toBeInstanceOf(UsageError);
    expect(error.message).toBe(`invalid duration ${quoteValue(raw)}: ${problem}`);
    expect(error.help).toBe('write a whole number and a unit — h, m, s or ms — e.g. 90s, 5m, 1h30m, 500ms');
  });
});

describe('formatDuration', () => {
  it.each([
    [0, '0ms'],
    [0.4, '0ms'],
    [850, '850ms'],
    [999, '999ms'],
    [999.4, '999ms'],
    [999.5, '1.0s'],
    [1_000, '1.0s'],
    [3_200, '3.2s'],
    [3_249, '3.2s'],
    [3_250, '3.3s'],
    [59_940, '59.9s'],
    [59_950, '1m 00s'],
    [60_000, '1m 00s'],
    [65_000, '1m 05s'],
    [65_499, '1m 05s'],
    [599_000, '9m 59s'],
    [3_599_400, '59m 59s'],
    [3_599_500, '1h 00m 00s'],
    [3_725_000, '1h 02m 05s'],
    [90_000_000, '25h 00m 00s'],
    [-5, '0ms'],
  ])('%d ms → %j', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });

  it.each([NaN, Infinity, -Infinity])('refuses %d', (ms) => {
    const error = thrown(() => formatDuration(ms));
    expect(error.kind).toBe('internal');
    expect(error.message).toBe(`formatDuration got ${String(ms)}`);
  });
});
