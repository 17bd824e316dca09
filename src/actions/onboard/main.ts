/** One step of the chain as its own job: runs only onboard, after the step before it succeeded. */
import { runOneStep } from '../../platform/github/chain-job.js';
import { runAction } from '../../platform/github/session.js';

await runAction('onboard', (session) => runOneStep(session, 'onboard'));
