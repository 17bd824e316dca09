/**
 * What a reviewer approves (issue 27 item 1): every resource a plan changes,
 * by module, with its action and why, and above it what the plan does to the
 * hosts of the standing inventory — created (onboarded), replaced (new host
 * keys, pins retired), destroyed (pins and inventory entries retired) or
 * unchanged. Built from `tofu show -json` of the saved plan; pure. No value of
 * the plan is ever copied into the view — only addresses, actions, reasons and
 * the attribute paths that force a replacement — so no sensitive value can
 * reach a comment through it.
 */
import { z } from 'zod';
import { escapeMarkdown } from './drift-render.js';
import { infrastructureDrift, resourceActionOf } from './drift.js';
import { summarizePlan, type PlanJson } from './plan.js';

export const PLAN_VIEW_SCHEMA_VERSION = 1;

export const PLAN_ACTIONS = ['create', 'update', 'replace', 'destroy', 'read'] as const;
export type PlanAction = (typeof PLAN_ACTIONS)[number];

export const HOST_FATES = ['created', 'replaced', 'destroyed', 'unchanged'] as const;
export type HostFate = (typeof HOST_FATES)[number];

const resourceViewSchema = z.object({
  address: z.string(),
  /** `module.a.module.b`, or '' for the root module. */
  module: z.string(),
  action: z.enum(PLAN_ACTIONS),
  /** tofu's `action_reason`, when it gave one. */
  reason: z.string().optional(),
  /** The attributes whose change forces the replacement (`tags["Name"]`). */
  replacePaths: z.array(z.string()).optional(),
});
export type ResourceView = z.infer<typeof resourceViewSchema>;

const hostViewSchema = z.object({
  host: z.string(),
  fate: z.enum(HOST_FATES),
  /** The changed resources the host was matched to. */
  resources: z.array(z.string()),
  /** Pins (known_hosts names) the apply retires. */
  pinsRetired: z.array(z.string()),
});
export type HostView = z.infer<typeof hostViewSchema>;

export const planViewSchema = z.object({
  schemaVersion: z.literal(PLAN_VIEW_SCHEMA_VERSION),
  workflowId: z.string(),
  workspace: z.string(),
  fingerprint: z.string(),
  summary: z.object({
    add: z.number().int(),
    change: z.number().int(),
    destroy: z.number().int(),
    replace: z.number().int(),
  }),
  resources: z.array(resourceViewSchema),
  outputs: z.array(z.object({ name: z.string(), action: z.enum(PLAN_ACTIONS), sensitive: z.boolean() })),
  hosts: z.array(hostViewSchema),
  /** The planned inventory is known only after apply: the hosts it creates cannot be named yet. */
  createdHostsUnknown: z.boolean(),
});
export type PlanView = z.infer<typeof planViewSchema>;

/** A host tf:<name> names now, with the pins recorded for its address. */
export interface StandingHost {
  name: string;
  pins: string[];
}

function actionOf(actions: readonly string[]): PlanAction | undefined {
  const action = resourceActionOf(actions);
  return action === 'delete' ? 'destroy' : action;
}

/** `["tags", "Name"]` → `tags["Name"]`; `["disk", 0, "size"]` → `disk[0].size`. */
function pathText(path: ReadonlyArray<string | number>): string {
  return path
    .map((step, i) =>
      typeof step === 'number'
        ? `[${step}]`
        : i === 0
          ? step
          : /^[A-Za-z_][\w-]*$/.test(step)
            ? `.${step}`
            : `[${JSON.stringify(step)}]`,
    )
    .join('');
}

/** The instance keys (`[0]`, `["web-1"]`) and resource names along an address: what a host's name is matched against. */
function namesInAddress(address: string): Set<string> {
  const names = new Set<string>();
  for (const match of address.matchAll(/\["((?:[^"\\]|\\.)*)"\]|\[(\d+)\]/g)) {
    names.add(match[1] !== undefined ? (JSON.parse(`"${match[1]}"`) as string) : match[2]!);
  }
  const resourceName = /(?:^|\.)([^.[\]]+)(?:\[[^\]]*\])?$/.exec(address)?.[1];
  if (resourceName !== undefined) names.add(resourceName);
  return names;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * The view of a plan against the hosts tf:<name> names now. A host belongs to
 * a changed resource when its inventory name is the resource's name or one of
 * the instance keys in its address (`aws_instance.web["web-1"]`,
 * `module.host["web-1"].aws_instance.this`); a host that leaves the planned
 * inventory is destroyed whatever its resources do.
 */
