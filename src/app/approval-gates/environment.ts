/**
 * Environment mode: the CI platform held this job until a reviewer of its
 * protected environment approved it; the gate records who did. Nobody (or a
 * gate without reviewers) is a refusal, never a silent pass.
 */
import type { ApprovalGate } from '../ports/approval-gate.js';
import type { CiPlatform } from '../ports/ci-platform.js';
import { decide } from '../approvals.js';

export function environmentGate(platform: CiPlatform, environment: string | undefined): ApprovalGate {
  return {
    mode: 'environment',
    async decideNow(app, workflow) {
      const approval = await platform.gatedJobApproval(environment);
      app.progress.emit({ type: 'info', message: `approved by ${approval.by} via ${approval.via}` });
      return decide(app, workflow.id, { approve: true, by: approval.by, via: approval.via, ...(approval.comment ? { comment: approval.comment } : {}) });
    },
    awaitDecision: async () => undefined,
    howToDecide: () => `awaiting approval: a reviewer of environment ${environment ?? '(none named)'} approves the deployment on the run page`,
  };
}
