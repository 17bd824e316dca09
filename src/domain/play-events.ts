/**
 * What a running play reports, task by task and host by host: the events our
 * ansible callback (adapters/ansible-events.ts) writes as JSON lines, checked
 * as data (their text comes from playbooks and hosts: untrusted), and the
 * readable forms of progress and failures. Shared by progress, failure
 * reports and drift (which reads `changed` and diffs of check-mode runs).
 */
import { z } from 'zod';
import { formatDuration } from './duration.js';

const count = z.number().int().nonnegative();
/** Where the callback knows them: the task's position in its play, and the time since the run started. */
const position = { index: count.optional(), total: count.optional(), elapsedMs: count.optional() };

const resultEventSchema = z.object({
  event: z.literal('result'),
  status: z.enum(['ok', 'changed', 'failed', 'unreachable', 'skipped']),
  host: z.string(),
  task: z.string(),
  action: z.string(),
  msg: z.string().optional(),
  /** A failure's output (cut at a few thousand characters) and exit code. */
  stderr: z.string().optional(),
  stdout: z.string().optional(),
  rc: z.number().int().optional(),
  diff: z.string().optional(),
  ignored: z.boolean().optional(),
  ...position,
});

export const ansibleEventSchema = z.discriminatedUnion('event', [
  z.object({ event: z.literal('play'), play: z.string(), tasks: count.optional(), elapsedMs: count.optional() }),
  z.object({
    event: z.literal('task'),
    task: z.string(),
    action: z.string(),
    handler: z.boolean().optional(),
    ...position,
  }),
  resultEventSchema,
  z.object({ event: z.literal('stats'), hosts: z.record(z.string(), z.record(z.string(), z.number())) }),
]);

export type AnsibleEvent = z.infer<typeof ansibleEventSchema>;
export type TaskResultEvent = z.infer<typeof resultEventSchema>;
/** A host's result of one task, as progress and failure reports use it. */
export type HostResult = TaskResultEvent;

/** A failure that stops the host (an ignored failure does not). */
export const isFailure = (result: HostResult): boolean =>
  result.status === 'unreachable' || (result.status === 'failed' && result.ignored !== true);

const MARKS: Record<HostResult['status'], string> = {
  ok: '✓',
  changed: '✓ changed',
  skipped: '· skipped',
  failed: '✗',
  unreachable: '✗ unreachable',
};

/** `web1 · Create the fleet user ✓ (2/7)` */
export function formatHostResult(result: HostResult): string {
  const mark = result.status === 'failed' && result.ignored ? '✗ ignored' : MARKS[result.status];
  const position = result.total && result.index ? ` (${result.index}/${result.total})` : '';
  return `${oneLine(result.host)} · ${oneLine(result.task)} ${mark}${position}`;
}

/** The reason on one line: the module's message and its exit code, or the first line of stderr. */
export function failureReason(result: HostResult): string {
  const message = firstLine(result.msg) ?? firstLine(result.stderr) ?? result.status;
  return result.rc !== undefined && result.rc !== 0 ? `${message} (rc ${result.rc})` : message;
}

/** `web1 · Install nginx: non-zero return code (rc 3)` — for summaries and tables. */
export function failureSummary(failures: readonly HostResult[]): string {
  if (failures.length === 0) return '';
  const [first] = failures;
  const more =
    failures.length > 1 ? ` (+${failures.length - 1} more host failure${failures.length > 2 ? 's' : ''})` : '';
  return `${oneLine(first!.host)} · ${oneLine(first!.task)}: ${failureReason(first!)}${more}`;
}

/**
 * A failure for a person: host, task, message, then the first lines of stderr
 * (or of stdout when stderr is empty), indented under it.
 */
export function formatFailure(result: HostResult, maxLines = 5): string[] {
  const lines = [`${oneLine(result.host)} · ${oneLine(result.task)}: ${failureReason(result)}`];
  const output = result.stderr?.trim()
    ? { name: 'stderr', text: result.stderr }
    : result.stdout?.trim()
      ? { name: 'stdout', text: result.stdout }
      : undefined;
  if (output) {
    const all = output.text.split('\n').filter((line) => line.trim() !== '');
    const shown = all.slice(0, maxLines);
    lines.push(`  ${output.name}:`);
    for (const line of shown) lines.push(`    ${line}`);
    if (all.length > shown.length) lines.push(`    … ${all.length - shown.length} more line(s)`);
  }
  return lines;
}

/**
 * One host's result of one task as every log prints it (the CLI's terminal, a GitLab job): the line with its
 * duration, then a failure readably and once (the step's summary and the status table keep one line).
 */
export function taskResultLines(result: HostResult): string[] {
  const lines = [`${formatHostResult(result)} ${formatDuration(result.elapsedMs ?? 0)}`];
  if (!isFailure(result)) return lines;
  return [
    ...lines,
    `      ${failureReason(result)}`,
    ...formatFailure(result)
      .slice(1)
      .map((line) => `    ${line}`),
  ];
}

/** `play Configure: 3 task(s)` */
export function playStartedLine(play: string, tasks: number): string {
  return `play ${oneLine(play)}: ${tasks} task(s)`;
}

/** Everything known about the failures, for the ledger's failure context. */
export function failureDetail(failures: readonly HostResult[]): string {
  return failures
    .map((f) =>
      [
        `${f.host} · ${f.task}: ${f.status}${f.rc !== undefined ? ` (rc ${f.rc})` : ''}`,
        ...(f.msg ? [`msg: ${f.msg}`] : []),
        ...(f.stderr ? [`stderr:\n${f.stderr}`] : []),
        ...(f.stdout ? [`stdout:\n${f.stdout}`] : []),
      ].join('\n'),
    )
    .join('\n\n');
}

function firstLine(value: string | undefined): string | undefined {
  const line = value
    ?.split('\n')
    .map((l) => l.trim())
    .find((l) => l !== '');
  return line === undefined ? undefined : oneLine(line);
}

/** Text from a play on one line, without control characters. */
function oneLine(value: string): string {
  // eslint-disable-next-line no-control-regex
  return value.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
}
