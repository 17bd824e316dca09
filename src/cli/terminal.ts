/** Renders progress events for a person (lines) or a program (one JSON object per line). */
import { formatDuration } from '../domain/duration.js';
import type { ProgressEvent, ProgressListener } from '../app/progress.js';

export class TerminalProgress implements ProgressListener {
  constructor(private readonly write: (line: string) => void) {}

  emit(event: ProgressEvent): void {
    switch (event.type) {
      case 'workflow-created':
        this.write(`workflow ${event.id} created in ${event.where}`);
        break;
      case 'step-started':
        this.write(`[${event.index}/${event.total}] ${event.step} …${event.attempt > 1 ? ` (attempt ${event.attempt})` : ''}`);
        break;
      case 'step-skipped':
        this.write(`[${event.index}/${event.total}] ${event.step} ${event.reason}`);
        break;
      case 'step-succeeded':
        this.write(`[${event.index}/${event.total}] ${event.step} … ${formatDuration(event.durationMs)} ✓${event.detail ? `  ${event.detail}` : ''}`);
        break;
      case 'step-failed':
        this.write(`[${event.index}/${event.total}] ${event.step} … ${formatDuration(event.durationMs)} ✗  ${event.summary}`);
        break;
      case 'info':
        this.write(`    ${event.message}`);
        break;
      case 'warning':
        this.write(`    warning: ${event.message}`);
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
