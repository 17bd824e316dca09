/**
 * The progress port in a GitLab job log: one collapsible section per step, holding the play's lines (one per
 * task and host, as the CLI prints them); every line redacted by the log, which also keeps a host's text from
 * forging a section marker.
 */
import { formatDuration } from '../../domain/duration.js';
import { playStartedLine, taskResultLines } from '../../domain/play-events.js';
import type { TofuDiagnostic } from '../../domain/tofu-diagnostics.js';
import type { ProgressEvent, ProgressListener } from '../../app/runtime/progress.js';
import type { GitLabLog } from './log.js';

export class GitLabProgress implements ProgressListener {
  private open = false;
  /** tofu's diagnostics so far, for the job's code-quality report (their text is already in the log). */
  readonly diagnostics: TofuDiagnostic[] = [];

  constructor(private readonly log: GitLabLog) {}

  emit(event: ProgressEvent): void {
    switch (event.type) {
      case 'info':
        this.log.info(event.message);
        return;
      case 'warning':
        this.log.warning(event.message);
        return;
      case 'tofu-diagnostic':
        this.diagnostics.push(event.diagnostic);
        return;
      case 'play-started':
        this.log.info(playStartedLine(event.play, event.tasks));
        return;
      case 'task-result':
        // Inside the step's section, one line per task and host: the CLI's lines (the log redacts each).
        for (const line of taskResultLines({ ...event, event: 'result' })) this.log.info(line);
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
