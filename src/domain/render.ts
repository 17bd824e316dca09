/**
 * One view of a workflow record, rendered for a terminal, for markdown (job
 * summary, PR comment) and as JSON. Pure: time is handed in for durations of
 * running steps.
 */
import { fenced } from './drift-render.js';
import { formatDuration } from './duration.js';
import { renderPlanViewMarkdown, renderPlanViewText, type PlanView } from './plan-view.js';
import { timelineGantt } from './timeline.js';
import { shownState, STEP_NAMES, type Step, type Workflow } from './workflow.js';

const STATE_MARK: Record<Step['state'], string> = {
  pending: '·',
  running: '…',
  succeeded: '✓',
  failed: '✗',
  blocked: '⊘',
};

export interface StepView {
  index: number;
  name: string;
  state: Step['state'];
  attempts: number;
  durationMs: number | null;
  detail: string;
  runUrl: string | undefined;
}

export interface WorkflowView {
  id: string;
  state: Workflow['state'];
  workspace: Workflow['workspace'];
  playbook: string;
  requester: string;
  createdAt: string;
  updatedAt: string;
  approval: Workflow['approval'];
  steps: StepView[];
  failure: Workflow['failure'] | null;
  /** The Mermaid gantt of the steps' attempts (domain/timeline.ts); null before any step started. */
  timeline: string | null;
}

function stepDuration(step: Step, now: Date): number | null {
  if (!step.startedAt) return null;
  const end = step.finishedAt ? Date.parse(step.finishedAt) : step.state === 'running' ? now.getTime() : null;
  return end === null ? null : Math.max(0, end - Date.parse(step.startedAt));
}

export function viewWorkflow(workflow: Workflow, now: Date): WorkflowView {
  return {
    id: workflow.id,
    state: workflow.state,
    workspace: workflow.workspace,
    playbook: workflow.playbook,
    requester: workflow.requester,
    createdAt: workflow.createdAt,
    updatedAt: workflow.updatedAt,
    approval: workflow.approval,
    steps: workflow.steps.map((step) => ({
      index: STEP_NAMES.indexOf(step.name) + 1,
      name: step.name,
      state: step.state,
      attempts: step.attempts,
      durationMs: stepDuration(step, now),
      detail: step.detail ?? (step.state === 'running' && step.lease ? `held by ${step.lease.holder}` : ''),
      runUrl: step.runUrl,
    })),
    failure: workflow.failure ?? null,
    timeline: timelineGantt(workflow, now) ?? null,
  };
}

