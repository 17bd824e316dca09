import { UsageError } from './errors.js';
import { quoteValue } from './names.js';

/**
 * Converts the seed's six-field cron (seconds first, robfig/cron style) to the
 * five fields a CI schedule takes, refusing what a CI cron cannot express.
 */

interface FieldSpec {
  readonly label: string;
  readonly min: number;
  readonly max: number;
  readonly names?: readonly string[];
}

const MONTH_NAMES = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAY_NAMES = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

const MINUTE: FieldSpec = { label: 'minute', min: 0, max: 59 };
const FIVE_FIELDS: readonly FieldSpec[] = [
  MINUTE,
  { label: 'hour', min: 0, max: 23 },
  { label: 'day-of-month', min: 1, max: 31 },
  { label: 'month', min: 1, max: 12, names: MONTH_NAMES },
  { label: 'day-of-week', min: 0, max: 6, names: DAY_NAMES },
];

/** GitHub Actions runs schedules at most this often. */
export const MIN_INTERVAL_MINUTES = 5;

const FORMAT_HELP =
  "write six fields, seconds first — second minute hour day-of-month month day-of-week — e.g. '0 0 3 * * *' (03:00 UTC daily)";

class FieldError extends Error {}

interface ParsedField {
  readonly rendered: string;
  readonly values: ReadonlySet<number>;
}

const ITEM = /^(?:([*?])|([A-Za-z0-9]+)(?:-([A-Za-z0-9]+))?)(?:\/([^/]*))?$/;

function parseValue(token: string, spec: FieldSpec): number {
  if (/^\d+$/.test(token)) {
    const value = Number(token);
    if (value < spec.min || value > spec.max) {
      throw new FieldError(`${token} is out of range ${spec.min}-${spec.max}`);
    }
    return value;
  }
  const index = spec.names?.indexOf(token.toUpperCase()) ?? -1;
  if (index < 0) {
    throw new FieldError(
      spec.names
        ? `${quoteValue(token)} is neither a number nor a name like ${spec.names[1]}`
        : `${quoteValue(token)} is not a number`,
    );
  }
  return spec.min + index;
}

function parseItem(item: string, spec: FieldSpec): { rendered: string; values: number[] } {
  const match = ITEM.exec(item);
  if (match === null) throw new FieldError(`cannot read ${quoteValue(item)}`);
  const [, star, startToken, endToken, stepToken] = match;
  let step = 1;
  if (stepToken !== undefined) {
    if (!/^\d+$/.test(stepToken) || Number(stepToken) === 0) {
      throw new FieldError(`step ${quoteValue(stepToken)} in ${quoteValue(item)} is not a positive whole number`);
    }
    step = Number(stepToken);
  }
  let start = spec.min;
  let end = spec.max;
  let rendered: string;
  if (star !== undefined) {
    rendered = stepToken === undefined ? '*' : `*/${step}`;
  } else {
    start = parseValue(startToken as string, spec);
    if (endToken !== undefined) {
      end = parseValue(endToken, spec);
      if (end < start) throw new FieldError(`range ${quoteValue(item)} runs backwards`);
    } else if (stepToken === undefined) {
      end = start;
    }
    // `a/n` (robfig) means a through the field's maximum; five-field crons spell it a-max/n.
    rendered = end === start && stepToken === undefined ? `${start}` : `${start}-${end}`;
    if (stepToken !== undefined) rendered += `/${step}`;
  }
  const values: number[] = [];
  for (let value = start; value <= end; value += step) values.push(value);
  return { rendered, values };
}

function parseField(text: string, spec: FieldSpec): ParsedField {
  const rendered: string[] = [];
  const values = new Set<number>();
  for (const item of text.split(',')) {
    if (item === '') throw new FieldError(`empty list item in ${quoteValue(text)}`);
    const parsed = parseItem(item, spec);
    rendered.push(parsed.rendered);
    for (const value of parsed.values) values.add(value);
  }
  return { rendered: rendered.join(','), values };
}

function parseFields(raw: string, fieldTexts: readonly string[], specs: readonly FieldSpec[]): ParsedField[] {
  return specs.map((spec, index) => {
    const text = fieldTexts[index] as string;
    try {
      return parseField(text, spec);
    } catch (error) {
      if (!(error instanceof FieldError)) throw error;
      throw new UsageError(
        `invalid schedule ${quoteValue(raw)}: ${spec.label} field ${quoteValue(text)}: ${error.message}`,
        FORMAT_HELP,
      );
    }
  });
}

