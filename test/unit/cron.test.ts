import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/domain/errors.js';
import { convertCron, describeMinuteWarning } from '../../src/domain/cron.js';
import { quoteValue } from '../../src/domain/names.js';
import { thrown } from '../support/errors.js';

const FORMAT_HELP =
  "write six fields, seconds first — second minute hour day-of-month month day-of-week — e.g. '0 0 3 * * *' (03:00 UTC daily)";

describe('convertCron', () => {
  it.each([
    ['0 0 3 * * *', '0 3 * * *'],
    ['00 17 3 * * *', '17 3 * * *'],
    ['  0   0  3 * *   *  ', '0 3 * * *'],
    ['0 */5 * * * *', '*/5 * * * *'],
    ['0 */15 * * * *', '*/15 * * * *'],
    ['0 0,30 * * * *', '0,30 * * * *'],
    ['0 7,37 */2 * * *', '7,37 */2 * * *'],
    ['0 0-55/5 * * * *', '0-55/5 * * * *'],
    ['0 3/20 * * * *', '3-59/20 * * * *'],
    ['0 05 03 01 01 00', '5 3 1 1 0'],
    ['0 0 9 * * MON-FRI', '0 9 * * 1-5'],
    ['0 0 9 * * mon,wed,FRI', '0 9 * * 1,3,5'],
    ['0 0 9 * * SUN', '0 9 * * 0'],
    ['0 0 9 * * SAT', '0 9 * * 6'],
    ['0 0 9 1 JAN-MAR,dec *', '0 9 1 1-3,12 *'],
    ['0 0 9 ? * MON', '0 9 * * 1'],
    ['0 0 9 1 * ?', '0 9 1 * *'],
    ['0 0 9 */2 * *', '0 9 */2 * *'],
    ['0 0 0 31 12 *', '0 0 31 12 *'],
    ['0 59 23 * * *', '59 23 * * *'],
    ['0 0 0-23/6 * * *', '0 0-23/6 * * *'],
    ['0 5-5 * * * *', '5 * * * *'],
    ['0 */90 * * * *', '*/90 * * * *'],
    ['0 0 8-17 * * 1-5', '0 8-17 * * 1-5'],
    ['0 0 * * * *', '0 * * * *'],
  ])('%j → %j', (six, five) => {
    expect(convertCron(six)).toEqual({ cron: five });
  });

  describe('frequency', () => {
    it.each([
      // Within an hour.
      ['0 * * * * *', 1],
      ['0 ? * * * *', 1],
      ['0 */2 * * * *', 2],
      ['0 */4 * * * *', 4],
      ['0 0-10 * * * *', 1],
      ['0 1,2,3 * * * *', 1],
      ['0 0,4 3 * * *', 4],
      ['0 10,12,40 3 * * *', 2],
      ['0 0/3 * * * *', 3],
      // Across the hour: only when the next hour fires too.
      ['0 0,58 * * * *', 2],
      ['0 1,58 3-4 * * *', 3],
      ['0 0,56 23,0 * * *', 4],
    ] as const)('refuses %j (every %d minute(s))', (six, gap) => {
      const error = thrown(() => convertCron(six));
      expect(error).toBeInstanceOf(UsageError);
      expect(error.message).toBe(
        `invalid schedule ${quoteValue(six)}: it fires as often as every ${gap} minute(s), but CI schedules run at most every 5 minutes`,
      );
      expect(error.help).toBe('use minutes at least 5 apart, e.g. */5, */15 or 7,37');
    });

    it.each([
      ['0 */5 * * * *', '*/5 * * * *'],
      ['0 0,55 * * * *', '0,55 * * * *'],
      ['0 1,58 3 * * *', '1,58 3 * * *'],
      ['0 1,58 3,5 * * *', '1,58 3,5 * * *'],
      ['0 0,59 23 * * *', '0,59 23 * * *'],
      ['0 2,57 3,4 * * *', '2,57 3,4 * * *'],
      ['0 0,5,10 * * * *', '0,5,10 * * * *'],
    ])('accepts %j, whose fires are at least 5 minutes apart', (six, five) => {
      expect(convertCron(six)).toEqual({ cron: five });
    });
  });

  it.each([
    ['', 'expected six fields, got 0'],
    ['   ', 'expected six fields, got 0'],
    ['0 3 * * *', 'expected six fields, got 5 — it looks like a five-field cron; put the seconds field 0 in front'],
    ['0 0 3 * * * 2025', 'expected six fields, got 7'],
    ['0 0 3', 'expected six fields, got 3'],
    ['@daily', 'descriptors like @daily are not supported'],
    ['@every 5m', 'descriptors like @daily are not supported'],
  ])('refuses %j: %s', (six, problem) => {
    const error = thrown(() => convertCron(six));
    expect(error).toBeInstanceOf(UsageError);
    expect(error.message).toBe(`invalid schedule ${quoteValue(six)}: ${problem}`);
    expect(error.help).toBe(FORMAT_HELP);
  });

  it.each(['30', '1', '*', '*/30', '0-59', '0,30', '000'])('refuses the seconds field %j', (seconds) => {
    const six = `${seconds} 0 3 * * *`;
    const error = thrown(() => convertCron(six));
    expect(error).toBeInstanceOf(UsageError);
    expect(error.message).toBe(
      `invalid schedule ${quoteValue(six)}: the seconds field is ${quoteValue(seconds)}, but CI schedules have minute resolution`,
    );
    expect(error.help).toBe("make the seconds field 0, e.g. '0 0 3 * * *'");
  });

  it.each([
    ['0 60 3 * * *', 'minute', '60', '60 is out of range 0-59'],
    ['0 0 24 * * *', 'hour', '24', '24 is out of range 0-23'],
    ['0 0 3 0 * *', 'day-of-month', '0', '0 is out of range 1-31'],
    ['0 0 3 32 * *', 'day-of-month', '32', '32 is out of range 1-31'],
    ['0 0 3 * 0 *', 'month', '0', '0 is out of range 1-12'],
    ['0 0 3 * 13 *', 'month', '13', '13 is out of range 1-12'],
    ['0 0 3 * * 7', 'day-of-week', '7', '7 is out of range 0-6'],
    ['0 0 3 * * 1-7', 'day-of-week', '1-7', '7 is out of range 0-6'],
    [
      '0 0 3 * * 99999999999999999999',
      'day-of-week',
      '99999999999999999999',
      '99999999999999999999 is out of range 0-6',
    ],
    ['0 0 3 * * FUN', 'day-of-week', 'FUN', '"FUN" is neither a number nor a name like MON'],
    ['0 0 3 * JANUARY *', 'month', 'JANUARY', '"JANUARY" is neither a number nor a name like FEB'],
    ['0 0 MON * * *', 'hour', 'MON', '"MON" is not a number'],
    ['0 0 3 JAN * *', 'day-of-month', 'JAN', '"JAN" is not a number'],
    ['0 -5 3 * * *', 'minute', '-5', 'cannot read "-5"'],
    ['0 5- 3 * * *', 'minute', '5-', 'cannot read "5-"'],
    ['0 1-2-3 3 * * *', 'minute', '1-2-3', 'cannot read "1-2-3"'],
    ['0 */5/2 3 * * *', 'minute', '*/5/2', 'cannot read "*/5/2"'],
    ['0 *-5 3 * * *', 'minute', '*-5', 'cannot read "*-5"'],
    ['0 L 3 * * *', 'minute', 'L', '"L" is not a number'],
    ['0 0 3 * * 5#2', 'day-of-week', '5#2', 'cannot read "5#2"'],
    ['0 0 3 15W * *', 'day-of-month', '15W', '"15W" is not a number'],
    ['0 0 3 * * 1.5', 'day-of-week', '1.5', 'cannot read "1.5"'],
    ['0 10-5 3 * * *', 'minute', '10-5', 'range "10-5" runs backwards'],
    ['0 0 3 * * FRI-MON', 'day-of-week', 'FRI-MON', 'range "FRI-MON" runs backwards'],
    ['0 */0 3 * * *', 'minute', '*/0', 'step "0" in "*/0" is not a positive whole number'],
    ['0 */ 3 * * *', 'minute', '*/', 'step "" in "*/" is not a positive whole number'],
    ['0 */x 3 * * *', 'minute', '*/x', 'step "x" in "*/x" is not a positive whole number'],
    ['0 0-30/-5 3 * * *', 'minute', '0-30/-5', 'step "-5" in "0-30/-5" is not a positive whole number'],
    ['0 5,,35 3 * * *', 'minute', '5,,35', 'empty list item in "5,,35"'],
    ['0 5, 3 * * *', 'minute', '5,', 'empty list item in "5,"'],
    ['0 ,5 3 * * *', 'minute', ',5', 'empty list item in ",5"'],
  ])('refuses %j: %s field %j', (six, field, token, problem) => {
    const error = thrown(() => convertCron(six));
    expect(error).toBeInstanceOf(UsageError);
    expect(error.message).toBe(`invalid schedule ${quoteValue(six)}: ${field} field ${quoteValue(token)}: ${problem}`);
    expect(error.help).toBe(FORMAT_HELP);
  });
});

