/**
 * One drift report for both halves of a workspace (issue 12 item 1): what a
 * `tofu plan` would change in the infrastructure, and what the configure play
 * in check mode would change on the hosts. Pure: the use case gathers the facts
 * (plan JSON, the standing inventory's hosts, pin comparison, task results) and
 * this module turns them into a report, a verdict and its renderings.
 */
import { createHash } from 'node:crypto';
import { deriveHosts, INVENTORY_OUTPUT, parseInventory } from './inventory.js';
import { canonicalJson, type PlanJson } from './plan.js';

export type ResourceAction = 'create' | 'update' | 'delete' | 'replace' | 'read';

export interface ResourceDrift {
  address: string;
  action: ResourceAction;
}

export interface OutputDrift {
  name: string;
  action: ResourceAction;
  /** Values are never shown for these. */
  sensitive: boolean;
}

export interface InfrastructureDrift {
  resources: ResourceDrift[];
  outputs: OutputDrift[];
  /** Hosts `tf:<name>` would gain or lose; `undefined` when the plan cannot say (the inventory is known only after apply). */
  hosts: { joining: string[]; leaving: string[] } | undefined;
  /** planFingerprint of the plan. */
  fingerprint: string;
}

export interface TaskDrift {
  task: string;
  /** The diff ansible printed for the change (redacted); empty when the module reports none. */
  diff: string;
}

export interface HostProblem {
  host: string;
  detail: string;
}

export interface ConfigurationDrift {
  /** Hosts the check ran against. */
  hostCount: number;
  /** Hosts whose play would change something, with the tasks that would. */
  changed: Array<{ host: string; tasks: TaskDrift[] }>;
  unreachable: HostProblem[];
  /** Hosts presenting a key other than their pin: never re-pinned, and not checked. */
  keyMismatches: HostProblem[];
  /** Tasks that failed in check mode: the check of that host is incomplete. */
  failed: Array<HostProblem & { task: string }>;
  fingerprint: string;
}

/** Either half is a result or the reason the check of that half could not run. */
export type Half<T> = { ok: true; value: T } | { ok: false; error: string };

export interface DriftReport {
  workspace: string;
  checkedAt: string;
  infrastructure: Half<InfrastructureDrift>;
  configuration: Half<ConfigurationDrift>;
  /** Scheduled ticks that never ran (ISO times), when the run knows its schedule. */
  missedTicks?: string[];
}

export type DriftVerdict = 'clean' | 'drift' | 'failed';

/** Exit statuses of `exocomp drift` (2 stays bad usage, as for every command). */
export const DRIFT_EXIT_CODES: Record<DriftVerdict, 0 | 1 | 3> = { clean: 0, failed: 1, drift: 3 };

// ---------------------------------------------------------------------------
// Infrastructure
// ---------------------------------------------------------------------------

/** The one action a resource change's `actions` amount to (`["delete", "create"]` is a replace). */
export function resourceActionOf(actions: readonly string[]): ResourceAction | undefined {
  if (actions.includes('create') && actions.includes('delete')) return 'replace';
  for (const action of ['create', 'update', 'delete', 'read'] as const) if (actions.includes(action)) return action;
  return undefined;
}

function containsSensitive(marks: unknown): boolean {
  if (marks === true) return true;
  if (Array.isArray(marks)) return marks.some(containsSensitive);
  if (marks !== null && typeof marks === 'object') return Object.values(marks).some(containsSensitive);
  return false;
}

function inventoryHostNames(value: unknown): string[] | undefined {
  try {
    return deriveHosts(parseInventory(value)).map((host) => host.name);
  } catch {
    return undefined;
  }
}

/**
 * The infrastructure half from `tofu show -json` of a plan. `currentHosts` are
 * the hosts `tf:<name>` names now; the hosts it would name come from the
 * planned `ansible_inventory` output (when the plan knows its value).
 */
