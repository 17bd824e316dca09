/** The progress port on a runner: one log group per step, warnings as annotations. */
import * as core from '@actions/core';
import { formatDuration } from '../../domain/duration.js';
import type { ProgressEvent, ProgressListener } from '../../app/progress.js';

export class GitHubProgress implements ProgressListener {
  private open = false;

  emit(event: ProgressEvent): void {
    switch (event.type) {
      case 'step-started':
        this.close();
        core.startGroup(`${event.index}/${event.total} ${event.step}${event.attempt > 1 ? ` (attempt ${event.attempt})` : ''}`);
        this.open = true;
        return;
      case 'step-skipped':
        core.info(`${event.index}/${event.total} ${event.step}: skipped (${event.reason})`);
        return;
      case 'step-succeeded':
        core.info(`✓ ${event.step} succeeded in ${formatDuration(event.durationMs)}${event.detail ? `: ${event.detail}` : ''}`);
        this.close();
        return;
      case 'step-failed':
        this.close();
        core.error(`${event.step} failed after ${formatDuration(event.durationMs)}: ${event.summary}`);
        return;
      case 'info':
        core.info(event.message);
        return;
      case 'warning':
        core.warning(event.message);
        return;
    }
  }

  private close(): void {
    if (this.open) core.endGroup();
    this.open = false;
  }
}