export function buildPlanView(input: {
  plan: PlanJson;
  fingerprint: string;
  workflowId: string;
  workspace: string;
  currentHosts: readonly StandingHost[];
}): PlanView {
  const { plan } = input;
  const resources: ResourceView[] = [];
  for (const r of plan.resource_changes ?? []) {
    const action = actionOf(r.change.actions);
    if (action === undefined) continue;
    const replacePaths = action === 'replace' ? (r.change.replace_paths ?? []).map(pathText) : [];
    resources.push({
      address: r.deposed ? `${r.address} (deposed ${r.deposed})` : r.address,
      module: r.module_address ?? '',
      action,
      ...(r.action_reason ? { reason: r.action_reason } : {}),
      ...(replacePaths.length > 0 ? { replacePaths } : {}),
    });
  }
  resources.sort((a, b) => compare(a.module, b.module) || compare(a.address, b.address));
  const drift = infrastructureDrift(
    plan,
    input.fingerprint,
    input.currentHosts.map((h) => h.name),
  );
  const leaving = new Set(drift.hosts?.leaving ?? []);
  const hosts: HostView[] = input.currentHosts.map((standing) => {
    const touching = resources.filter(
      (r) => (r.action === 'replace' || r.action === 'destroy') && namesInAddress(r.address).has(standing.name),
    );
    const fate: HostFate =
      leaving.has(standing.name) || touching.some((r) => r.action === 'destroy')
        ? 'destroyed'
        : touching.length > 0
          ? 'replaced'
          : 'unchanged';
    return {
      host: standing.name,
      fate,
      resources: touching.map((r) => r.address),
      pinsRetired: fate === 'unchanged' ? [] : [...standing.pins].sort(compare),
    };
  });
  for (const name of drift.hosts?.joining ?? []) {
    const creating = resources.filter(
      (r) => (r.action === 'create' || r.action === 'replace') && namesInAddress(r.address).has(name),
    );
    hosts.push({ host: name, fate: 'created', resources: creating.map((r) => r.address), pinsRetired: [] });
  }
  hosts.sort((a, b) => HOST_FATES.indexOf(a.fate) - HOST_FATES.indexOf(b.fate) || compare(a.host, b.host));
  return {
    schemaVersion: PLAN_VIEW_SCHEMA_VERSION,
    workflowId: input.workflowId,
    workspace: input.workspace,
    fingerprint: input.fingerprint,
    summary: summarizePlan(plan),
    resources,
    outputs: drift.outputs.map((o) => ({ ...o, action: o.action === 'delete' ? 'destroy' : o.action })),
    hosts,
    createdHostsUnknown: drift.hosts === undefined,
  };
}

/** The hosts whose pins the apply of this plan retires (replaced and destroyed hosts). */
export function pinsRetiredBy(view: PlanView): string[] {
  return [...new Set(view.hosts.flatMap((h) => h.pinsRetired))].sort(compare);
}

// ---------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------

const REASONS: Record<string, string> = {
  replace_because_cannot_update: 'an attribute that cannot change in place changed',
  replace_because_tainted: 'the object is tainted',
  replace_by_request: 'replacement was requested (-replace)',
  replace_by_triggers: 'replace_triggered_by fired',
  delete_because_no_resource_config: 'no longer in the configuration',
  delete_because_no_module: 'its module is no longer in the configuration',
  delete_because_wrong_repetition: 'count/for_each was added or removed',
  delete_because_count_index: 'its count index is out of range',
  delete_because_each_key: 'its for_each key is gone',
  delete_because_no_move_target: 'moved to an address that does not exist',
  read_because_config_unknown: 'its configuration is known only after apply',
  read_because_dependency_pending: 'a dependency has pending changes',
};

function why(r: ResourceView): string {
  const reason = r.reason === undefined ? '' : (REASONS[r.reason] ?? r.reason);
  const paths = r.replacePaths?.length ? `forced by ${r.replacePaths.join(', ')}` : '';
  return [reason, paths].filter((part) => part !== '').join('; ');
}

const ACTION_MARK: Record<PlanAction, string> = {
  create: '+',
  update: '~',
  replace: '-/+',
  destroy: '-',
  read: '<=',
};

function describeHost(h: HostView, workspace: string): string {
  const pins = h.pinsRetired.length > 0 ? `; pins retired: ${h.pinsRetired.join(', ')}` : '';
  switch (h.fate) {
    case 'created':
      return 'created: will be onboarded (its host key pinned first)';
    case 'replaced':
      return `replaced: new host key, onboarded again${pins}`;
    case 'destroyed':
      return `destroyed: leaves tf:${workspace}${pins}`;
    case 'unchanged':
      return 'unchanged';
  }
}

function modulesOf(resources: readonly ResourceView[]): Map<string, ResourceView[]> {
  const groups = new Map<string, ResourceView[]>();
  for (const r of resources) {
    const group = groups.get(r.module);
    if (group) group.push(r);
    else groups.set(r.module, [r]);
  }
  return groups;
}

function summaryLine(view: PlanView): string {
  const { add, change, destroy, replace } = view.summary;
  return `${add} to add, ${change} to change, ${destroy} to destroy${replace > 0 ? ` (${replace} replaced)` : ''}`;
}

