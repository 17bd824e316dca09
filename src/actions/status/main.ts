/** The ledger view of one workflow (outputs, summary, sticky comment), or a table of all of them. */
import * as core from '@actions/core';
import { ledgerStatus, workflowRecord } from '../../app/status/status.js';
import { openLedger, publishWorkflow, runAction } from '../../platform/github/session.js';

await runAction('status', async (session) => {
  const s = session.settings;
  const app = await openLedger(session, s, { provePushAccess: false });
  if (s['workflow-id'] !== undefined) {
    await publishWorkflow(session, app, await workflowRecord(app, s['workflow-id']), { comment: s.comment });
    return;
  }
  // The status use case reads the ledger; this entry point only renders.
  const { workflows, errors } = await ledgerStatus(app);
  const rows = workflows.map(
    (w) => `| \`${w.id}\` | ${w.state} | ${w.workspace.name} | ${w.playbook} | ${w.updatedAt} |`,
  );
  const table = [
    '### exocomp workflows',
    '',
    '| id | state | workspace | playbook | updated |',
    '| -- | ----- | --------- | -------- | ------- |',
    ...rows,
  ];
  await core.summary
    .addRaw(
      workflows.length === 0 ? `### exocomp workflows\n\nnone in ${app.store.description}` : table.join('\n'),
      true,
    )
    .write();
  core.setOutput(
    'workflows',
    JSON.stringify(workflows.map((w) => ({ id: w.id, state: w.state, workspace: w.workspace.name }))),
  );
  for (const error of errors) core.warning(error.message);
});
