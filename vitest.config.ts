import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // End-to-end files start sshd hosts and ansible; two cores run two files at a time.
    maxWorkers: 2,
  },
});