/** The view for a terminal: every host and every resource, nothing cut. */
export function renderPlanViewText(view: PlanView): string {
  const lines = [`plan for tf:${view.workspace}: ${summaryLine(view)} · fingerprint ${view.fingerprint.slice(0, 16)}`];
  lines.push('', 'hosts');
  if (view.hosts.length === 0) lines.push('  (tf:' + view.workspace + ' names no hosts yet)');
  for (const h of view.hosts) lines.push(`  ${h.host}  ${describeHost(h, view.workspace)}`);
  if (view.createdHostsUnknown)
    lines.push('  (the planned inventory is known only after apply: new hosts cannot be named yet)');
  lines.push('', `resources (${view.resources.length} changed)`);
  for (const [module, group] of modulesOf(view.resources)) {
    lines.push(`  ${module === '' ? 'root module' : module}`);
    for (const r of group) {
      const reason = why(r);
      lines.push(
        `    ${ACTION_MARK[r.action].padEnd(3)} ${r.action.padEnd(7)} ${r.address}${reason ? `  (${reason})` : ''}`,
      );
    }
  }
  if (view.outputs.length > 0) {
    lines.push('', 'outputs');
    for (const o of view.outputs)
      lines.push(
        `    ${ACTION_MARK[o.action].padEnd(3)} ${o.action.padEnd(7)} ${o.name}${o.sensitive ? ' (sensitive)' : ''}`,
      );
  }
  return lines.join('\n');
}

export interface PlanViewMarkdownOptions {
  /** The most characters the rendering may take. */
  limit: number;
  /** Where the whole view is, said when rows had to be left out (a command, an artifact URL). */
  fullView: string;
  /** Fold the resource list in `<details>` from this many resources on (default 20). */
  foldFrom?: number;
}

/** A code span (no HTML or emphasis inside); a table cell still needs its pipes escaped, and a backtick would end it. */
const code = (text: string) => `\`${text.replace(/`/g, "'").replace(/\|/g, '\\|').replace(/\r?\n/g, ' ')}\``;

/** One table whose rows may be cut: the rows that fit are shown, then a line says how many were left out and where they are. */
interface Section {
  head: string[];
  rows: string[];
  tail: string[];
}

/**
 * The view for a job summary, PR comment or MR note: hosts first, then the
 * resources by module (folded when long), cut to `limit` characters with a
 * pointer to the full view. Every value from the plan is escaped.
 */
export function renderPlanViewMarkdown(view: PlanView, options: PlanViewMarkdownOptions): string {
  const fold = view.resources.length >= (options.foldFrom ?? 20);
  const sections: Section[] = [
    {
      head: [
        `**Plan** for \`tf:${escapeMarkdown(view.workspace)}\`: ${summaryLine(view)} · fingerprint \`${view.fingerprint.slice(0, 16)}\``,
        '',
        '| host | what the apply does to it |',
        '| ---- | ------------------------- |',
      ],
      rows: view.hosts.map((h) => `| ${code(h.host)} | ${escapeMarkdown(describeHost(h, view.workspace))} |`),
      tail: view.createdHostsUnknown
        ? ['', '_The planned inventory is known only after apply: the hosts it creates cannot be named yet._']
        : [],
    },
  ];
  const groups = [...modulesOf(view.resources)];
  groups.forEach(([module, group], i) => {
    sections.push({
      head: [
        ...(i === 0
          ? ['', ...(fold ? [`<details><summary>${view.resources.length} changed resources</summary>`, ''] : [])]
          : ['']),
        `${module === '' ? 'Root module' : code(module)} (${group.length})`,
        '',
        '| action | address | why |',
        '| ------ | ------- | --- |',
      ],
      rows: group.map((r) => `| ${r.action} | ${code(r.address)} | ${escapeMarkdown(why(r))} |`),
      tail: fold && i === groups.length - 1 ? ['', '</details>'] : [],
    });
  });
  if (view.outputs.length > 0) {
    sections.push({
      head: ['', 'Outputs', '', '| action | output |', '| ------ | ------ |'],
      rows: view.outputs.map((o) => `| ${o.action} | ${code(o.name)}${o.sensitive ? ' (sensitive)' : ''} |`),
      tail: [],
    });
  }
  return cutSections(sections, options);
}

function cutSections(sections: readonly Section[], options: PlanViewMarkdownOptions): string {
  const out: string[] = [];
  let size = 0;
  const add = (line: string) => {
    out.push(line);
    size += line.length + 1;
  };
  const notice = (left: number) =>
    `\n_… ${left} more row(s) not shown here to stay within the size limit; the full view: ${options.fullView}_`;
  // Room kept for the cut notice and the lines that close an open fold.
  const reserve = notice(Number.MAX_SAFE_INTEGER).length + 64;
  for (const [i, section] of sections.entries()) {
    section.head.forEach(add);
    for (const [j, row] of section.rows.entries()) {
      if (size + row.length + 1 > options.limit - reserve) {
        const left = section.rows.length - j + sections.slice(i + 1).reduce((n, s) => n + s.rows.length, 0);
        add(notice(left));
        if (sections.slice(0, i + 1).some((s) => s.head.some((l) => l.startsWith('<details>')))) add('\n</details>');
        return out.join('\n');
      }
      add(row);
    }
    section.tail.forEach(add);
  }
  return out.join('\n');
}
