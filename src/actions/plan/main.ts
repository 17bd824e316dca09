/**
 * Step 1a: plan and record the plan as the one awaiting approval; the sealed
 * saved plan goes to the apply job as an artifact. With `plan-only`, a preview
 * that touches no ledger (pull requests, forks included).
 */
import { planJob } from '../../app/provision/plan-job.js';
import { actionsArtifacts } from '../../platform/github/artifacts.js';
import {
  defaultWorkflowId,
  jobRequest,
  newWorkflowRequest,
  planPreview,
  publishPlan,
  workspaceNameOf,
} from '../../platform/github/chain-job.js';
import { githubRunInputs, openLedger, runAction } from '../../platform/github/session.js';

await runAction(
  'plan',
  async (session) => {
    const s = session.settings;
    const inputs = await githubRunInputs(session, s);
    // A preview's token may be read-only (a fork's pull request): its ledger is read at most, never written.
    const app = await openLedger(session, s, { provePushAccess: !s['plan-only'] });
    const outcome = await planJob(app, {
      workflowId: s['workflow-id'] ?? defaultWorkflowId(workspaceNameOf(s), session.run),
      create: newWorkflowRequest(session, s, true),
      preview: planPreview(s),
      inputs,
      ...jobRequest(session, app, {
        comment: s.comment,
        approveWorkflow: s['approve-workflow'],
        approvalMode: 'environment',
      }),
    });
    await publishPlan(session, outcome);
  },
  { artifacts: actionsArtifacts },
);
