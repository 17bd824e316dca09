/**
 * Issue 41 acceptance at fleet size: the rolling converge of
 * test/e2e/rollout.test.ts over 200 loopback sshd hosts and 4 shards
 * (EXOCOMP_FLEET_HOSTS sets the count). Minutes of CPU: `npm run test:fleet`.
 */
import { rolloutSuite } from '../support/rollout-checks.js';
import { scaled } from '../support/time.js';

const HOST_COUNT = Number(process.env.EXOCOMP_FLEET_HOSTS ?? 200);

rolloutSuite(HOST_COUNT, 4, scaled(300_000 + HOST_COUNT * 4_000));
