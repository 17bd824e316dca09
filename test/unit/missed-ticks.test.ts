import { describe, expect, it } from 'vitest';
import { cronFireTimes, MAX_TICKS, missedTicks } from '../../src/domain/cron.js';
import { UsageError } from '../../src/domain/errors.js';
import { describeMissedTicks, missedTicksOf, parseScheduleTick, recordFire } from '../../src/domain/schedule-fires.js';
import { thrown } from '../support/errors.js';

const at = (iso: string) => new Date(iso);
const iso = (dates: Date[]) => dates.map((d) => d.toISOString().slice(0, 16));

describe('cronFireTimes', () => {
  it.each([
    [
      '17 3 * * *',
      '2026-11-01T00:00Z',
      '2026-11-03T23:59Z',
      ['2026-11-01T03:17', '2026-11-02T03:17', '2026-11-03T03:17'],
    ],
    ['*/20 10 * * *', '2026-11-01T10:00Z', '2026-11-01T11:00Z', ['2026-11-01T10:20', '2026-11-01T10:40']],
    // 2026-11-02 is a Monday.
    ['0 9 * * 1-5', '2026-10-31T00:00Z', '2026-11-03T23:00Z', ['2026-11-02T09:00', '2026-11-03T09:00']],
    // Both day fields restricted: either matches (the 1st, and Sundays).
    ['5 0 1 * 0', '2026-10-31T00:00Z', '2026-11-09T00:00Z', ['2026-11-01T00:05', '2026-11-08T00:05']],
    ['0 0 31 12 *', '2026-12-30T00:00Z', '2027-01-02T00:00Z', ['2026-12-31T00:00']],
    ['0 0 29 2 *', '2027-01-01T00:00Z', '2027-12-31T00:00Z', []],
  ])('%s in (%s, %s]', (cron, from, to, expected) => {
    expect(iso(cronFireTimes(cron, at(from), at(to)))).toEqual(expected);
  });

  it('excludes the start and includes the end', () => {
    expect(iso(cronFireTimes('*/5 * * * *', at('2026-11-01T00:00Z'), at('2026-11-01T00:10Z')))).toEqual([
      '2026-11-01T00:05',
      '2026-11-01T00:10',
    ]);
  });

  it('stops at MAX_TICKS', () => {
    expect(cronFireTimes('*/5 * * * *', at('2026-01-01T00:00Z'), at('2026-12-31T00:00Z'))).toHaveLength(MAX_TICKS);
  });

  it('refuses what is not a five-field cron', () => {
    expect(thrown(() => cronFireTimes('0 0 3 * * *', at('2026-01-01T00:00Z'), at('2026-01-02T00:00Z')))).toBeInstanceOf(
      UsageError,
    );
  });
});

describe('missedTicks', () => {
  const cron = '17 * * * *';
  const now = at('2026-11-01T06:00Z');

  it('finds nothing when every tick has its run, however late within the tolerance', () => {
    const fires = ['00:17', '01:25', '02:59', '03:18', '04:40', '05:17'].map((t) => at(`2026-11-01T${t}Z`));
    expect(missedTicks(cron, fires, now)).toEqual([]);
  });

  it('names the ticks GitHub dropped', () => {
    const fires = ['00:17', '01:20', '04:17', '05:18'].map((t) => at(`2026-11-01T${t}Z`));
    expect(iso(missedTicks(cron, fires, now))).toEqual(['2026-11-01T02:17', '2026-11-01T03:17']);
  });

  it('does not judge ticks before the first recorded run, or within the grace period', () => {
    const fires = [at('2026-11-01T03:17Z')];
    expect(iso(missedTicks(cron, fires, at('2026-11-01T05:20Z')))).toEqual(['2026-11-01T04:17']);
    expect(iso(missedTicks(cron, fires, at('2026-11-01T05:40Z')))).toEqual(['2026-11-01T04:17', '2026-11-01T05:17']);
  });

  it('does not let one run answer two ticks, nor a run too late answer any', () => {
    const fires = [at('2026-11-01T00:17Z'), at('2026-11-01T03:30Z')];
    // The 03:30 run answers 03:17, not 01:17 or 02:17 (too long ago).
    expect(iso(missedTicks(cron, fires, now))).toEqual([
      '2026-11-01T01:17',
      '2026-11-01T02:17',
      '2026-11-01T04:17',
      '2026-11-01T05:17',
    ]);
  });

  it('says nothing without any recorded run', () => {
    expect(missedTicks(cron, [], now)).toEqual([]);
  });
});

describe('schedule fires', () => {
  it('reads the five-field CI cron or the six-field one, both or neither', () => {
    const names = { name: '--schedule-name', cron: '--schedule-cron' };
    expect(parseScheduleTick('nightly', '17 3 * * *', names)).toEqual({ name: 'nightly', cron: '17 3 * * *' });
    expect(parseScheduleTick('nightly', '0 17 3 * * *', names)).toEqual({ name: 'nightly', cron: '17 3 * * *' });
    expect(parseScheduleTick(undefined, undefined, names)).toBeUndefined();
    expect(() => parseScheduleTick('nightly', undefined, names)).toThrow(
      /--schedule-name and --schedule-cron go together/,
    );
    expect(() => parseScheduleTick('Nightly!', '17 3 * * *', names)).toThrow(/invalid schedule name/);
    expect(() => parseScheduleTick('nightly', '@daily', names)).toThrow(/@daily are not supported/);
  });

  it('keeps the fires of one timetable: a changed cron starts over', () => {
    const first = recordFire(undefined, 'nightly', '17 3 * * *', at('2026-11-01T03:18Z'));
    const second = recordFire(first, 'nightly', '17 3 * * *', at('2026-11-02T03:19Z'));
    expect(second.fires).toEqual(['2026-11-01T03:18:00.000Z', '2026-11-02T03:19:00.000Z']);
    expect(recordFire(second, 'nightly', '17 4 * * *', at('2026-11-03T04:17Z')).fires).toEqual([
      '2026-11-03T04:17:00.000Z',
    ]);
  });

  it('says which ticks never ran, in one line, and nothing when none was missed', () => {
    const fires = recordFire(
      recordFire(undefined, 'nightly', '17 3 * * *', at('2026-11-01T03:18Z')),
      'nightly',
      '17 3 * * *',
      at('2026-11-03T03:20Z'),
    );
    const missed = missedTicksOf(fires, at('2026-11-03T12:00Z'));
    expect(iso(missed)).toEqual(['2026-11-02T03:17']);
    expect(describeMissedTicks(fires, missed)).toBe(
      "schedule nightly ('17 3 * * *' UTC): 1 tick(s) never ran: 2026-11-02T03:17:00.000Z",
    );
    expect(describeMissedTicks(fires, [])).toBeUndefined();
  });
});
