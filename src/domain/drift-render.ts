/**
 * The drift report as a terminal/log text and as markdown (job summary, the
 * sticky drift issue). A clean report is one line in both. Diffs are bounded so
 * a summary or an issue body stays within the platforms' limits; `--json`
 * carries the report itself, unbounded.
 */
import {
  driftHeadline,
  driftVerdict,
  infrastructureHasDrift,
  type ConfigurationDrift,
  type DriftReport,
  type InfrastructureDrift,
  type ResourceAction,
} from './drift.js';

const ACTION_MARK: Record<ResourceAction, string> = {
  create: '+',
  update: '~',
  delete: '-',
  replace: '-/+',
  read: '<=',
};
/** Lines of one task's diff shown before "… N more lines". */
export const MAX_DIFF_LINES = 40;
/** Characters of a markdown report; GitHub rejects issue bodies and comments over 65,536. */
export const MAX_MARKDOWN_LENGTH = 60_000;

export function cleanLine(report: DriftReport): string {
  const hosts = report.configuration.ok ? report.configuration.value.hostCount : 0;
  return `no drift in tf:${report.workspace}: the plan has no changes and the play would change nothing on ${hosts} host(s)`;
}

function boundedDiff(diff: string): string[] {
  const lines = diff.replace(/\n+$/, '').split('\n');
  if (lines.length <= MAX_DIFF_LINES) return lines;
  return [...lines.slice(0, MAX_DIFF_LINES), `… ${lines.length - MAX_DIFF_LINES} more line(s) (see --json)`];
}

function hostsLine(infra: InfrastructureDrift): string | undefined {
  if (infra.hosts === undefined) return 'hosts of the inventory: known only after apply';
  const { joining, leaving } = infra.hosts;
  if (joining.length === 0 && leaving.length === 0) return undefined;
  return [
    joining.length > 0 ? `joining: ${joining.join(', ')}` : '',
    leaving.length > 0 ? `leaving: ${leaving.join(', ')}` : '',
  ]
    .filter(Boolean)
    .join('; ');
}

// ---------------------------------------------------------------------------
// Text
// ---------------------------------------------------------------------------

export function renderDriftText(report: DriftReport): string {
  const verdict = driftVerdict(report);
  if (verdict === 'clean') return `${cleanLine(report)}\n`;
  const out: string[] = [
    `${verdict === 'drift' ? 'drift found' : 'drift check failed'} in tf:${report.workspace} (checked ${report.checkedAt}): ${driftHeadline(report)}`,
  ];
  const { infrastructure: infra, configuration: config } = report;
  out.push('', 'infrastructure:');
  if (!infra.ok) out.push(`  check failed: ${infra.error}`);
  else if (!infrastructureHasDrift(infra.value)) out.push('  no changes');
  else {
    for (const r of infra.value.resources) out.push(`  ${ACTION_MARK[r.action].padEnd(3)} ${r.address} (${r.action})`);
    for (const o of infra.value.outputs)
      out.push(`  ${ACTION_MARK[o.action].padEnd(3)} output ${o.name}${o.sensitive ? ' (sensitive)' : ''}`);
    const hosts = hostsLine(infra.value);
    if (hosts) out.push(`  hosts of tf:${report.workspace}: ${hosts}`);
  }
  out.push('', 'configuration:');
  if (!config.ok) out.push(`  check failed: ${config.error}`);
  else out.push(...configurationText(config.value));
  if ((report.missedTicks?.length ?? 0) > 0) out.push('', `missed scheduled runs: ${report.missedTicks?.join(', ')}`);
  return `${out.join('\n')}\n`;
}

/** The configuration half alone, as the approval record and the plan's preview show it. */
export function renderConfigurationText(config: ConfigurationDrift): string {
  return configurationText(config)
    .map((line) => line.slice(2))
    .join('\n');
}

function configurationText(config: ConfigurationDrift): string[] {
  const out: string[] = [];
  if (
    config.changed.length === 0 &&
    config.unreachable.length === 0 &&
    config.keyMismatches.length === 0 &&
    config.failed.length === 0
  ) {
    out.push(`  no changes on ${config.hostCount} host(s)`);
  }
  for (const { host, tasks } of config.changed) {
    out.push(`  ${host}:`);
    for (const task of tasks) {
      out.push(`    ~ ${task.task}`);
      if (task.diff !== '') out.push(...boundedDiff(task.diff).map((line) => `      ${line}`));
    }
  }
  for (const p of config.keyMismatches)
    out.push(`  host key mismatch: ${p.host} (${p.detail}) — not re-pinned, not checked`);
  for (const p of config.unreachable) out.push(`  unreachable: ${p.host} (${p.detail})`);
  for (const p of config.failed) out.push(`  failed in check mode: ${p.host} · ${p.task}: ${p.detail}`);
  return out;
}

