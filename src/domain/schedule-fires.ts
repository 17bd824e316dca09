/**
 * The recorded fire times of each schedule (drift checks and converges alike),
 * from which missed ticks are computed: GitHub drops scheduled runs at busy
 * times and leaves no trace, so only the runs that did start can say which
 * ticks never ran.
 */
import { z } from 'zod';
import { convertCron, missedTicks } from './cron.js';
import { UsageError } from './errors.js';
import { parseScheduleName } from './schedule.js';

/** A scheduled run's schedule: its name and its five-field cron (as CI spells it). */
export interface ScheduleTick {
  name: string;
  cron: string;
}

/**
 * The schedule a run answers, from the name and the cron a face was given: five
 * fields as CI writes them (GitHub's `github.event.schedule`, a GitLab template's
 * input) or the six-field form `schedule add` takes. Both, or neither.
 */
export function parseScheduleTick(
  name: string | undefined,
  cron: string | undefined,
  names: { name: string; cron: string },
): ScheduleTick | undefined {
  if (name === undefined && cron === undefined) return undefined;
  if (name === undefined || cron === undefined) {
    throw new UsageError(
      `${names.name} and ${names.cron} go together`,
      'pass both to record this run as a tick of that schedule, or neither',
    );
  }
  const fields = cron.trim().split(/\s+/);
  return { name: parseScheduleName(name), cron: convertCron(fields.length === 5 ? `0 ${cron.trim()}` : cron).cron };
}

export const SCHEDULE_FIRES_SCHEMA_VERSION = 1;
/** Fire times kept per schedule: enough to judge weeks of a 5-minute schedule's recent past. */
export const SCHEDULE_FIRES_LIMIT = 500;

export const scheduleFiresSchema = z.object({
  schemaVersion: z.literal(SCHEDULE_FIRES_SCHEMA_VERSION),
  name: z.string(),
  /** The five-field CI cron the runs reported. */
  cron: z.string(),
  fires: z.array(z.string()),
});
export type ScheduleFires = z.infer<typeof scheduleFiresSchema>;

/** Records one fire; a changed cron starts a new record (old fires belong to another timetable). */
export function recordFire(
  previous: ScheduleFires | undefined,
  name: string,
  cron: string,
  firedAt: Date,
): ScheduleFires {
  const fires = previous !== undefined && previous.cron === cron ? previous.fires : [];
  return {
    schemaVersion: SCHEDULE_FIRES_SCHEMA_VERSION,
    name,
    cron,
    fires: [...fires, firedAt.toISOString()].slice(-SCHEDULE_FIRES_LIMIT),
  };
}

export function missedTicksOf(record: ScheduleFires | undefined, now: Date): Date[] {
  if (record === undefined) return [];
  return missedTicks(
    record.cron,
    record.fires.map((f) => new Date(f)),
    now,
  );
}

/** `schedule nightly ('17 3 * * *' UTC): 2 tick(s) never ran: …`; undefined when none was missed. */
export function describeMissedTicks(schedule: ScheduleTick, ticks: readonly Date[]): string | undefined {
  if (ticks.length === 0) return undefined;
  return `schedule ${schedule.name} ('${schedule.cron}' UTC): ${ticks.length} tick(s) never ran: ${ticks.map((t) => t.toISOString()).join(', ')}`;
}
