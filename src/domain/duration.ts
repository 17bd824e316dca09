import { ExocompError, UsageError } from './errors.js';
import { quoteValue } from './names.js';

const UNIT_MS = { h: 3_600_000, m: 60_000, s: 1_000, ms: 1 } as const;
type Unit = keyof typeof UNIT_MS;
const UNIT_ORDER: readonly Unit[] = ['h', 'm', 's', 'ms'];

/** Timers take at most a signed 32-bit delay; a longer one fires at once. */
export const MAX_DURATION_MS = 2 ** 31 - 1;

const DURATION_HELP = 'write a whole number and a unit — h, m, s or ms — e.g. 90s, 5m, 1h30m, 500ms';
const PART = /(\d+)(ms|h|m|s)(?![A-Za-z])/y;

function describeUnreadable(rest: string): string {
  if (/^\d+\.\d/.test(rest)) return 'use whole numbers (1h30m, not 1.5h)';
  const unknownUnit = /^\d+([^\d\s]+)/.exec(rest);
  if (unknownUnit?.[1] !== undefined) return `unknown unit ${quoteValue(unknownUnit[1])}`;
  return `cannot read ${quoteValue(rest)}`;
}

/** Parses `90s`, `5m`, `1h30m`, `500ms` into milliseconds. Units go largest first, each at most once. */
export function parseDuration(raw: string): number {
  const text = raw.trim();
  const refuse = (problem: string): never => {
    throw new UsageError(`invalid duration ${quoteValue(raw)}: ${problem}`, DURATION_HELP);
  };
  if (text === '') refuse('it is empty');
  if (text.startsWith('-')) refuse('a duration cannot be negative');
  if (/^\d+$/.test(text)) refuse('it has no unit');

  PART.lastIndex = 0;
  let total = 0;
  let previousUnitIndex = -1;
  while (PART.lastIndex < text.length) {
    const at = PART.lastIndex;
    const match = PART.exec(text);
    if (match === null) return refuse(describeUnreadable(text.slice(at)));
    const unit = match[2] as Unit;
    const unitIndex = UNIT_ORDER.indexOf(unit);
    if (unitIndex <= previousUnitIndex) refuse(`unit ${unit} is repeated or out of order (largest unit first)`);
    previousUnitIndex = unitIndex;
    total += Number(match[1]) * UNIT_MS[unit];
  }
  if (total === 0) refuse('it must be longer than zero');
  if (total > MAX_DURATION_MS) refuse('it is longer than the maximum of 596h');
  return total;
}

const pad2 = (n: number): string => String(n).padStart(2, '0');

/** Renders a duration for a terminal: `850ms`, `3.2s`, `1m 05s`, `2h 03m 09s`. Negative (clock skew) shows as 0ms. */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms)) {
    throw new ExocompError('internal', `formatDuration got ${String(ms)}`);
  }
  const clamped = Math.max(0, ms);
  if (Math.round(clamped) < 1000) return `${Math.round(clamped)}ms`;
  const tenths = Math.round(clamped / 100);
  if (tenths < 600) return `${(tenths / 10).toFixed(1)}s`;
  const seconds = Math.round(clamped / 1000);
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m ${pad2(seconds % 60)}s`;
  return `${Math.floor(seconds / 3600)}h ${pad2(Math.floor((seconds % 3600) / 60))}m ${pad2(seconds % 60)}s`;
}
