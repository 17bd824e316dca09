/**
 * Step 1b: the approval gate, then the apply of the approved plan — the sealed
 * saved plan from the plan job (of this run, or of the run a dispatched
 * continuation follows) when a seal key lets it travel, else a re-plan that
 * must match the approved fingerprint.
 */
import { continueWorkflow } from '../../app/provision/continue-workflow.js';
import { actionsArtifacts } from '../../platform/github/artifacts.js';
import { approvalGate, jobRequest, renderOutcome } from '../../platform/github/chain-job.js';
import { applyAttestation } from '../../platform/github/attest.js';
import { providerCache } from '../../platform/github/provider-cache.js';
import { githubRunInputs, openLedger, runAction } from '../../platform/github/session.js';

await runAction(
  'apply',
  async (session) => {
    const s = session.settings;
    const app = await openLedger(session, s, { provePushAccess: true });
    const sign = async () => (await import('./attest.js')).attest;
    const inputs = { ...(await githubRunInputs(session, s)), ...applyAttestation(session, sign) };
    const outcome = await continueWorkflow(app, {
      workflowId: s['workflow-id'],
      inputs,
      gate: approvalGate(session, s['approval-mode'], s.environment, s['self-review']),
      scope: 'apply',
      toolCache: providerCache(session, app),
      ...jobRequest(session, app, { comment: s.comment, approvalMode: s['approval-mode'] }),
    });
    renderOutcome(session, outcome);
  },
  { artifacts: actionsArtifacts },
);
