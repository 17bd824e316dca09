/** Renders progress events for a person (lines) or a program (one JSON object per line). */
import { formatDuration } from '../domain/duration.js';
import { playStartedLine, taskResultLines } from '../domain/play-events.js';
import type { ProgressEvent, ProgressListener } from '../app/runtime/progress.js';

export class TerminalProgress implements ProgressListener {
  /** `[3/4] onboard`: the step a play's lines belong to. */
  private stepLabel = '';

  constructor(private readonly write: (line: string) => void) {}

  emit(event: ProgressEvent): void {
    switch (event.type) {
      case 'workflow-created':
        this.write(`workflow ${event.id} created in ${event.where}`);
        break;
      case 'step-started':
        this.stepLabel = `[${event.index}/${event.total}] ${event.step} `;
        this.write(
          `[${event.index}/${event.total}] ${event.step} …${event.attempt > 1 ? ` (attempt ${event.attempt})` : ''}`,
        );
        break;
      case 'step-skipped':
        this.write(`[${event.index}/${event.total}] ${event.step} ${event.reason}`);
        break;
      case 'step-succeeded':
        this.write(
          `[${event.index}/${event.total}] ${event.step} … ${formatDuration(event.durationMs)} ✓${event.detail ? `  ${event.detail}` : ''}`,
        );
        break;
      case 'step-failed':
        this.write(
          `[${event.index}/${event.total}] ${event.step} … ${formatDuration(event.durationMs)} ✗  ${event.summary}`,
        );
        break;
      case 'play-started':
        this.write(`${this.stepLabel}${playStartedLine(event.play, event.tasks)}`);
        break;
      case 'task-result': {
        const [first, ...failure] = taskResultLines({ ...event, event: 'result' });
        this.write(`${event.step ? this.stepLabel : ''}${first}`);
        for (const line of failure) this.write(line);
        break;
      }
      case 'info':
        this.write(`    ${event.message}`);
        break;
      case 'warning':
        this.write(`    warning: ${event.message}`);
        break;
      case 'tofu-diagnostic':
        // Its lines, file and line among them, were shown as tofu's output.
        break;
    }
  }
}

export class JsonProgress implements ProgressListener {
  constructor(private readonly write: (line: string) => void) {}
  emit(event: ProgressEvent): void {
    this.write(JSON.stringify({ event: event.type, ...event, type: undefined }));
  }
}
