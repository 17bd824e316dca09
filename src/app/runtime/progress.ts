/**
 * The progress port: use cases report
 * step-level progress here; the CLI renders it as terminal lines or JSON
 * events, the actions as log groups and summaries.
 */
import type { AnsibleEvent, HostResult } from '../../domain/play-events.js';
import type { TofuDiagnostic } from '../../domain/tofu-diagnostics.js';
import type { StepName } from '../../domain/workflow.js';

export type ProgressEvent =
  | { type: 'workflow-created'; id: string; where: string }
  | { type: 'step-started'; workflow: string; step: StepName; index: number; total: number; attempt: number }
  | { type: 'step-skipped'; step: StepName; index: number; total: number; reason: string }
  | { type: 'step-succeeded'; step: StepName; index: number; total: number; durationMs: number; detail?: string }
  | {
      type: 'step-failed';
      step: StepName;
      index: number;
      total: number;
      durationMs: number;
      summary: string;
      /** Every host the failure concerns (the summary names at most ten). */
      hosts?: string[];
    }
  | { type: 'play-started'; step?: StepName; play: string; tasks: number }
  /** One host's result of one task of a running play (its text is redacted, but untrusted). */
  | ({ type: 'task-result'; step?: StepName } & Omit<HostResult, 'event'>)
  /** An error or warning of tofu (redacted, untrusted text), its file relative to the repository (the job's directory). */
  | { type: 'tofu-diagnostic'; diagnostic: TofuDiagnostic }
  | { type: 'info'; message: string; step?: StepName }
  | { type: 'warning'; message: string; step?: StepName };

export interface ProgressListener {
  emit(event: ProgressEvent): void;
}

/** Collects events; used by tests and by renderers that summarise at the end. */
export class RecordingProgress implements ProgressListener {
  readonly events: ProgressEvent[] = [];
  emit(event: ProgressEvent): void {
    this.events.push(event);
  }
}

/** Turns a play's events into progress events of `step` (or of no step, for a standalone play). */
export function playProgress(progress: ProgressListener, step?: StepName): (event: AnsibleEvent) => void {
  const of = step === undefined ? {} : { step };
  return (event) => {
    if (event.event === 'play')
      progress.emit({ type: 'play-started', ...of, play: event.play, tasks: event.tasks ?? 0 });
    if (event.event === 'result') {
      const { event: _result, ...rest } = event;
      progress.emit({ type: 'task-result', ...of, ...rest });
    }
  };
}
