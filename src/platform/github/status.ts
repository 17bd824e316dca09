/**
 * The status text of a workflow for the job summary and the sticky PR comment:
 * the shared markdown view, the plan summary, the run that wrote it and, while
 * a decision is pending, the exact way to approve or reject.
 */
import { configurationPreviewMarkdown, renderMarkdown, viewWorkflow } from '../../domain/render.js';
import type { PlanView } from '../../domain/plan-view.js';
import type { Workflow } from '../../domain/workflow.js';
import type { SweepEntry } from '../../app/provision/interrupted.js';
import type { PlanJobOutcome } from '../../app/provision/plan-job.js';
import type { CiPlatform } from '../../app/ports/ci-platform.js';
import type { RunContext } from './run-context.js';

/** GitHub rejects issue comments longer than this. */
export const COMMENT_LIMIT = 65_536;

export function commentMarker(workflowId: string): string {
  return `<!-- exocomp:workflow=${workflowId} -->`;
}

export interface StatusOptions {
  run: RunContext;
  now: Date;
  /** The approve workflow file, for the instructions while waiting. */
  approveWorkflow?: string;
  approvalMode?: 'environment' | 'dispatch';
  /** An extra line (e.g. why the apply was refused). */
  note?: string;
  /** The view of the plan the approval binds (readPlanView), shown in place of its summary line. */
  planView?: PlanView | undefined;
}

/** `+1 ~0 -2` → `+ 1 to add, ~ 0 to change, − 2 to destroy`. */
export function describePlanSummary(summary: string): string {
  const match = /^\+(\d+) ~(\d+) -(\d+)$/.exec(summary);
  if (!match) return summary;
  return `+ ${match[1]} to add, ~ ${match[2]} to change, − ${match[3]} to destroy`;
}

function approvalLines(workflow: Workflow, options: StatusOptions): string[] {
  if (workflow.state !== 'awaiting-approval') return [];
  if (options.approvalMode === 'environment') {
    return [
      '',
      `**Awaiting approval.** A required reviewer of the job’s environment approves or rejects the deployment on the run page: ${options.run.runUrl}`,
    ];
  }
  const file = options.approveWorkflow ?? 'exocomp-approve.yml';
  const id = workflow.id;
  return [
    '',
    `**Awaiting approval.** Someone with write access (not the requester, ${workflow.requester}) decides:`,
    '',
    '```sh',
    `gh workflow run ${file} --repo ${options.run.slug} -f workflow-id=${id} -f decision=approve`,
    `gh workflow run ${file} --repo ${options.run.slug} -f workflow-id=${id} -f decision=reject`,
    '```',
    '',
    `or Actions → ${file} → Run workflow, with workflow-id \`${id}\`.`,
  ];
}

/** Room the plan view leaves for the rest of the comment. */
const PLAN_VIEW_LIMIT = COMMENT_LIMIT - 16_000;

function render(workflow: Workflow, options: StatusOptions, maxDetail: number): string {
  const lines = [
    commentMarker(workflow.id),
    renderMarkdown(viewWorkflow(workflow, options.now), {
      maxDetail,
      planView: options.planView,
      planViewLimit: PLAN_VIEW_LIMIT,
    }),
  ];
  if (workflow.approval.planSummary) lines.push('', `Plan: ${describePlanSummary(workflow.approval.planSummary)}`);
  lines.push(...approvalLines(workflow, options));
  if (options.note) lines.push('', options.note);
  lines.push(
    '',
    `<sub>Updated by [run ${options.run.runId} attempt ${options.run.runAttempt}](${options.run.runUrl}) at ${options.now.toISOString()}</sub>`,
  );
  return lines.join('\n');
}

/** The status markdown, kept under GitHub's comment size limit by shortening details first. */
export function statusMarkdown(workflow: Workflow, options: StatusOptions): string {
  for (const maxDetail of [300, 80, 20]) {
    const body = render(workflow, options, maxDetail);
    if (body.length <= COMMENT_LIMIT) return body;
  }
  const cut = '\n\n…(shortened to fit GitHub’s comment size limit)';
  return render(workflow, options, 20).slice(0, COMMENT_LIMIT - cut.length) + cut;
}

/** The sticky comment of a plan-only preview. */
export function planPreviewMarkdown(preview: Extract<PlanJobOutcome, { kind: 'previewed' }>, run: RunContext): string {
  const { configuration } = preview;
  return [
    commentMarker(`plan-${preview.workspaceName}`),
    `### exocomp plan for \`${preview.workspaceName}\``,
    '',
    `Plan: ${describePlanSummary(preview.planSummary)} · fingerprint \`${preview.planFingerprint.slice(0, 16)}\``,
    '',
    ...(configuration.kind === 'previewed'
      ? configurationPreviewMarkdown(configuration.fingerprint, configuration.preview)
      : [`_Configuration: ${configuration.reason}._`]),
    '',
    `<sub>[run ${run.runId}](${run.runUrl}) · plan only, nothing recorded or applied</sub>`,
  ].join('\n');
}

/** The sweep in the log, the `resumed` output and the job summary. */
export async function publishSweep(platform: CiPlatform, entries: SweepEntry[]): Promise<void> {
  for (const entry of entries) {
    const where = entry.target ? ` → ${entry.target}@${entry.ref}` : '';
    platform.log.info(`${entry.id}: ${entry.step} ${entry.action}${where}${entry.runUrl ? ` (${entry.runUrl})` : ''}`);
    if (entry.warning) platform.log.warning(entry.warning);
  }
  const resumed = entries.filter((e) => e.action === 'dispatched' || e.action === 'would-dispatch').map((e) => e.id);
  platform.setOutput('resumed', JSON.stringify(resumed));
  const rows = entries.map((e) => `| \`${e.id}\` | ${e.step} | ${e.action} |`);
  await platform.writeSummary(
    ['### exocomp resume sweep', '', '| workflow | step | action |', '| -------- | ---- | ------ |', ...rows].join(
      '\n',
    ),
  );
}
