/**
 * Environment mode: the CI platform held this job until a reviewer of its
 * protected environment approved it; the gate records who did. Nobody (or a
 * gate without reviewers) is a refusal, never a silent pass.
 */
import { ExocompError } from '../../../domain/errors.js';
import type { ApprovalGate } from '../../ports/approval-gate.js';
import type { CiPlatform, GateApproval } from '../../ports/ci-platform.js';
import type { Workflow } from '../../../domain/workflow.js';
import type { AppContext } from '../../runtime/context.js';
import { decide } from '../approvals.js';
import { judgeSelfApproval } from './approver.js';

/** What to do when the approver is the requester and the gate allowed self-review. */
export type SelfReview = 'refuse' | 'warn';

/** The shape that gives the reviewer a plan to approve: the plan job first, the gated job after it. */
export const TWO_JOB_EXAMPLE = (env: string) =>
  [
    'jobs:',
    '  plan:',
    '    outputs: { workflow-id: ${{ steps.plan.outputs.workflow-id }} }',
    '    steps:',
    '      - { id: plan, uses: exocomp/provision/actions/plan@v1, with: { workspace: …, playbook: … } }',
    '  provision:',
    '    needs: plan',
    `    environment: ${env}`,
    '    steps:',
    `      - { uses: exocomp/provision@v1, with: { workflow-id: \${{ needs.plan.outputs.workflow-id }}, require-approval: "true", environment: ${env} } }`,
  ].join('\n');

export function environmentGate(
  platform: CiPlatform,
  environment: string | undefined,
  selfReview: SelfReview = 'refuse',
): ApprovalGate {
  return {
    mode: 'environment',
    async decideNow(app, workflow) {
      // The reviewer was asked before this job started: only a plan recorded by an earlier job was there to be approved.
      if (workflow.approval.planFingerprint === undefined) {
        throw new ExocompError(
          'approval',
          `workflow ${workflow.id} has no plan recorded by an earlier job, so the reviewer of environment ${environment ?? '(none named)'} approved a plan that did not exist yet; refusing to plan and apply in one gated job`,
          {
            help: `plan in a job without the environment, then apply in the gated job that needs it:\n${TWO_JOB_EXAMPLE(environment ?? 'production')}`,
          },
        );
      }
      const approval = await platform.gatedJobApproval(environment);
      judgeGateSelfApproval(app, approval, workflow, environment, selfReview);
      app.progress.emit({ type: 'info', message: `approved by ${approval.by} via ${approval.via}` });
      return decide(app, workflow.id, {
        approve: true,
        by: approval.by,
        via: approval.via,
        ...(approval.comment ? { comment: approval.comment } : {}),
      });
    },
    awaitDecision: async () => undefined,
    howToDecide: () =>
      `awaiting approval: a reviewer of environment ${environment ?? '(none named)'} approves the deployment on the run page`,
  };
}

/**
 * The self-approval rule for the workflow's requester and for whoever started
 * the approved attempt. With "Prevent self-review" on, the platform kept out
 * only the attempt's starter (the requester, when it names no attempt actor);
 * anyone else among them who approved is refused here, as the setting means.
 */
function judgeGateSelfApproval(
  app: AppContext,
  approval: GateApproval,
  workflow: Workflow,
  environment: string | undefined,
  selfReview: SelfReview,
): void {
  const attemptActor = approval.attemptActor ?? workflow.requester;
  const keptOut = approval.selfReviewAllowed ? undefined : attemptActor;
  const fix = 'turn on "Prevent self-review" in the environment’s required reviewers';
  for (const starter of new Set([workflow.requester, attemptActor])) {
    if (approval.by !== starter || starter === keptOut) continue;
    const what =
      starter === workflow.requester
        ? 'a deployment they requested'
        : `an attempt of workflow ${workflow.id} they started`;
    const message = approval.selfReviewAllowed
      ? `${approval.by} approved ${what}, and environment ${environment ?? ''} allows self-review`
      : `${approval.by} approved ${what}: environment ${environment ?? ''} prevents self-review, but the gate kept out only ${attemptActor}, who started this attempt`;
    judgeSelfApproval(
      app,
      approval.by,
      { ...workflow, requester: starter },
      approval.selfReviewAllowed ? selfReview : 'refuse',
      {
        refused: `${message}; refusing to apply`,
        help: approval.selfReviewAllowed
          ? `${fix}, and have someone else approve (or set self-review: warn)`
          : 'have a reviewer who neither requested the workflow nor started this attempt approve a new attempt',
        warned: `${message}: ${fix}`,
      },
    );
  }
}