/**
 * The shortest time between two consecutive fires, in minutes. Minutes wrap to
 * the next hour only when the next hour fires too (23 → 0 counts as adjacent).
 */
function shortestGapMinutes(minutes: ReadonlySet<number>, hours: ReadonlySet<number>): number {
  const sorted = [...minutes].sort((a, b) => a - b);
  const first = sorted[0] as number;
  const last = sorted[sorted.length - 1] as number;
  let shortest = Infinity;
  for (let i = 1; i < sorted.length; i += 1) {
    shortest = Math.min(shortest, (sorted[i] as number) - (sorted[i - 1] as number));
  }
  if ([...hours].some((hour) => hours.has((hour + 1) % 24))) {
    shortest = Math.min(shortest, 60 - last + first);
  }
  return shortest;
}

export function convertCron(raw: string): { cron: string } {
  const fields = raw.trim().split(/\s+/);
  if (raw.trim().startsWith('@')) {
    throw new UsageError(`invalid schedule ${quoteValue(raw)}: descriptors like @daily are not supported`, FORMAT_HELP);
  }
  if (fields.length !== 6 || fields[0] === '') {
    const count = fields[0] === '' ? 0 : fields.length;
    const hint = count === 5 ? ' — it looks like a five-field cron; put the seconds field 0 in front' : '';
    throw new UsageError(`invalid schedule ${quoteValue(raw)}: expected six fields, got ${count}${hint}`, FORMAT_HELP);
  }
  const [seconds, ...rest] = fields as [string, ...string[]];
  if (seconds !== '0' && seconds !== '00') {
    throw new UsageError(
      `invalid schedule ${quoteValue(raw)}: the seconds field is ${quoteValue(seconds)}, but CI schedules have minute resolution`,
      "make the seconds field 0, e.g. '0 0 3 * * *'",
    );
  }
  const parsed = parseFields(raw, rest, FIVE_FIELDS);
  const [minute, hour] = parsed as [ParsedField, ParsedField, ...ParsedField[]];
  const gap = shortestGapMinutes(minute.values, hour.values);
  if (gap < MIN_INTERVAL_MINUTES) {
    throw new UsageError(
      `invalid schedule ${quoteValue(raw)}: it fires as often as every ${gap} minute(s), ` +
        `but CI schedules run at most every ${MIN_INTERVAL_MINUTES} minutes`,
      'use minutes at least 5 apart, e.g. */5, */15 or 7,37',
    );
  }
  const never = neverFiresReason(parsed);
  if (never !== undefined) {
    throw new UsageError(
      `invalid schedule ${quoteValue(raw)}: it never fires: ${never}`,
      'choose a day that exists in the chosen month(s), e.g. 28 for the end of February, or use day-of-week',
    );
  }
  return { cron: parsed.map((field) => field.rendered).join(' ') };
}

// The longest each month can be (February: 29, in leap years).
const DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/**
 * Why a schedule can never fire, or undefined. A day-of-week field not starting
 * with '*' makes cron fire on either matching day (and every month has every
 * weekday); otherwise the chosen days must exist in at least one chosen month
 * (31 February never comes).
 */
function neverFiresReason(fields: readonly ParsedField[]): string | undefined {
  const [, , days, months, weekdays] = fields as [ParsedField, ParsedField, ParsedField, ParsedField, ParsedField];
  if (!weekdays.rendered.startsWith('*')) return undefined;
  const firstDay = Math.min(...days.values);
  const monthList = [...months.values].sort((a, b) => a - b);
  if (monthList.some((month) => firstDay <= (DAYS_IN_MONTH[month - 1] as number))) return undefined;
  const monthNames = monthList.map((month) => MONTH_NAMES[month - 1] as string).join(', ');
  return `day ${firstDay}${days.values.size > 1 ? ' (the earliest chosen)' : ''} does not exist in ${monthNames}`;
}

/**
 * A warning (not an error) for a five-field cron that fires at minute 0: GitHub
 * delays or drops scheduled runs most often at the top of the hour.
 */