describe('schedules that can never fire', () => {
  it.each([
    ['0 0 3 31 2 *', 'day 31 does not exist in FEB'],
    ['0 0 3 30 FEB *', 'day 30 does not exist in FEB'],
    ['0 0 3 31 4,6,9,11 *', 'day 31 does not exist in APR, JUN, SEP, NOV'],
    ['0 0 3 30-31 2 ?', 'day 30 (the earliest chosen) does not exist in FEB'],
    ['0 0 3 31 2 */2', 'day 31 does not exist in FEB'],
  ])('refuses %j', (six, reason) => {
    const error = thrown(() => convertCron(six));
    expect(error).toBeInstanceOf(UsageError);
    expect(error.message).toBe(`invalid schedule ${quoteValue(six)}: it never fires: ${reason}`);
    expect(error.help).toMatch(/^choose a day that exists/);
  });

  it.each([
    ['0 0 3 29 2 *', '0 3 29 2 *'],
    ['0 0 3 31 2,3 *', '0 3 31 2,3 *'],
    ['0 0 3 30,31 4 *', '0 3 30,31 4 *'],
    // A restricted day-of-week makes cron fire on either day: every Monday of February.
    ['0 0 3 31 2 MON', '0 3 31 2 1'],
    ['0 0 3 31 2 0-6', '0 3 31 2 0-6'],
  ])('accepts %j, which fires', (six, five) => {
    expect(convertCron(six).cron).toBe(five);
  });
});

describe('describeMinuteWarning', () => {
  it.each(['0 3 * * *', '0,30 * * * *', '*/15 * * * *', '0-55/5 * * * *', '00 3 * * *'])('warns about %j', (five) => {
    expect(describeMinuteWarning(five)).toBe(
      `schedule ${quoteValue(five)} fires at minute 0, when GitHub Actions is busiest and scheduled runs are most often delayed or dropped; consider another minute (e.g. 17)`,
    );
  });

  it.each(['17 3 * * *', '7,37 * * * *', '5-55/10 * * * *', '3-59/20 * * * *'])('does not warn about %j', (five) => {
    expect(describeMinuteWarning(five)).toBeUndefined();
  });

  it('warns about what convertCron produced', () => {
    expect(describeMinuteWarning(convertCron('0 0 3 * * *').cron)).toContain('fires at minute 0');
    expect(describeMinuteWarning(convertCron('0 17 3 * * *').cron)).toBeUndefined();
  });

  it('refuses a malformed minute field', () => {
    const error = thrown(() => describeMinuteWarning('x 3 * * *'));
    expect(error).toBeInstanceOf(UsageError);
    expect(error.message).toBe('invalid schedule "x 3 * * *": minute field "x": "x" is not a number');
  });
});
