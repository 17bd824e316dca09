/** The root action: the whole chain in one job — find or create the workflow, pass its approval gate, run the chain, publish. */
import { continueWorkflow } from '../../app/provision/continue-workflow.js';
import { actionsArtifacts } from '../../platform/github/artifacts.js';
import {
  approvalGate,
  defaultWorkflowId,
  jobRequest,
  newWorkflowRequest,
  renderOutcome,
  workspaceNameOf,
} from '../../platform/github/chain-job.js';
import { applyAttestation } from '../../platform/github/attest.js';
import { providerCache } from '../../platform/github/provider-cache.js';
import { githubRunInputs, openLedger, runAction } from '../../platform/github/session.js';

await runAction(
  'provision',
  async (session) => {
    const s = session.settings;
    const app = await openLedger(session, s, { provePushAccess: true });
    const sign = async () => (await import('./attest.js')).attest;
    const inputs = { ...(await githubRunInputs(session, s)), ...applyAttestation(session, sign) };
    const outcome = await continueWorkflow(app, {
      workflowId: s['workflow-id'] ?? defaultWorkflowId(workspaceNameOf(s), session.run),
      create: newWorkflowRequest(session, s, s['require-approval']),
      inputs,
      gate: approvalGate(session, s['approval-mode'], s.environment, s['self-review']),
      toolCache: providerCache(session, app),
      ...jobRequest(session, app, {
        comment: s.comment,
        approvalMode: s['approval-mode'],
        approveWorkflow: s['approve-workflow'],
      }),
    });
    renderOutcome(session, outcome);
  },
  { artifacts: actionsArtifacts },
);
