/**
 * Dispatch-mode approval (DESIGN.md §5), run by `workflow_dispatch`: the
 * actor needs write access (and is not the requester unless self-approval is
 * allowed); the decision is recorded, and an approval dispatches the chain's
 * continuation with the workflow id.
 */
import * as core from '@actions/core';
import { decideFromDispatch } from '../../platform/github/approval.js';
import { openLedger, publishWorkflow, runAction } from '../../platform/github/session.js';

await runAction('approve', async (session) => {
  const s = session.settings;
  const app = await openLedger(session, s, { write: true });
  const { workflow, dispatched } = await decideFromDispatch(app, session.github, session.run, {
    workflowId: s['workflow-id'],
    approve: s.decision === 'approve',
    reason: s.reason,
    allowSelfApproval: s['allow-self-approval'],
    continueWorkflow: s['continue-workflow'],
  });
  if (dispatched) {
    core.info(`${workflow.id} approved by ${session.run.triggeringActor}; dispatched ${dispatched.workflow} on ${dispatched.ref} to continue it`);
  } else core.info(`${workflow.id} rejected by ${session.run.triggeringActor}`);
  core.setOutput('dispatched', dispatched ? dispatched.workflow : '');
  await publishWorkflow(session, app, workflow, { comment: s.comment, commentAuthor: s['comment-author'] });
});
