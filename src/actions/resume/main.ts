/** The resume sweeper on a cron: dispatches the continuation of every interrupted workflow. */
import * as core from '@actions/core';
import { ciHolderProbe } from '../../platform/github/holder.js';
import { openLedger, runAction } from '../../platform/github/session.js';
import { sweep } from '../../platform/github/sweeper.js';

await runAction('resume', async (session) => {
  const s = session.settings;
  const app = await openLedger(session, s, { write: false });
  const entries = await sweep(app, session.github, session.run, ciHolderProbe(session.github, session.run), {
    continueWorkflow: s['continue-workflow'],
    dryRun: s['dry-run'],
    unstartedAfterMs: s['unstarted-after'],
  });
  for (const entry of entries) {
    const where = entry.workflow ? ` → ${entry.workflow}@${entry.ref}` : '';
    core.info(`${entry.id}: ${entry.step} ${entry.action}${where}`);
    if (entry.action === 'no-target') core.warning(`${entry.id} was interrupted but records no workflow to dispatch; set continue-workflow`);
  }
  const resumed = entries.filter((e) => e.action === 'dispatched' || e.action === 'would-dispatch').map((e) => e.id);
  core.setOutput('resumed', JSON.stringify(resumed));
  const rows = entries.map((e) => `| \`${e.id}\` | ${e.step} | ${e.action} |`);
  await core.summary.addRaw(['### exocomp resume sweep', '', '| workflow | step | action |', '| -------- | ---- | ------ |', ...rows].join('\n'), true).write();
});