export function describeMinuteWarning(fiveField: string): string | undefined {
  const minuteText = fiveField.trim().split(/\s+/)[0] ?? '';
  const minute = parseFields(fiveField, [minuteText], [MINUTE])[0] as ParsedField;
  if (!minute.values.has(0)) return undefined;
  return (
    `schedule ${quoteValue(fiveField)} fires at minute 0, when GitHub Actions is busiest and scheduled ` +
    'runs are most often delayed or dropped; consider another minute (e.g. 17)'
  );
}

// ---------------------------------------------------------------------------
// Fire times and missed ticks (issue 12 item 4)
// ---------------------------------------------------------------------------

const MINUTE_MS = 60_000;
/** Fire times are enumerated minute by minute: bound the work for a long look-back. */
export const MAX_TICKS = 2_000;

/**
 * The times a five-field CI cron fires in (from, to], UTC, at most `MAX_TICKS`.
 * As in cron, when both day-of-month and day-of-week are restricted, a day
 * matching either fires.
 */
export function cronFireTimes(fiveField: string, from: Date, to: Date): Date[] {
  const texts = fiveField.trim().split(/\s+/);
  if (texts.length !== 5)
    throw new UsageError(`invalid CI schedule ${quoteValue(fiveField)}: expected five fields`, FORMAT_HELP);
  const [minute, hour, dom, month, dow] = parseFields(fiveField, texts, FIVE_FIELDS) as [
    ParsedField,
    ParsedField,
    ParsedField,
    ParsedField,
    ParsedField,
  ];
  const domAny = (texts[2] as string).startsWith('*');
  const dowAny = (texts[4] as string).startsWith('*');
  const dayMatches = (t: Date): boolean => {
    const byDom = dom.values.has(t.getUTCDate());
    const byDow = dow.values.has(t.getUTCDay());
    if (domAny || dowAny) return byDom && byDow;
    return byDom || byDow;
  };
  const times: Date[] = [];
  let t = Math.floor(from.getTime() / MINUTE_MS) * MINUTE_MS + MINUTE_MS;
  for (; t <= to.getTime() && times.length < MAX_TICKS; t += MINUTE_MS) {
    const at = new Date(t);
    if (!month.values.has(at.getUTCMonth() + 1) || !dayMatches(at)) {
      // Skip to the next day: nothing fires on this one.
      t = Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate() + 1) - MINUTE_MS;
      continue;
    }
    if (hour.values.has(at.getUTCHours()) && minute.values.has(at.getUTCMinutes())) times.push(at);
  }
  return times;
}

export interface MissedTickOptions {
  /** A run that starts this late after its tick still counts for it (GitHub delays busy-hour runs). */
  toleranceMinutes?: number;
  /** Ticks this recent are not judged yet: their run may still be queued. */
  graceMinutes?: number;
}

/**
 * Ticks of `fiveField` since the first recorded fire that no recorded fire
 * answers. Each fire answers the latest unanswered tick at or before it,
 * within the tolerance; GitHub drops scheduled runs at busy times and leaves no
 * trace of them, so the missing ones are only visible this way.
 */
export function missedTicks(
  fiveField: string,
  fires: readonly Date[],
  now: Date,
  options: MissedTickOptions = {},
): Date[] {
  const { toleranceMinutes = 60, graceMinutes = 15 } = options;
  const sorted = [...fires].sort((a, b) => a.getTime() - b.getTime());
  const first = sorted[0];
  if (first === undefined) return [];
  // The tick the first recorded run answered is the start of what can be judged.
  const ticks = cronFireTimes(
    fiveField,
    new Date(first.getTime() - toleranceMinutes * MINUTE_MS - MINUTE_MS),
    new Date(now.getTime() - graceMinutes * MINUTE_MS),
  );
  const answered = new Set<number>();
  for (const fire of sorted) {
    const tick = ticks.findLastIndex(
      (t, i) =>
        !answered.has(i) &&
        t.getTime() <= fire.getTime() &&
        fire.getTime() - t.getTime() <= toleranceMinutes * MINUTE_MS,
    );
    if (tick >= 0) answered.add(tick);
  }
  const firstAnswered = Math.min(...[...answered]);
  return ticks.filter((_, i) => !answered.has(i) && i > firstAnswered);
}
