/**
 * A picture of a run (issue 27 item 5): the chain's steps and their attempts
 * as a Mermaid `gantt`, which GitHub and GitLab render in markdown, so a slow
 * step or a retried one shows at a glance. One bar per attempt. Pure: the
 * current time is handed in for a step still running.
 */
import type { Step, Workflow } from './workflow.js';

export type AttemptOutcome = 'succeeded' | 'failed' | 'interrupted' | 'running';

export interface AttemptBar {
  step: Step['name'];
  attempt: number;
  startMs: number;
  endMs: number;
  outcome: AttemptOutcome;
}

/** Every attempt of every step that started, in the order they ran. */
export function attemptBars(workflow: Workflow, now: Date): AttemptBar[] {
  const bars: AttemptBar[] = [];
  for (const step of workflow.steps) {
    if (step.startedAt === undefined) continue;
    const earlier = step.earlierAttempts ?? [];
    // Attempts beyond the ones kept are older still: number the kept ones from the current attempt back.
    const first = step.attempts - earlier.length;
    earlier.forEach((a, i) =>
      bars.push({
        step: step.name,
        attempt: first + i,
        startMs: Date.parse(a.startedAt),
        endMs: Date.parse(a.endedAt),
        outcome: a.outcome,
      }),
    );
    const startMs = Date.parse(step.startedAt);
    const current: AttemptOutcome | undefined =
      step.state === 'running'
        ? 'running'
        : step.state === 'succeeded'
          ? 'succeeded'
          : step.state === 'failed' || step.state === 'blocked'
            ? 'failed'
            : // Resumed and waiting to start again: the last attempt failed.
              step.finishedAt !== undefined
              ? 'failed'
              : undefined;
    if (current === undefined) continue;
    const endMs = step.finishedAt !== undefined ? Date.parse(step.finishedAt) : now.getTime();
    bars.push({ step: step.name, attempt: step.attempts, startMs, endMs: Math.max(startMs, endMs), outcome: current });
  }
  return bars;
}

/** Mermaid's task tags: `done` greys a bar, `crit` reddens it, `active` marks the running one. */
const TAGS: Record<AttemptOutcome, string> = {
  succeeded: 'done, ',
  failed: 'crit, ',
  interrupted: 'crit, ',
  running: 'active, ',
};

/**
 * The Mermaid gantt source (without the fence). Times are Unix milliseconds
 * (`dateFormat x`); a bar is at least one second wide so an instant step stays visible.
 */
export function timelineGantt(workflow: Workflow, now: Date): string | undefined {
  const bars = attemptBars(workflow, now);
  if (bars.length === 0) return undefined;
  const lines = ['gantt', `  title ${workflow.id}`, '  dateFormat x', '  axisFormat %H:%M:%S'];
  let section: string | undefined;
  for (const [i, bar] of bars.entries()) {
    if (bar.step !== section) {
      section = bar.step;
      lines.push(`  section ${bar.step}`);
    }
    const label = `attempt ${bar.attempt} ${bar.outcome}`;
    // The documented `<taskID>, <startDate>, <endDate>` form (https://mermaid.js.org/syntax/gantt.html).
    lines.push(`  ${label} :${TAGS[bar.outcome]}a${i + 1}, ${bar.startMs}, ${Math.max(bar.endMs, bar.startMs + 1000)}`);
  }
  return lines.join('\n');
}
