/**
 * The progress port: use cases report
 * step-level progress here; the CLI renders it as terminal lines or JSON
 * events, the actions as log groups and summaries.
 */
import type { StepName } from '../domain/workflow.js';

export type ProgressEvent =
  | { type: 'workflow-created'; id: string; where: string }
  | { type: 'step-started'; step: StepName; index: number; total: number; attempt: number }
  | { type: 'step-skipped'; step: StepName; index: number; total: number; reason: string }
  | { type: 'step-succeeded'; step: StepName; index: number; total: number; durationMs: number; detail?: string }
  | { type: 'step-failed'; step: StepName; index: number; total: number; durationMs: number; summary: string }
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
