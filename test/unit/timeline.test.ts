import { describe, expect, it } from 'vitest';
import { renderMarkdown, viewWorkflow } from '../../src/domain/render.js';
import { attemptBars, timelineGantt } from '../../src/domain/timeline.js';
import { failStep, MAX_EARLIER_ATTEMPTS, resumeWorkflow, startStep, succeedStep } from '../../src/domain/workflow.js';
import { localLease, sampleWorkflow, T0 } from '../support/workflows.js';

const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000);

/** apply succeeds; ssh-wait fails, is resumed and succeeds; onboard's runner vanishes and another takes over; configure runs. */
function retriedWorkflow() {
  let w = sampleWorkflow('edge-1');
  w = startStep(w, 'apply', localLease('r1', at(0)), at(0));
  w = succeedStep(w, 'apply', 'r1', at(30));
  w = startStep(w, 'ssh-wait', localLease('r1', at(30)), at(30));
  w = failStep(w, 'ssh-wait', 'r1', at(90), { kind: 'ssh-wait', summary: 'no banner' });
  w = resumeWorkflow(w, at(100));
  w = startStep(w, 'ssh-wait', localLease('r2', at(100)), at(100));
  w = succeedStep(w, 'ssh-wait', 'r2', at(110));
  w = startStep(w, 'onboard', localLease('r2', at(110), 1000), at(110));
  // r2 died: its lease expired, r3 takes the step over.
  w = startStep(w, 'onboard', localLease('r3', at(200)), at(200));
  w = succeedStep(w, 'onboard', 'r3', at(230));
  w = startStep(w, 'configure', localLease('r3', at(230)), at(230));
  return w;
}

describe('the timeline of a run', () => {
  it('has one bar per attempt, with how each ended', () => {
    const bars = attemptBars(retriedWorkflow(), at(260));
    expect(
      bars.map((b) => [
        b.step,
        b.attempt,
        b.outcome,
        (b.startMs - T0.getTime()) / 1000,
        (b.endMs - T0.getTime()) / 1000,
      ]),
    ).toEqual([
      ['apply', 1, 'succeeded', 0, 30],
      ['ssh-wait', 1, 'failed', 30, 90],
      ['ssh-wait', 2, 'succeeded', 100, 110],
      ['onboard', 1, 'interrupted', 110, 110],
      ['onboard', 2, 'succeeded', 200, 230],
      ['configure', 1, 'running', 230, 260],
    ]);
  });

  it('renders a Mermaid gantt in the status markdown, one task per attempt', () => {
    const markdown = renderMarkdown(viewWorkflow(retriedWorkflow(), at(260)));
    const gantt = /```mermaid\n([\s\S]*?)\n```/.exec(markdown)?.[1];
    expect(gantt).toBeDefined();
    const lines = gantt!.split('\n');
    expect(lines.slice(0, 4)).toEqual(['gantt', '  title edge-1', '  dateFormat x', '  axisFormat %H:%M:%S']);
    const tasks = lines.filter((l) => /^ {2}attempt \d+/.test(l));
    expect(tasks).toHaveLength(6);
    expect(lines.filter((l) => l.startsWith('  section '))).toEqual([
      '  section apply',
      '  section ssh-wait',
      '  section onboard',
      '  section configure',
    ]);
    const t = (s: number) => at(s).getTime();
    expect(tasks).toContain(`  attempt 1 failed :crit, a2, ${t(30)}, ${t(90)}`);
    expect(tasks).toContain(`  attempt 2 succeeded :done, a3, ${t(100)}, ${t(110)}`);
    // An instant is drawn one second wide.
    expect(tasks).toContain(`  attempt 1 interrupted :crit, a4, ${t(110)}, ${t(111)}`);
    expect(tasks).toContain(`  attempt 1 running :active, a6, ${t(230)}, ${t(260)}`);
  });

  it('draws nothing before a step started, and keeps only the last attempts of a step retried many times', () => {
    expect(timelineGantt(sampleWorkflow('edge-1'), T0)).toBeUndefined();
    expect(renderMarkdown(viewWorkflow(sampleWorkflow('edge-1'), T0))).not.toContain('mermaid');
    let w = sampleWorkflow('edge-1');
    for (let i = 0; i < MAX_EARLIER_ATTEMPTS + 5; i++) {
      w = startStep(w, 'apply', localLease(`r${i}`, at(i * 10)), at(i * 10));
      w = failStep(w, 'apply', `r${i}`, at(i * 10 + 5), { kind: 'tool-failed', summary: 'x' });
      w = resumeWorkflow(w, at(i * 10 + 6));
    }
    const bars = attemptBars(w, at(1000));
    // The kept earlier attempts, then the last one (failed, resumed, not started again).
    expect(bars).toHaveLength(MAX_EARLIER_ATTEMPTS + 1);
    expect(bars.map((b) => b.attempt)).toEqual(Array.from({ length: MAX_EARLIER_ATTEMPTS + 1 }, (_, i) => i + 5));
    expect(bars.every((b) => b.outcome === 'failed')).toBe(true);
  });
});
