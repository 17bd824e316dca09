/**
 * A scheduled run records the fire of its schedule (its cron and when it ran),
 * so the ticks that never ran can be told (docs/drift.md, "Missed schedule
 * ticks"). Drift checks record it with their run; converges on their own.
 */
import { missedTicksOf, recordFire, type ScheduleTick } from '../../domain/schedule-fires.js';
import { readScheduleFires, RecordWrites } from '../../ledger/records.js';
import type { LedgerSnapshot } from '../../ledger/store.js';
import type { AppContext } from '../runtime/context.js';

/** Adds the fire to `writes`; returns the schedule's missed ticks as of `now`. */
export function addScheduleFire(
  snapshot: LedgerSnapshot,
  writes: RecordWrites,
  tick: ScheduleTick,
  firedAt: Date,
  now: Date,
): Date[] {
  const fires = recordFire(readScheduleFires(snapshot, tick.name), tick.name, tick.cron, firedAt);
  writes.scheduleFires(fires);
  return missedTicksOf(fires, now);
}

/** The fire of a converge, which has no other record to write with it, in a commit of its own; the schedule's missed ticks. */
export async function recordScheduleFire(app: AppContext, tick: ScheduleTick, firedAt: Date): Promise<Date[]> {
  return app.store.update((snapshot) => {
    const writes = new RecordWrites();
    const missed = addScheduleFire(snapshot, writes, tick, firedAt, app.now());
    return { writes, message: `schedule ${tick.name}: fired at ${firedAt.toISOString()}`, result: missed };
  });
}
