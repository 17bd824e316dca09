/** The root action: the whole chain in one job. */
import { provisionInOneJob } from '../../platform/github/provision-job.js';
import { runAction } from '../../platform/github/session.js';

await runAction('provision', provisionInOneJob);
