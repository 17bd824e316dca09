/** The progress port in a GitLab job log: one collapsible section per step; every line redacted by the log. */
import { formatDuration } from '../../domain/duration.js';
import type { ProgressEvent, ProgressListener } from '../../app/runtime/progress.js';
import type { GitLabLog } from './log.js';

export class GitLabProgress implements ProgressListener {
  private open = false;

  constructor(private readonly log: GitLabLog) {}

  emit(event: ProgressEvent): void {
    switch (event.type) {
      case 'info':
        this.log.info(event.message);
        return;
      case 'warning':
        this.log.warning(event.message);
        return;
      case 'workflow-created':
        this.log.info(`workflow ${event.id} created in ${event.where}`);
        return;
      case 'step-started':
        this.close();
        this.log.startGroup(
          `${event.index}/${event.total} ${event.step}${event.attempt > 1 ? ` (attempt ${event.attempt})` : ''}`,
        );
        this.open = true;
        return;
      case 'step-skipped':
        this.log.info(`${event.index}/${event.total} ${event.step}: skipped (${event.reason})`);
        return;
      case 'step-succeeded':
        this.log.info(
          `✓ ${event.step} succeeded in ${formatDuration(event.durationMs)}${event.detail ? `: ${event.detail}` : ''}`,
        );
        this.close();
        return;
      case 'step-failed':
        this.close();
        this.log.error(`${event.step} failed after ${formatDuration(event.durationMs)}: ${event.summary}`);
        return;
    }
  }

  private close(): void {
    if (this.open) this.log.endGroup();
    this.open = false;
  }
}
