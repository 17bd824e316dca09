import { configDefaults, defineConfig } from 'vitest/config';
import base from './vitest.config.js';

/** `npm run test:fleet`: the fleet-scale tests under test/fleet/, which ./scripts/test leaves out for their cost. */
export default defineConfig({
  test: {
    ...base.test,
    include: ['test/fleet/**/*.test.ts'],
    exclude: configDefaults.exclude,
    // Hundreds of sshd hosts and ansible forks: one file at a time.
    maxWorkers: 1,
  },
});