// ---------------------------------------------------------------------------
// Markdown
// ---------------------------------------------------------------------------

/** Markdown-inert text for table cells and list items (host output is untrusted). */
export function escapeMarkdown(text: string): string {
  return text.replace(/[\\`*_{}[\]()<>#+!|~]/g, (c) => `\\${c}`).replace(/\r?\n/g, ' ');
}

/** A fenced block whose fence is longer than any backtick run inside it. */
export function fenced(lang: string, lines: readonly string[]): string[] {
  const longest = Math.max(2, ...lines.map((l) => Math.max(0, ...(l.match(/`+/g) ?? []).map((m) => m.length))));
  const fence = '`'.repeat(longest + 1);
  return [`${fence}${lang}`, ...lines, fence];
}

export function renderDriftMarkdown(report: DriftReport): string {
  const verdict = driftVerdict(report);
  if (verdict === 'clean') return `✅ ${escapeMarkdown(cleanLine(report))}\n`;
  const out: string[] = [
    `### ${verdict === 'drift' ? '⚠️ Drift' : '❌ Drift check failed'} in \`tf:${report.workspace}\``,
    '',
    `${escapeMarkdown(driftHeadline(report))} (checked ${report.checkedAt})`,
    '',
    '#### Infrastructure',
  ];
  const { infrastructure: infra, configuration: config } = report;
  if (!infra.ok) out.push('', `Check failed: ${escapeMarkdown(infra.error)}`);
  else if (!infrastructureHasDrift(infra.value)) out.push('', 'No changes.');
  else {
    out.push('', '| action | address |', '| --- | --- |');
    for (const r of infra.value.resources) out.push(`| ${r.action} | \`${r.address.replace(/`/g, "'")}\` |`);
    for (const o of infra.value.outputs)
      out.push(`| ${o.action} | output \`${o.name}\`${o.sensitive ? ' (sensitive)' : ''} |`);
    const hosts = hostsLine(infra.value);
    if (hosts) out.push('', `Hosts of \`tf:${report.workspace}\`: ${escapeMarkdown(hosts)}`);
    out.push('', `Plan fingerprint \`${infra.value.fingerprint.slice(0, 16)}\``);
  }
  out.push('', '#### Configuration');
  if (!config.ok) out.push('', `Check failed: ${escapeMarkdown(config.error)}`);
  else out.push(...configurationMarkdown(config.value));
  if ((report.missedTicks?.length ?? 0) > 0) out.push('', `Missed scheduled runs: ${report.missedTicks?.join(', ')}`);
  return bound(`${out.join('\n')}\n`);
}

function configurationMarkdown(config: ConfigurationDrift): string[] {
  const out: string[] = [];
  if (
    config.changed.length === 0 &&
    config.unreachable.length === 0 &&
    config.keyMismatches.length === 0 &&
    config.failed.length === 0
  ) {
    out.push('', `No changes on ${config.hostCount} host(s).`);
  }
  for (const { host, tasks } of config.changed) {
    out.push('', `**${escapeMarkdown(host)}**`);
    for (const task of tasks) {
      out.push('', `- ${escapeMarkdown(task.task)}`);
      if (task.diff !== '') out.push('', ...fenced('diff', boundedDiff(task.diff)));
    }
  }
  const problems = [
    ...config.keyMismatches.map((p) => ['host key mismatch (not re-pinned)', p.host, p.detail]),
    ...config.unreachable.map((p) => ['unreachable', p.host, p.detail]),
    ...config.failed.map((p) => ['failed in check mode', p.host, `${p.task}: ${p.detail}`]),
  ];
  if (problems.length > 0) {
    out.push('', '| problem | host | detail |', '| --- | --- | --- |');
    for (const [what, host, detail] of problems)
      out.push(`| ${what} | ${escapeMarkdown(host as string)} | ${escapeMarkdown(detail as string)} |`);
  }
  out.push('', `Configuration fingerprint \`${config.fingerprint.slice(0, 16)}\``);
  return out;
}

function bound(markdown: string): string {
  if (markdown.length <= MAX_MARKDOWN_LENGTH) return markdown;
  // Cut at a line boundary and close any fence left open, so the rest still renders.
  const cut = markdown.slice(0, MAX_MARKDOWN_LENGTH);
  const lines = cut.slice(0, cut.lastIndexOf('\n')).split('\n');
  const fences = lines.filter((l) => /^`{3,}/.test(l));
  const open = fences.length % 2 === 1 ? (fences.at(-1)?.match(/^`+/)?.[0] ?? '```') : undefined;
  return `${[...lines, ...(open ? [open] : []), '', '… the report was cut to fit; the full report is in the run log and `--json`.'].join('\n')}\n`;
}
