/**
 * The rollout's arithmetic and its shard protocol (src/domain/rollout.ts):
 * batch ends, the budget, and — simulated over random fleets, shard counts,
 * failures and interleavings — that no host of a batch is played before the
 * batch before it is done and within budget, and that once the budget is
 * spent no shard plays again.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ExocompError } from '../../src/domain/errors.js';
import {
  allowedFailures,
  batchDone,
  batchEnds,
  budgetSpent,
  formatSize,
  hostsOfBatch,
  joinProblem,
  nextStep,
  parseMaxFailures,
  parseRollout,
  reportBatch,
  rolloutRecordSchema,
  startRollout,
  summarizeRollout,
  untouchedHosts,
  type RolloutRecord,
} from '../../src/domain/rollout.js';
import { shardOf } from '../../src/domain/shard.js';

const fleetOf = (n: number) => Array.from({ length: n }, (_, i) => `h${String(i).padStart(4, '0')}`);
const start = (rollout: string, max: string, hosts: string[], shards = 1): RolloutRecord =>
  startRollout(
    { rollout: parseRollout(rollout), maxFailures: parseMaxFailures(max) },
    { name: 'edge', runId: 'r1', shards, at: '2026-12-03T00:00:00Z' },
    hosts,
  );

describe('parsing', () => {
  it('reads counts and percentages, keeping hundredths exactly', () => {
    expect(parseRollout('1,10%,100%')).toEqual([
      { kind: 'count', count: 1 },
      { kind: 'percent', hundredths: 1000 },
      { kind: 'percent', hundredths: 10000 },
    ]);
    expect(parseMaxFailures('2%')).toEqual({ kind: 'percent', hundredths: 200 });
    expect(parseMaxFailures('0.5%')).toEqual({ kind: 'percent', hundredths: 50 });
    expect(parseMaxFailures('0')).toEqual({ kind: 'count', count: 0 });
    const written = ['1', '10%', '100%', '0.5%', '12.25%', '7.1%'];
    expect(written.map((raw) => formatSize(parseRollout(raw)[0]!))).toEqual([
      '1',
      '10%',
      '100%',
      '0.5%',
      '12.25%',
      '7.1%',
    ]);
  });

  it('refuses what is not cumulative, empty, over 100 % or a budget that never stops', () => {
    for (const raw of ['', '0', '10%,5%', '5,5', '1,,2', '101%', 'ten', '1.5', '-1', '10 %x'])
      expect(() => parseRollout(raw), raw).toThrow(ExocompError);
    for (const raw of ['100%', '-1', 'x', '1.5', '200%'])
      expect(() => parseMaxFailures(raw), raw).toThrow(ExocompError);
  });

  it('never throws anything but its typed error', () => {
    fc.assert(
      fc.property(fc.string(), (raw) => {
        for (const parse of [parseRollout, parseMaxFailures])
          try {
            parse(raw);
          } catch (error) {
            if (!(error instanceof ExocompError)) throw error;
          }
      }),
    );
  });
});

describe('batch ends and the budget', () => {
  it('gives 1, 10 % and the rest of 200 hosts, and of 20', () => {
    expect(batchEnds(parseRollout('1,10%,100%'), 200)).toEqual([1, 20, 200]);
    expect(batchEnds(parseRollout('1,10%,100%'), 20)).toEqual([1, 2, 20]);
    // 10 % of 5 rounds up to one host: the same end as the first batch, so no empty batch.
    expect(batchEnds(parseRollout('1,10%,100%'), 5)).toEqual([1, 5]);
    // Hosts after the last size form one more batch.
    expect(batchEnds(parseRollout('1,10%'), 50)).toEqual([1, 5, 50]);
  });

  it('allows failures up to the share of the fleet, rounded down (more than P % stops)', () => {
    expect(allowedFailures(parseMaxFailures('2%'), 20)).toBe(0);
    expect(allowedFailures(parseMaxFailures('2%'), 200)).toBe(4);
    expect(allowedFailures(parseMaxFailures('2%'), 2000)).toBe(40);
    expect(allowedFailures(parseMaxFailures('3'), 20)).toBe(3);
  });

  it('ends strictly increasing at the fleet size, every percentage at least one host, whatever the sizes', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            fc.integer({ min: 1, max: 300 }),
            fc.integer({ min: 1, max: 10000 }).map((h) => -h),
          ),
          {
            minLength: 1,
            maxLength: 6,
          },
        ),
        fc.integer({ min: 1, max: 3000 }),
        (raw, fleet) => {
          const sizes = raw.map((v) =>
            v > 0 ? { kind: 'count' as const, count: v } : { kind: 'percent' as const, hundredths: -v },
          );
          const ends = batchEnds(sizes, fleet);
          expect(ends.at(-1)).toBe(fleet);
          for (let i = 1; i < ends.length; i += 1) expect(ends[i]).toBeGreaterThan(ends[i - 1] as number);
          expect(ends[0]).toBeGreaterThanOrEqual(1);
        },
      ),
    );
  });

  it('stops exactly when failures exceed P % of the fleet', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 9999 }), fc.integer({ min: 1, max: 5000 }), (hundredths, fleet) => {
        const allowed = allowedFailures({ kind: 'percent', hundredths }, fleet);
        // allowed failures are within P %, one more is beyond it (integer arithmetic: failures × 10000 vs P × fleet).
        expect(allowed * 10000).toBeLessThanOrEqual(hundredths * fleet);
        expect((allowed + 1) * 10000).toBeGreaterThan(hundredths * fleet);
      }),
    );
  });
});

describe('the shard protocol', () => {
  it('plays batch 1 on the shard that owns its host while the other waits, then batch 2', () => {
    const hosts = fleetOf(20);
    let record = start('1,10%,100%', '2%', hosts, 2);
    const first = hostsOfBatch(record, 0);
    expect(first).toEqual(['h0000']);
    const owner = shardOf('h0000', 2);
    const other = 3 - owner;
    expect(nextStep(record, owner)).toEqual({ kind: 'play', batch: 0, hosts: first });
    // The other shard's first batch with hosts is a later one: it waits for batch 1.
    expect(nextStep(record, other)).toMatchObject({ kind: 'wait', batch: 0, shards: [owner] });
    record = reportBatch(record, { batch: 0, shard: owner, at: 't', hosts: 1, failed: [] });
    expect(batchDone(record, 0)).toBe(true);
    // Batch 2 is h0001: its shard plays it; the other shard (if h0001 is not its) waits for batch 2 next.
    const second = shardOf('h0001', 2);
    expect(nextStep(record, second)).toEqual({ kind: 'play', batch: 1, hosts: ['h0001'] });
    if (second === owner) expect(nextStep(record, other)).toMatchObject({ kind: 'wait', batch: 1 });
  });

  it('stops every shard once a failure exceeds the budget, and reports the batch, the failure and the untouched hosts', () => {
    const hosts = fleetOf(20);
    let record = start('1,10%,100%', '2%', hosts, 2);
    const owner = shardOf('h0000', 2);
    record = reportBatch(record, {
      batch: 0,
      shard: owner,
      at: 't',
      hosts: 1,
      failed: [{ host: 'h0000', reason: 'unreachable' }],
    });
    expect(budgetSpent(record)).toBe(true);
    expect(nextStep(record, 1)).toEqual({ kind: 'stop', batch: 0 });
    expect(nextStep(record, 2)).toEqual({ kind: 'stop', batch: 0 });
    const summary = summarizeRollout(record);
    expect(summary).toMatchObject({ batchReached: 1, batches: 3, stopped: true, allowedFailures: 0 });
    expect(summary.failed).toEqual([{ host: 'h0000', reason: 'unreachable' }]);
    expect(untouchedHosts(record)).toEqual(hosts.slice(1));
    expect(() => reportBatch(record, { batch: 0, shard: owner, at: 't', hosts: 1, failed: [] })).toThrow(ExocompError);
    expect(rolloutRecordSchema.parse(record)).toEqual(record);
  });

  it('refuses a shard given other settings, another shard count or another fleet', () => {
    const record = start('1,10%,100%', '2%', fleetOf(20), 2);
    expect(joinProblem(record, start('1,10%,100%', '2%', fleetOf(20).reverse(), 2))).toBeUndefined();
    expect(joinProblem(record, start('1,50%', '2%', fleetOf(20), 2))).toMatch(/--rollout 1,10%,100%/);
    expect(joinProblem(record, start('1,10%,100%', '2%', fleetOf(20), 3))).toMatch(/2 shard/);
    expect(joinProblem(record, start('1,10%,100%', '2%', fleetOf(21), 2))).toMatch(/inventory changed/);
  });

  it('in any interleaving of shards: batches in order, every shard stops once the budget is spent, the rest untouched', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 60 }),
        fc.integer({ min: 1, max: 5 }),
        fc.constantFrom('1,10%,100%', '2,50%', '10%,20%,100%', '5'),
        fc.constantFrom('0', '1', '2%', '10%'),
        fc.array(fc.nat(), { minLength: 200, maxLength: 200 }),
        fc.integer({ min: 0, max: 30 }),
        (size, shards, rollout, max, schedule, failEvery) => {
          const hosts = fleetOf(size);
          const failing = new Set(failEvery === 0 ? [] : hosts.filter((_, i) => i % failEvery === failEvery - 1));
          let record = start(rollout, max, hosts, shards);
          // Each shard: idle, or playing a batch (it read the record, decided, and plays before reporting).
          const playing = new Map<number, { batch: number; hosts: string[] }>();
          const finished = new Set<number>();
          const played: { host: string; batch: number; spentWhenStarted: boolean }[] = [];
          for (let tick = 0; finished.size < shards && tick < 10_000; tick += 1) {
            const shard = ((schedule[tick % schedule.length] as number) % shards) + 1;
            if (finished.has(shard)) continue;
            const current = playing.get(shard);
            if (current) {
              const failed = current.hosts
                .filter((h) => failing.has(h))
                .map((host) => ({ host, reason: 'failed' as const }));
              record = reportBatch(record, {
                batch: current.batch,
                shard,
                at: 't',
                hosts: current.hosts.length,
                failed,
              });
              playing.delete(shard);
              continue;
            }
            const step = nextStep(record, shard);
            if (step.kind === 'stop' || step.kind === 'done') finished.add(shard);
            if (step.kind !== 'play') continue;
            for (let earlier = 0; earlier < step.batch; earlier += 1) expect(batchDone(record, earlier)).toBe(true);
            for (const host of step.hosts)
              played.push({ host, batch: step.batch, spentWhenStarted: budgetSpent(record) });
            playing.set(shard, step);
          }
          expect(finished.size).toBe(shards);
          expect(played.every((p) => !p.spentWhenStarted)).toBe(true);
          // Every host played at most once, by its own shard, in the batch its position gives it.
          expect(new Set(played.map((p) => p.host)).size).toBe(played.length);
          const untouched = untouchedHosts(record);
          expect(untouched.length + played.length).toBe(size);
          if (!budgetSpent(record)) expect(untouched).toEqual([]);
          else {
            // Nothing after the batch the budget was spent in was played.
            const reached = Math.max(...played.map((p) => p.batch));
            const spentIn = record.reports.findIndex(
              (_, i) => record.reports.slice(0, i + 1).flatMap((r) => r.failed).length > record.allowedFailures,
            );
            expect(reached).toBeLessThanOrEqual(Math.max(...record.reports.slice(0, spentIn + 1).map((r) => r.batch)));
          }
        },
      ),
      { numRuns: 120 },
    );
  });
});
