/**
 * Dispatch-mode approval, run by `workflow_dispatch` from the default branch: the actor needs write
 * access (and is not the requester unless self-approval is allowed); the
 * decision is recorded, and an approval dispatches the chain's continuation
 * with the workflow id.
 */
import { decideByDispatch } from '../../app/approval/approvals.js';
import { requireDefaultBranchDecision } from '../../platform/github/approval.js';
import { openLedger, publishWorkflow, runAction } from '../../platform/github/session.js';
import { warnAboutGitHubGate } from '../../platform/github/setup.js';

await runAction('approve', async (session) => {
  const s = session.settings;
  requireDefaultBranchDecision(session.run);
  // Dispatch mode holds only while the ledger records and this workflow are protected: say so when they are not.
  await warnAboutGitHubGate(
    { ...session, log: session.platform.log, now: session.now() },
    { ledgerBranch: s['ledger-branch'], ledgerRepository: s['ledger-repository'], environment: undefined },
  );
  const app = await openLedger(session, s, { provePushAccess: true });
  const { workflow, dispatched } = await decideByDispatch(app, session.platform, {
    workflowId: s['workflow-id'],
    approve: s.decision === 'approve',
    reason: s.reason,
    allowSelfApproval: s['allow-self-approval'],
    continueWith: s['continue-workflow'],
  });
  const actor = session.platform.run.actor;
  if (dispatched)
    session.platform.log.info(
      `${workflow.id} approved by ${actor}; dispatched ${dispatched.target} on ${dispatched.ref} to continue it`,
    );
  else session.platform.log.info(`${workflow.id} rejected by ${actor}`);
  session.platform.setOutput('dispatched', dispatched ? dispatched.target : '');
  await publishWorkflow(session, app, workflow, { comment: s.comment });
});
