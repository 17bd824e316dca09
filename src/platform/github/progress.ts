/**
 * The progress port on a runner: one log group per step, warnings as
 * annotations, and every line of text (tool and host output among it) printed
 * inside `::stop-commands::<token>` … `::<token>::`, so the runner never takes
 * a line of it for a workflow command (`::error::`, `::add-mask::`,
 * `::set-output`, the legacy `##[…]` anywhere in a line). The token is random
 * per block: the output cannot guess it to resume processing early.
 */
import * as core from '@actions/core';
import { randomBytes } from 'node:crypto';
import { EOL } from 'node:os';
import { formatDuration } from '../../domain/duration.js';
import { failureReason, formatFailure, formatHostResult, isFailure } from '../../domain/play-events.js';
import type { TofuDiagnostic } from '../../domain/tofu-diagnostics.js';
import type { ProgressEvent, ProgressListener } from '../../app/runtime/progress.js';

export class GitHubProgress implements ProgressListener {
  private open = false;
  private readonly text = new CommandFreeText();

  /** `observe` sees every event first (the chain's actions remember the running step for their post step). */
  constructor(private readonly observe?: (event: ProgressEvent) => void) {}

  emit(event: ProgressEvent): void {
    this.observe?.(event);
    if (event.type === 'info') {
      this.text.write(event.message);
      return;
    }
    if (event.type === 'play-started') {
      this.text.write(`play ${event.play}: ${event.tasks} task(s)`);
      return;
    }
    if (event.type === 'task-result') {
      // Inside the step's group: one line per host and task, a failure readably and once.
      const result = { ...event, event: 'result' as const };
      this.text.write(`${formatHostResult(result)} ${formatDuration(event.elapsedMs ?? 0)}`);
      if (isFailure(result)) {
        this.text.write(`    ${failureReason(result)}`);
        for (const line of formatFailure(result).slice(1)) this.text.write(`  ${line}`);
      }
      return;
    }
    // Our own commands (groups, annotations) must not land inside a stopped block.
    this.text.flush();
    switch (event.type) {
      case 'workflow-created':
        core.info(`workflow ${event.id} created in ${event.where}`);
        return;
      case 'step-started':
        this.close();
        core.startGroup(
          `${event.index}/${event.total} ${event.step}${event.attempt > 1 ? ` (attempt ${event.attempt})` : ''}`,
        );
        this.open = true;
        return;
      case 'step-skipped':
        core.info(`${event.index}/${event.total} ${event.step}: skipped (${event.reason})`);
        return;
      case 'step-succeeded':
        // The detail names hosts from tofu outputs: text, like tool output.
        this.text.write(
          `✓ ${event.step} succeeded in ${formatDuration(event.durationMs)}${event.detail ? `: ${event.detail}` : ''}`,
        );
        this.text.flush();
        this.close();
        return;
      case 'step-failed':
        this.close();
        core.error(`${event.step} failed after ${formatDuration(event.durationMs)}: ${event.summary}`);
        return;
      case 'warning':
        core.warning(event.message);
        return;
      case 'tofu-diagnostic':
        annotate(event.diagnostic);
        return;
    }
  }

  /** Prints text that arrived but was not printed yet; call before the process ends. */
  flush(): void {
    this.text.flush();
  }

  private close(): void {
    if (this.open) core.endGroup();
    this.open = false;
  }
}

/**
 * A tofu diagnostic as an annotation on its file and line. @actions/core escapes the message and the properties
 * (`%`, CR, LF; `:` and `,` in properties), so tofu's text stays one annotation and never starts a command of
 * its own. An error without a file adds nothing to the step's failure; a warning without one is still said.
 */
function annotate(d: TofuDiagnostic): void {
  if (d.severity === 'error' && d.file === undefined) return;
  const properties: core.AnnotationProperties = {
    title: `tofu ${d.severity}`,
    ...(d.file === undefined ? {} : { file: d.file }),
    ...(d.line === undefined ? {} : { startLine: d.line }),
    ...(d.endLine === undefined ? {} : { endLine: d.endLine }),
  };
  const message = d.detail ? `${d.summary}\n\n${d.detail}` : d.summary;
  if (d.severity === 'error') core.error(message, properties);
  else core.warning(message, properties);
}

/**
 * Lines gathered while they arrive in one turn of the event loop and printed
 * as one stopped block, so a burst of tool output costs two marker lines, not
 * two per line.
 */
export class CommandFreeText {
  private pending: string[] = [];
  private scheduled = false;

  write(text: string): void {
    this.pending.push(text);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }

  flush(): void {
    this.scheduled = false;
    if (this.pending.length === 0) return;
    const token = randomBytes(16).toString('hex');
    const text = this.pending.join(EOL);
    this.pending = [];
    process.stdout.write(`::stop-commands::${token}${EOL}${text}${EOL}::${token}::${EOL}`);
  }
}
