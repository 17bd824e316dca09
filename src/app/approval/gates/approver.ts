/**
 * Who may approve, for every approval mode (dispatch, environment, GitLab's
 * manual job): the CI platform must let the approver decide, and the person
 * who requested a workflow does not approve it unless the project allows it
 * (`allow-self-approval`; a GitHub environment without "Prevent self-review"
 * run with `self-review: warn`). Each mode says in its own words what was
 * refused; the rule itself is here only.
 */
import { ExocompError, type ErrorKind } from '../../../domain/errors.js';
import type { Workflow } from '../../../domain/workflow.js';
import type { AppContext } from '../../runtime/context.js';
import type { CiPlatform } from '../../ports/ci-platform.js';

/** What a self-approval gets: refused, let through with a warning, or allowed (the project chose it, or the platform judged it already). */
export type SelfApproval = 'refuse' | 'warn' | 'allow';

/** Refuses an approver the CI platform does not let decide (write access, a protected branch). */
export async function requireRightToDecide(
  platform: Pick<CiPlatform, 'mayDecide'>,
  approver: string,
  refusal: { kind: ErrorKind; because: string; help: string },
): Promise<void> {
  const may = await platform.mayDecide(approver);
  if (!may.allowed) throw new ExocompError(refusal.kind, `${may.reason}; ${refusal.because}`, { help: refusal.help });
}

/** Whether `approver` is approving what they requested themselves (the subject of the self-approval rule). */
export function isSelfApproval(approver: string, requester: string): boolean {
  return approver === requester;
}

/** Applies the self-approval rule to `approver` of `workflow`: nothing when someone else approves. */
export function judgeSelfApproval(
  app: AppContext,
  approver: string,
  workflow: Workflow,
  policy: SelfApproval,
  say: { refused: string; help: string; warned?: string },
): void {
  if (!isSelfApproval(approver, workflow.requester) || policy === 'allow') return;
  if (policy === 'refuse') throw new ExocompError('approval', say.refused, { help: say.help });
  app.progress.emit({
    type: 'warning',
    message: say.warned ?? `${approver} approved workflow ${workflow.id}, which they requested`,
  });
}