export function infrastructureDrift(
  plan: PlanJson,
  fingerprint: string,
  currentHosts: readonly string[],
): InfrastructureDrift {
  const resources = (plan.resource_changes ?? [])
    .map((r) => ({
      address: r.deposed ? `${r.address} (deposed ${r.deposed})` : r.address,
      action: resourceActionOf(r.change.actions),
    }))
    .filter((r): r is ResourceDrift => r.action !== undefined)
    .sort((a, b) => compare(a.address, b.address));
  const outputs = Object.entries(plan.output_changes ?? {})
    .map(([name, c]) => ({
      name,
      action: resourceActionOf(c.actions),
      sensitive: containsSensitive(c.before_sensitive) || containsSensitive(c.after_sensitive),
    }))
    .filter((o): o is OutputDrift => o.action !== undefined)
    .sort((a, b) => compare(a.name, b.name));
  const inventoryChange = plan.output_changes?.[INVENTORY_OUTPUT];
  const inventoryAction = inventoryChange === undefined ? undefined : resourceActionOf(inventoryChange.actions);
  let hosts: InfrastructureDrift['hosts'] = { joining: [], leaving: [] };
  if (inventoryChange !== undefined && inventoryAction === 'delete') {
    hosts = { joining: [], leaving: [...currentHosts].sort() };
  } else if (inventoryChange !== undefined && inventoryAction !== undefined) {
    const unknown =
      containsSensitive(inventoryChange.after_unknown) || containsSensitive(inventoryChange.after_sensitive);
    const planned = unknown ? undefined : inventoryHostNames(inventoryChange.after ?? {});
    if (planned === undefined) {
      hosts = undefined;
    } else {
      const now = new Set(currentHosts);
      const next = new Set(planned);
      hosts = {
        joining: planned.filter((h) => !now.has(h)).sort(),
        leaving: currentHosts.filter((h) => !next.has(h)).sort(),
      };
    }
  }
  return { resources, outputs, hosts, fingerprint };
}

// ---------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------

/** The task results the configuration half is built from (the adapter's events, narrowed). */
export interface TaskResult {
  host: string;
  task: string;
  status: 'ok' | 'changed' | 'failed' | 'unreachable' | 'skipped';
  msg?: string;
  diff?: string;
  ignored?: boolean;
}

export interface ConfigurationFacts {
  /** Hosts the play ran against (key mismatches excluded). */
  checkedHosts: readonly string[];
  results: readonly TaskResult[];
  keyMismatches: readonly HostProblem[];
  /** Hosts found unreachable before the play (no key could be scanned). */
  unreachableBeforePlay: readonly HostProblem[];
}

