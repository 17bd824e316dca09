/**
 * The root action's use case: the whole chain in one job (DESIGN.md §2, §5) —
 * find or create the workflow, pass its approval gate (environment or
 * dispatch mode), run the chain, publish the status.
 */
import * as core from '@actions/core';
import { join } from 'node:path';
import { planAndRecord } from './plan.js';
import { runApprovedChain, shipPlan } from './apply-support.js';
import {
  defaultWorkflowId,
  findOrCreateWorkflow,
  passEnvironmentGate,
  rejectedError,
  workspaceNameOf,
} from './chain-actions.js';
import { githubRunInputs, openLedger, publishWorkflow, type Session } from './session.js';

export async function provisionInOneJob(session: Session<'provision'>): Promise<void> {
  const s = session.settings;
  const app = await openLedger(session, s, { write: true });
  const inputs = await githubRunInputs(session, s);
  const id = s['workflow-id'] ?? defaultWorkflowId(workspaceNameOf(s), session.run);
  const publish = (workflow: Parameters<typeof publishWorkflow>[2]) =>
    publishWorkflow(session, app, workflow, {
      comment: s.comment,
      commentAuthor: s['comment-author'],
      approvalMode: s['approval-mode'],
      approveWorkflow: s['approve-workflow'],
    });

  let workflow = await findOrCreateWorkflow(session, app, s, id, s['require-approval'], inputs);
  if (workflow.state === 'rejected') {
    await publish(workflow);
    throw rejectedError(workflow);
  }
  if (workflow.approval.required && workflow.approval.state === 'pending') {
    if (s['approval-mode'] === 'environment') {
      try {
        workflow = await passEnvironmentGate(session, app, workflow, s.environment);
      } catch (error) {
        await publish(workflow);
        throw error;
      }
    } else {
      // Dispatch mode: plan, record awaiting-approval and end green; the approve action dispatches the continuation.
      if (workflow.state === 'created') {
        const planFile = join(session.scratch, 'exocomp.tfplan');
        workflow = await planAndRecord(app, id, inputs, planFile);
        workflow = (await shipPlan(session, app, planFile, inputs.sealKey, id)) ?? workflow;
      }
      core.notice(`workflow ${id} is awaiting approval; nothing was applied`);
      await publish(workflow);
      return;
    }
  }
  // The continuation of a dispatch-mode approval applies the plan the plan run sealed, when it shipped one.
  await runApprovedChain(session, app, workflow, inputs, { token: s.token, publish });
}
