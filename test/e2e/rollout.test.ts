/**
 * Issue 41 acceptance in the default suite: a rolling converge over 20
 * loopback sshd hosts and 2 shards (`--rollout 1,10%,100% --max-failures 2%`),
 * a failed-only rerun of it, and a health check that stops a rollout. The same
 * checks run at 200 hosts and 4 shards in test/fleet/rollout-fleet.test.ts.
 */
import { rolloutSuite } from '../support/rollout-checks.js';
import { scaled } from '../support/time.js';

rolloutSuite(20, 2, scaled(240_000));
