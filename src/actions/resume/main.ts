/** The resume sweeper on a cron: dispatches the continuation of every interrupted workflow. */
import { sweepInterrupted } from '../../app/provision/interrupted.js';
import { publishSweep } from '../../platform/github/status.js';
import { openLedger, runAction } from '../../platform/github/session.js';

await runAction('resume', async (session) => {
  const s = session.settings;
  const app = await openLedger(session, s, { provePushAccess: false });
  const entries = await sweepInterrupted(app, session.platform, {
    continueWith: s['continue-workflow'],
    dryRun: s['dry-run'],
    unstartedAfterMs: s['unstarted-after'],
  });
  await publishSweep(session.platform, entries);
});
