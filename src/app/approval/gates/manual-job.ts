/**
 * Manual mode (GitLab Free, or any platform whose jobs a person starts by
 * hand): the apply job is `when: manual` on a protected branch; whoever runs
 * it (the run's actor: GITLAB_USER_LOGIN of that job) is the approver. The
 * requester may not approve their own workflow unless self-approval is allowed;
 * the decision is recorded in the ledger. The plan always came from an earlier
 * job, so the approver saw it.
 */
import { ExocompError } from '../../../domain/errors.js';
import { decide } from '../approvals.js';
import { judgeSelfApproval, requireRightToDecide } from './approver.js';
import type { ApprovalGate } from '../../ports/approval-gate.js';
import type { CiPlatform } from '../../ports/ci-platform.js';

export function manualJobGate(
  platform: CiPlatform,
  /** `jobName`: this job; `applyJob`: the job a person runs to approve (this one, or a plan job's apply job). */
  options: { startedByPerson: boolean; allowSelfApproval: boolean; jobName: string; applyJob: string },
): ApprovalGate {
  return {
    mode: 'manual',
    async decideNow(app, workflow) {
      const approver = platform.run.actor;
      if (!options.startedByPerson) {
        throw new ExocompError(
          'approval',
          `job ${options.jobName} was not started by hand, so nobody approved workflow ${workflow.id}`,
          {
            help: 'the apply job must be `when: manual` (the template makes it so with approval: manual)',
          },
        );
      }
      await requireRightToDecide(platform, approver, {
        kind: 'approval',
        because: 'an approval needs the apply job to run on a protected branch',
        help: 'protect the branch the pipeline runs on',
      });
      judgeSelfApproval(app, approver, workflow, options.allowSelfApproval ? 'allow' : 'refuse', {
        refused: `${approver} requested workflow ${workflow.id} and may not approve it by running ${options.jobName}; nothing was applied`,
        help: 'someone else runs the manual job; set allow-self-approval only where one person runs everything',
      });
      app.progress.emit({
        type: 'info',
        message: `approved by ${approver}, who ran the manual job ${options.jobName}`,
      });
      return decide(app, workflow.id, { approve: true, by: approver, via: platform.run.decisionVia });
    },
    awaitDecision: async () => undefined,
    howToDecide: (workflow) =>
      `awaiting approval: someone other than ${workflow.requester} runs the manual job ${options.applyJob} of pipeline ${platform.run.url}`,
  };
}
