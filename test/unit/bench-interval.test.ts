/** The interval bench:chain and bench:onboard print beside the median of the rounds' ratios. */
import { describe, expect, it } from 'vitest';
import { medianInterval } from '../../bench/side-by-side.js';

/** n rounds whose ratios are their own ranks (1, 2, …, n), so an interval reads as the ranks it spans. */
const rounds = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

describe('medianInterval', () => {
  it('takes the 6th and 16th of 21 rounds: at least 6 rounds lie on each side of the median but for a 2.7 % chance', () => {
    const interval = medianInterval(rounds(21));
    expect(interval).toEqual({ low: 6, high: 16, confidence: expect.closeTo(1 - (2 * 27896) / 2 ** 21, 12) });
    expect(interval.confidence).toBeGreaterThanOrEqual(0.95);
  });

  it('takes the 2nd and 8th of 9 rounds', () => {
    const interval = medianInterval(rounds(9));
    expect([interval.low, interval.high]).toEqual([2, 8]);
    expect(interval.confidence).toBeCloseTo(1 - (2 * 10) / 512, 12);
  });

  it('is the whole range of a few rounds, and says how sure that is', () => {
    expect(medianInterval(rounds(3))).toEqual({ low: 1, high: 3, confidence: 0.75 });
    expect(medianInterval([1.2])).toEqual({ low: 1.2, high: 1.2, confidence: 0 });
  });

  it('narrows as the wanted confidence drops', () => {
    const loose = medianInterval(rounds(21), 0.5);
    expect([loose.low, loose.high]).toEqual([9, 13]);
    expect(loose.confidence).toBeGreaterThanOrEqual(0.5);
  });
});