/** First line of a message, bounded: ansible messages can be pages of JSON. */
function firstLine(text: string | undefined, max = 300): string {
  const line = (text ?? '').trim().split('\n')[0] ?? '';
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

export function configurationDrift(facts: ConfigurationFacts): ConfigurationDrift {
  const changed = new Map<string, TaskDrift[]>();
  const unreachable = new Map<string, string>();
  const failed: ConfigurationDrift['failed'] = [];
  for (const r of facts.results) {
    if (r.status === 'changed') {
      changed.set(r.host, [...(changed.get(r.host) ?? []), { task: r.task, diff: r.diff ?? '' }]);
    } else if (r.status === 'unreachable') {
      if (!unreachable.has(r.host)) unreachable.set(r.host, firstLine(r.msg) || 'unreachable');
    } else if (r.status === 'failed' && !r.ignored) {
      failed.push({ host: r.host, task: r.task, detail: firstLine(r.msg) || 'failed' });
    }
  }
  for (const p of facts.unreachableBeforePlay) if (!unreachable.has(p.host)) unreachable.set(p.host, p.detail);
  const report: Omit<ConfigurationDrift, 'fingerprint'> = {
    hostCount: facts.checkedHosts.length + facts.keyMismatches.length + facts.unreachableBeforePlay.length,
    changed: [...changed.entries()].sort(([a], [b]) => compare(a, b)).map(([host, tasks]) => ({ host, tasks })),
    unreachable: [...unreachable.entries()]
      .sort(([a], [b]) => compare(a, b))
      .map(([host, detail]) => ({ host, detail })),
    keyMismatches: [...facts.keyMismatches].sort((a, b) => compare(a.host, b.host)),
    failed: failed.sort((a, b) => compare(a.host, b.host)),
  };
  return { ...report, fingerprint: configurationFingerprint(facts) };
}

/**
 * A sha256 over what the play would do: per host, every task's name, status and
 * diff in play order, plus the hosts it could not check. Any change to the
 * playbook that changes a task list, a result or a diff changes it; results are
 * grouped per host so the order forks finish in does not matter.
 */
export function configurationFingerprint(facts: ConfigurationFacts): string {
  const perHost: Record<string, Array<[string, string, string]>> = {};
  for (const r of facts.results) {
    (perHost[r.host] ??= []).push([
      r.task,
      r.status === 'failed' && r.ignored ? 'failed-ignored' : r.status,
      diffBody(r.diff ?? ''),
    ]);
  }
  const hosts = (list: readonly HostProblem[]) => list.map((p) => p.host).sort();
  return createHash('sha256')
    .update(
      canonicalJson({
        perHost,
        keyMismatches: hosts(facts.keyMismatches),
        unreachable: hosts(facts.unreachableBeforePlay),
      }),
    )
    .digest('hex');
}

/**
 * A diff without its `---`/`+++` header lines: ansible names the new content
 * by a temporary file (`+++ after: /tmp/…/tmpab12cd`) that differs on every
 * run, while the hunks say what would change.
 */
function diffBody(diff: string): string {
  return diff
    .split('\n')
    .filter((line) => !line.startsWith('--- ') && !line.startsWith('+++ '))
    .join('\n');
}

// ---------------------------------------------------------------------------
// Verdict
// ---------------------------------------------------------------------------

export function infrastructureHasDrift(infra: InfrastructureDrift): boolean {
  return infra.resources.length > 0 || infra.outputs.length > 0;
}

export function configurationHasDrift(config: ConfigurationDrift): boolean {
  return config.changed.length > 0 || config.unreachable.length > 0 || config.keyMismatches.length > 0;
}

/**
 * `failed` when either half could not be checked completely (a report of
 * drift found so far still renders); `drift` when a complete check found a
 * difference; `clean` otherwise.
 */
export function driftVerdict(report: DriftReport): DriftVerdict {
  const { infrastructure: infra, configuration: config } = report;
  if (!infra.ok || !config.ok || config.value.failed.length > 0) return 'failed';
  return infrastructureHasDrift(infra.value) || configurationHasDrift(config.value) ? 'drift' : 'clean';
}

export function driftExitCode(report: DriftReport): 0 | 1 | 3 {
  return DRIFT_EXIT_CODES[driftVerdict(report)];
}

/** A few words for records, commit messages and issue titles: `+1 ~0 -0 resources, 1 host changed`. */
export function driftHeadline(report: DriftReport): string {
  const parts: string[] = [];
  const { infrastructure: infra, configuration: config } = report;
  if (!infra.ok) parts.push('infrastructure check failed');
  else if (infrastructureHasDrift(infra.value)) {
    const count = (action: ResourceAction) => infra.value.resources.filter((r) => r.action === action).length;
    parts.push(
      `infrastructure: ${count('create')} to add, ${count('update')} to change, ${count('delete')} to destroy` +
        (count('replace') > 0 ? `, ${count('replace')} to replace` : '') +
        (infra.value.outputs.length > 0 ? `, ${infra.value.outputs.length} output(s)` : ''),
    );
  }
  if (!config.ok) parts.push('configuration check failed');
  else {
    const c = config.value;
    const bits = [
      c.changed.length > 0 ? `${c.changed.length} host(s) would change` : '',
      c.unreachable.length > 0 ? `${c.unreachable.length} unreachable` : '',
      c.keyMismatches.length > 0 ? `${c.keyMismatches.length} host key mismatch(es)` : '',
      c.failed.length > 0 ? `${c.failed.length} task(s) failed in check mode` : '',
    ].filter(Boolean);
    if (bits.length > 0) parts.push(`configuration: ${bits.join(', ')}`);
  }
  if ((report.missedTicks?.length ?? 0) > 0) parts.push(`${report.missedTicks?.length} missed scheduled run(s)`);
  return parts.join('; ') || 'no drift';
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
