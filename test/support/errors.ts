import { ExocompError } from '../../src/domain/errors.js';

/** The ExocompError a call throws; fails the test when it throws nothing or something else. */
export function thrown(fn: () => unknown): ExocompError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ExocompError) return error;
    throw error;
  }
  throw new Error('expected an ExocompError, nothing was thrown');
}
