import { describe, expect, it } from 'vitest';
import { timeFactor, waitFor } from '../support/time.js';

describe('the test time factor', () => {
  it('is 1 unless EXOCOMP_TEST_TIME_FACTOR says otherwise', () => {
    expect(timeFactor({})).toBe(1);
    expect(timeFactor({ EXOCOMP_TEST_TIME_FACTOR: '' })).toBe(1);
    expect(timeFactor({ EXOCOMP_TEST_TIME_FACTOR: '2.5' })).toBe(2.5);
  });

  it('refuses a factor that would shorten or disable the bounds', () => {
    for (const raw of ['0', '0.5', '-1', 'fast', '100']) {
      expect(() => timeFactor({ EXOCOMP_TEST_TIME_FACTOR: raw })).toThrow(/EXOCOMP_TEST_TIME_FACTOR/);
    }
  });
});

describe('waitFor', () => {
  it('returns the first value the probe yields', async () => {
    let calls = 0;
    await expect(
      waitFor('the third probe', () => (++calls === 3 ? 'ready' : undefined), { intervalMs: 1 }),
    ).resolves.toBe('ready');
  });

  it('gives up as soon as the watched event says so, naming both', async () => {
    await expect(waitFor('a file', () => false, { gaveUp: () => 'the CLI exited 1' })).rejects.toThrow(
      'gave up waiting for a file: the CLI exited 1',
    );
  });

  it('fails naming what it waited for when the bound passes', async () => {
    await expect(waitFor('a banner', () => false, { timeoutMs: 20, intervalMs: 5 })).rejects.toThrow(
      /timed out after \d+ ms waiting for a banner/,
    );
  });
});
