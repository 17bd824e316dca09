/**
 * Step 1a: plan and record the plan as the one awaiting approval; the sealed
 * saved plan goes to the apply job as an artifact. With `plan-only`, a preview
 * that touches no ledger (pull requests, forks included).
 */
import { join } from 'node:path';
import { continueWorkflow } from '../../app/continue-workflow.js';
import { parseMapping } from '../../app/mappings.js';
import { previewPlan } from '../../app/preview-plan.js';
import { actionsArtifacts } from '../../platform/github/artifacts.js';
import { defaultWorkflowId, jobRequest, newWorkflowRequest, workspaceNameOf } from '../../platform/github/chain-job.js';
import { githubRunInputs, openLedger, postStatusComment, previewContext, runAction } from '../../platform/github/session.js';
import { planPreviewMarkdown } from '../../platform/github/status.js';

await runAction(
  'plan',
  async (session) => {
    const s = session.settings;
    const inputs = await githubRunInputs(session, s);
    if (s['plan-only']) {
      const name = workspaceNameOf(s);
      const vars = s.vars === undefined ? {} : parseMapping(s.vars, 'the vars input');
      const summary = await previewPlan(previewContext(session, s['ledger-branch']), {
        workspacePath: s.workspace,
        vars,
        inputs,
        planFile: join(session.scratch, 'exocomp.tfplan'),
      });
      const body = planPreviewMarkdown(name, summary, session.run);
      session.platform.setOutput('plan-summary', summary);
      session.platform.setOutput('state', 'planned');
      await session.platform.writeSummary(body);
      await postStatusComment(session, s.comment ? session.run.pullRequest : undefined, `plan-${name}`, body, 'plan');
      return;
    }
    const app = await openLedger(session, s, { write: true });
    const outcome = await continueWorkflow(app, {
      workflowId: s['workflow-id'] ?? defaultWorkflowId(workspaceNameOf(s), session.run),
      create: newWorkflowRequest(session, s, true),
      inputs,
      scope: 'plan',
      ...jobRequest(session, app, { comment: s.comment, approveWorkflow: s['approve-workflow'], approvalMode: 'environment' }),
    });
    session.platform.setOutput('plan-summary', outcome.workflow.approval.planSummary ?? '');
  },
  { artifacts: actionsArtifacts },
);
