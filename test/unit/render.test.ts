import { describe, expect, it } from 'vitest';
import { formatDuration } from '../../src/domain/duration.js';
import { renderMarkdown, renderText, viewWorkflow } from '../../src/domain/render.js';
import { ExocompError, failureHeadline } from '../../src/domain/errors.js';
import { awaitApproval, failStep, recordPlanFailure, startStep, succeedStep } from '../../src/domain/workflow.js';
import { localLease as lease, sampleWorkflow, T0 as t0 } from '../support/workflows.js';

const at = (s: number) => new Date(t0.getTime() + s * 1000);

function failedAtWait() {
  let w = sampleWorkflow('edge-1');
  w = startStep(w, 'apply', lease('a'), t0);
  w = succeedStep(w, 'apply', 'a', at(4.2), 'captured 2 output(s) to inventory tf:edge naming 2 host(s)');
  w = startStep(w, 'ssh-wait', lease('a'), at(5));
  return failStep(w, 'ssh-wait', 'a', at(8), { kind: 'ssh-wait', summary: 'no SSH banner from web2 | really' });
}

describe('formatDuration', () => {
  it.each([
    [850, '850ms'],
    [3200, '3.2s'],
    [65_000, '1m 05s'],
    [0, '0ms'],
  ])('%d → %s', (ms, text) => expect(formatDuration(ms)).toBe(text));
});

describe('the workflow view', () => {
  it('renders a table of steps with state, attempts, duration and detail, and the failure with the resume command', () => {
    const text = renderText(viewWorkflow(failedAtWait(), at(9)));
    expect(text).toContain('workflow  edge-1  provision-failed');
    expect(text).toMatch(/1 apply\s+✓ succeeded\s+1\s+4\.2s\s+captured 2 output/);
    expect(text).toMatch(/2 ssh-wait\s+✗ failed\s+1\s+3\.0s\s+no SSH banner/);
    expect(text).toMatch(/3 onboard\s+⊘ blocked\s+0\s+-/);
    expect(text).toContain('resume with: exocomp provision resume edge-1');
  });

  it('shows a running step with its holder and elapsed time', () => {
    const base = sampleWorkflow('edge-2');
    const view = viewWorkflow(startStep(base, 'apply', lease('local:ci-box:42:ab'), t0), at(12));
    expect(view.steps[0]).toMatchObject({ state: 'running', durationMs: 12_000, detail: 'held by local:ci-box:42:ab' });
    expect(renderText(view)).toMatch(/1 apply\s+… running\s+1\s+12\.0s\s+held by local:ci-box:42:ab/);
  });

  it('renders markdown with escaped cells and clipped details for comments', () => {
    const md = renderMarkdown(viewWorkflow(failedAtWait(), at(9)), { maxDetail: 40 });
    expect(md).toContain('### exocomp workflow `edge-1` — provision-failed');
    expect(md).toContain('| 2 | ssh-wait | ✗ failed | 1 | 3.0s |');
    expect(md).toContain('\\|');
    expect(md).toContain('captured 2 output(s) to inventory tf:ed…');
  });

  it('shows the plan waiting for a decision', () => {
    const waiting = awaitApproval(sampleWorkflow('edge-3', { requireApproval: true }), t0, {
      fingerprint: 'f',
      summary: '+2 ~0 -1',
    });
    expect(renderText(viewWorkflow(waiting, t0))).toContain('approval  pending — plan +2 ~0 -1');
  });

  it('serialises to JSON with the same facts', () => {
    const view = JSON.parse(JSON.stringify(viewWorkflow(failedAtWait(), at(9))));
    expect(view.steps.map((s: { state: string }) => s.state)).toEqual(['succeeded', 'failed', 'blocked', 'blocked']);
    expect(view.failure).toMatchObject({ step: 'ssh-wait', kind: 'ssh-wait' });
  });

  it('shows a failed plan as plan-failed, with its error line and the job to retry (issue 38, item 4)', () => {
    const failed = recordPlanFailure(sampleWorkflow('edge-540', { requireApproval: true }), t0, {
      summary: 'tofu plan failed with exit code 1: main.tf:3: Unsupported argument',
      retry: 'Retry the job exocomp-plan (https://gitlab.example/acme/infra/-/jobs/7)',
    });
    expect(failed.state).toBe('created');
    const text = renderText(viewWorkflow(failed, t0));
    expect(text).toMatch(/^workflow {2}edge-540 {2}plan-failed$/m);
    expect(text).toContain('failed at apply (plan) 2026');
    expect(text).toContain(': tofu plan failed with exit code 1: main.tf:3: Unsupported argument');
    expect(text).toContain('retry: Retry the job exocomp-plan (https://gitlab.example/acme/infra/-/jobs/7)');
    const md = renderMarkdown(viewWorkflow(failed, t0));
    expect(md).toContain('— plan-failed');
    expect(md).toContain('Retry the job exocomp-plan');
  });
});

describe('failureHeadline', () => {
  it('completes a message that ends on a colon with the first detail line, else the next line', () => {
    const tofu = new ExocompError('tool-failed', 'tofu plan failed with exit code 1:\nError: x\n  more', {
      help: 'fix the workspace or its inputs and run again',
      detail: 'main.tf:3: Unsupported argument\nmain.tf:9: Missing value',
    });
    expect(failureHeadline(tofu)).toBe('tofu plan failed with exit code 1: main.tf:3: Unsupported argument');
    expect(failureHeadline(new Error('tofu plan failed with exit code 1:\n\n  Error: no backend\n'))).toBe(
      'tofu plan failed with exit code 1: Error: no backend',
    );
    expect(failureHeadline(new Error('tofu plan failed with exit code 1:'))).toBe('tofu plan failed with exit code 1');
    expect(failureHeadline(new Error('workspace infra/edge not found\nsecond'))).toBe('workspace infra/edge not found');
  });
});
