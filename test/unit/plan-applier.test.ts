/**
 * The advice of a plan job whose run has no apply job (issue 24, Deliver 2): it names the run, says nothing applies
 * this plan, and names the pipeline that will (the default branch's, after the merge request is merged).
 */
import { describe, expect, it } from 'vitest';
import { planApplierSchema, reviewOnlyAdvice } from '../../src/domain/plan-applier.js';

const RUN = 'https://gitlab.example.com/acme/infra/-/pipelines/720';

describe('reviewOnlyAdvice', () => {
  it('names the pipeline without an apply job, the merge request and the default branch whose pipeline applies', () => {
    const advice = reviewOnlyAdvice({ kind: 'none', defaultBranch: 'main', changeRequest: 'merge request !5' }, RUN);
    expect(advice).toBe(
      `pipeline ${RUN} has no apply job, so no job applies this plan: it is there to be reviewed. ` +
        'To apply the change: once merge request !5 is merged into main, the provision pipeline of main plans it again, ' +
        'and that plan is the one approved and applied',
    );
    expect(advice).not.toContain('exocomp-apply');
  });

  it('without a merge request (plan.yml under other rules) or a known default branch, still says what to do', () => {
    expect(reviewOnlyAdvice({ kind: 'none', defaultBranch: 'trunk' }, RUN)).toContain(
      'once the change is on trunk, the provision pipeline of trunk plans it again',
    );
    expect(reviewOnlyAdvice({ kind: 'none' }, RUN)).toContain(
      'once the change is on the default branch, the provision pipeline of the default branch plans it again',
    );
  });

  it('is a zod-checked setting: an apply job needs a name', () => {
    expect(planApplierSchema.safeParse({ kind: 'job', job: '' }).success).toBe(false);
    expect(planApplierSchema.parse({ kind: 'job', job: 'exocomp-apply' })).toEqual({
      kind: 'job',
      job: 'exocomp-apply',
    });
  });
});