function describeApproval(approval: Workflow['approval']): string {
  if (!approval.required) return 'not required';
  if (approval.state === 'pending') return approval.planSummary ? `pending — plan ${approval.planSummary}` : 'pending';
  const parts = [`${approval.state} by ${approval.by ?? 'unknown'}`];
  if (approval.via) parts.push(`via ${approval.via}`);
  if (approval.at) parts.push(`at ${approval.at}`);
  if (approval.comment) parts.push(`— ${approval.comment}`);
  return parts.join(' ');
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, col) => Math.max(...rows.map((row) => (row[col] ?? '').length)));
  return rows
    .map((row) =>
      row
        .map((cell, col) => cell.padEnd(widths[col]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

function configurationPreviewText(approval: Workflow['approval']): string[] {
  if (approval.configFingerprint === undefined) return [];
  return [
    `configuration check-mode preview · fingerprint ${approval.configFingerprint.slice(0, 16)}`,
    ...(approval.configPreview ?? '').split('\n').map((line) => `  ${line}`),
  ];
}

export function renderText(view: WorkflowView): string {
  const lines = [
    `workflow  ${view.id}  ${shownState(view)}`,
    `workspace ${view.workspace.name} (${view.workspace.path})  playbook ${view.playbook}`,
    `approval  ${describeApproval(view.approval)}`,
    '',
    table([
      ['STEP', 'STATE', 'ATTEMPTS', 'DURATION', 'DETAIL'],
      ...view.steps.map((s) => [
        `${s.index} ${s.name}`,
        `${STATE_MARK[s.state]} ${s.state}`,
        String(s.attempts),
        s.durationMs === null ? '-' : formatDuration(s.durationMs),
        s.detail,
      ]),
    ]),
  ];
  const { approval } = view;
  if (approval.planFingerprint !== undefined) {
    lines.push(
      '',
      `plan          ${approval.planSummary ?? ''} · fingerprint ${approval.planFingerprint.slice(0, 16)}`,
    );
    lines.push(...configurationPreviewText(approval));
  }
  if (view.failure) {
    lines.push('', `failed at ${view.failure.step} (${view.failure.kind}) ${view.failure.at}: ${view.failure.summary}`);
    if (view.failure.retry) lines.push(`retry: ${view.failure.retry}`);
    if (view.state === 'provision-failed') lines.push(`resume with: exocomp provision resume ${view.id}`);
  }
  return lines.join('\n');
}

/** Lines of the configuration preview a comment shows (PR comments are capped at 65,536 characters). */
const MAX_PREVIEW_LINES = 200;

function escapeCell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\r?\n/g, ' ');
}

/** The configuration half of a preview before approval, for a comment or summary: its fingerprint and the check-mode diff (capped). */
export function configurationPreviewMarkdown(fingerprint: string, preview: string): string[] {
  const lines = preview.split('\n');
  const shown =
    lines.length > MAX_PREVIEW_LINES
      ? [...lines.slice(0, MAX_PREVIEW_LINES), `… ${lines.length - MAX_PREVIEW_LINES} more line(s)`]
      : lines;
  return [
    `**Configuration** (check-mode preview) · fingerprint \`${fingerprint.slice(0, 16)}\``,
    '',
    ...fenced('text', shown),
  ];
}

/** Where the whole plan view of a workflow can be read when a comment had to cut it. */
export function fullPlanViewPointer(workflowId: string): string {
  return `\`exocomp approval show ${workflowId}\` (the ledger record plan-views/${workflowId}.json)`;
}

/**
 * `approval show`: the workflow, then what its approval binds — the plan view
 * (hosts, then resources by module) and the configuration preview.
 */
export function renderApprovalText(view: WorkflowView, planView: PlanView | undefined): string {
  const lines = [
    `workflow  ${view.id}  ${view.state}`,
    `workspace ${view.workspace.name} (${view.workspace.path})  playbook ${view.playbook}`,
    `approval  ${describeApproval(view.approval)}`,
    '',
  ];
  const { approval } = view;
  if (approval.planFingerprint === undefined) lines.push('no plan was recorded for approval yet');
  else if (planView === undefined)
    lines.push(
      `plan ${approval.planSummary ?? ''} · fingerprint ${approval.planFingerprint.slice(0, 16)} (no plan view was recorded with it)`,
    );
  else lines.push(renderPlanViewText(planView));
  if (approval.configFingerprint !== undefined) lines.push('', ...configurationPreviewText(approval));
  return lines.join('\n');
}

export interface MarkdownOptions {
  /** Longest detail cell; keeps comments under size limits. */
  maxDetail?: number;
  /** The view of the plan the approval binds, shown in place of its one-line summary. */
  planView?: PlanView | undefined;
  /** The most characters the plan view may take (default 40,000). */
  planViewLimit?: number;
}

/** Markdown for job summaries and PR comments. */
export function renderMarkdown(view: WorkflowView, options: MarkdownOptions = {}): string {
  const maxDetail = options.maxDetail ?? 300;
  const clip = (text: string) => (text.length > maxDetail ? `${text.slice(0, maxDetail - 1)}…` : text);
  const lines = [
    `### exocomp workflow \`${view.id}\` — ${shownState(view)}`,
    '',
    `Workspace \`${view.workspace.name}\` · playbook \`${view.playbook}\` · approval ${describeApproval(view.approval)}`,
    '',
    '| # | step | state | attempts | duration | detail |',
    '| - | ---- | ----- | -------- | -------- | ------ |',
    ...view.steps.map(
      (s) =>
        `| ${s.index} | ${s.runUrl ? `[${s.name}](${s.runUrl})` : s.name} | ${STATE_MARK[s.state]} ${s.state} | ${s.attempts} | ${
          s.durationMs === null ? '-' : formatDuration(s.durationMs)
        } | ${escapeCell(clip(s.detail))} |`,
    ),
  ];
  if (view.timeline !== null) lines.push('', ...fenced('mermaid', view.timeline.split('\n')));
  const { approval } = view;
  if (approval.planFingerprint !== undefined) {
    lines.push(
      '',
      options.planView?.fingerprint === approval.planFingerprint
        ? renderPlanViewMarkdown(options.planView, {
            limit: options.planViewLimit ?? 40_000,
            fullView: fullPlanViewPointer(view.id),
          })
        : `**Plan** \`${approval.planSummary ?? ''}\` · fingerprint \`${approval.planFingerprint.slice(0, 16)}\``,
    );
    if (approval.configFingerprint !== undefined)
      lines.push('', ...configurationPreviewMarkdown(approval.configFingerprint, approval.configPreview ?? ''));
  }
  if (view.failure) {
    lines.push(
      '',
      `**Failed at ${view.failure.step}** (${view.failure.kind}): ${escapeCell(clip(view.failure.summary))}`,
    );
    if (view.failure.retry) lines.push('', escapeCell(view.failure.retry));
  }
  return lines.join('\n');
}
