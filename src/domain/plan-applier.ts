/**
 * Which job applies the plan a plan job records, so its "awaiting approval" notice names what the user must act on
 * (issue 24; docs/decisions/0033-review-plans-without-an-apply-job.md). The face knows which jobs its run holds (on
 * GitLab: the template that defined the plan job says so); the core only words it.
 */
import { z } from 'zod';

export const planApplierSchema = z.discriminatedUnion('kind', [
  /** The run holds the job that applies this plan (GitLab's provision.yml: `<prefix>apply`). */
  z.object({ kind: z.literal('job'), job: z.string().min(1) }),
  /**
   * The run holds no apply job (a merge request pipeline with plan.yml alone): nothing applies this plan; the
   * pipeline of the default branch plans the merged change again, and that plan is the one approved and applied.
   */
  z.object({
    kind: z.literal('none'),
    defaultBranch: z.string().min(1).optional(),
    /** How the face names the change request, e.g. `merge request !5`. */
    changeRequest: z.string().min(1).optional(),
  }),
]);
export type PlanApplier = z.infer<typeof planApplierSchema>;

/** The notice's advice for a recorded plan that no job of this run applies. */
export function reviewOnlyAdvice(applier: Extract<PlanApplier, { kind: 'none' }>, runUrl: string): string {
  const branch = applier.defaultBranch ?? 'the default branch';
  const merged = applier.changeRequest
    ? `once ${applier.changeRequest} is merged into ${branch}`
    : `once the change is on ${branch}`;
  return (
    `pipeline ${runUrl} has no apply job, so no job applies this plan: it is there to be reviewed. ` +
    `To apply the change: ${merged}, the provision pipeline of ${branch} plans it again, and that plan is the one approved and applied`
  );
}
