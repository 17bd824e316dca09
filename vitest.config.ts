import { configDefaults, defineConfig } from 'vitest/config';
import { scaled } from './test/support/time.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The fleet-scale tests take minutes of CPU: `npm run test:fleet` runs them (vitest.fleet.config.ts).
    exclude: [...configDefaults.exclude, 'test/fleet/**'],
    setupFiles: ['test/support/setup-env.ts'],
    // EXOCOMP_TEST_TIME_FACTOR scales these on a loaded machine (test/support/time.ts).
    testTimeout: scaled(120_000),
    hookTimeout: scaled(120_000),
    pool: 'forks',
    // End-to-end files start sshd hosts and ansible; two cores run two files at a time.
    maxWorkers: 2,
  },
});
