/**
 * Step 1b: the approval gate, then the apply of the approved plan — the sealed
 * saved plan from the plan job (of this run, or of the run a dispatched
 * continuation follows) when a seal key lets it travel, else a re-plan that
 * must match the approved fingerprint.
 */
import * as core from '@actions/core';
import { requireWorkflow } from '../../ledger/records.js';
import { runApprovedChain } from '../../platform/github/apply-support.js';
import { passEnvironmentGate, rejectedError } from '../../platform/github/chain-actions.js';
import { githubRunInputs, openLedger, publishWorkflow, runAction } from '../../platform/github/session.js';

await runAction('apply', async (session) => {
  const s = session.settings;
  const app = await openLedger(session, s, { write: true });
  const inputs = await githubRunInputs(session, s);
  const id = s['workflow-id'];
  const publish = (workflow: Parameters<typeof publishWorkflow>[2]) =>
    publishWorkflow(session, app, workflow, { comment: s.comment, commentAuthor: s['comment-author'], approvalMode: s['approval-mode'] });
  let workflow = requireWorkflow(await app.store.read(), id);
  if (workflow.state === 'rejected') {
    await publish(workflow);
    throw rejectedError(workflow);
  }
  if (workflow.approval.required && workflow.approval.state === 'pending') {
    if (s['approval-mode'] === 'dispatch') {
      core.notice(`workflow ${id} is awaiting approval; nothing was applied`);
      await publish(workflow);
      return;
    }
    try {
      workflow = await passEnvironmentGate(session, app, workflow, s.environment);
    } catch (error) {
      await publish(workflow);
      throw error;
    }
  }
  await runApprovedChain(session, app, workflow, inputs, { token: s.token, publish, only: 'apply' });
});
