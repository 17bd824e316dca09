/**
 * Step 1a: plan and record the plan as the one awaiting approval; the sealed
 * saved plan goes to the apply job as an artifact. With `plan-only`, a preview
 * that touches no ledger (pull requests, forks included).
 */
import * as core from '@actions/core';
import { join } from 'node:path';
import { planAndRecord, previewPlan } from '../../platform/github/plan.js';
import { shipPlan } from '../../platform/github/apply-support.js';
import { defaultWorkflowId, findOrCreateWorkflow, workspaceNameOf } from '../../platform/github/chain-actions.js';
import { upsertStickyComment } from '../../platform/github/comment.js';
import { commentMarker, describePlanSummary } from '../../platform/github/status.js';
import { parseMapping } from '../../app/mappings.js';
import { childEnvironment, githubRunInputs, openLedger, publishWorkflow, runAction } from '../../platform/github/session.js';
import { MemoryLedgerStore } from '../../ledger/memory-store.js';

await runAction('plan', async (session) => {
  const s = session.settings;
  const inputs = await githubRunInputs(session, s);
  const planFile = join(session.scratch, 'exocomp.tfplan');
  if (s['plan-only']) {
    const name = workspaceNameOf(s);
    // A preview records nothing: the context's ledger is an empty in-memory one.
    const app = { store: new MemoryLedgerStore(), ledgerBranch: s['ledger-branch'], now: session.now, cwd: session.run.workspace, env: childEnvironment(process.env), progress: session.progress };
    const summary = await previewPlan(app, { workspacePath: s.workspace, vars: s.vars === undefined ? {} : parseMapping(s.vars, 'the vars input'), inputs, planFile });
    const body = [commentMarker(`plan-${name}`), `### exocomp plan for \`${name}\``, '', `Plan: ${describePlanSummary(summary)}`, '', `<sub>[run ${session.run.runId}](${session.run.runUrl}) · plan only, nothing recorded or applied</sub>`].join('\n');
    core.setOutput('plan-summary', summary);
    core.setOutput('state', 'planned');
    await core.summary.addRaw(body, true).write();
    if (s.comment && session.run.pullRequest !== undefined) {
      const outcome = await upsertStickyComment(session.github, { repo: session.run.repository, issue: session.run.pullRequest, workflowId: `plan-${name}`, author: s['comment-author'], body }).catch((error: unknown) => ({ kind: 'refused' as const, reason: (error as Error).message }));
      if (outcome.kind === 'refused') core.notice(`${session.secrets.redact(outcome.reason)} — the plan is in the job summary instead`);
    }
    return;
  }
  const app = await openLedger(session, s, { write: true });
  const id = s['workflow-id'] ?? defaultWorkflowId(workspaceNameOf(s), session.run);
  let workflow = await findOrCreateWorkflow(session, app, s, id, true, inputs);
  if (workflow.approval.state === 'pending' && (workflow.state === 'created' || workflow.state === 'awaiting-approval')) {
    workflow = await planAndRecord(app, id, inputs, planFile);
    workflow = (await shipPlan(session, app, planFile, inputs.sealKey, id)) ?? workflow;
  } else core.info(`workflow ${id} is ${workflow.state} (approval ${workflow.approval.state}): nothing to plan`);
  core.setOutput('plan-summary', workflow.approval.planSummary ?? '');
  await publishWorkflow(session, app, workflow, { comment: s.comment, commentAuthor: s['comment-author'], approveWorkflow: s['approve-workflow'], approvalMode: 'environment' });
});
