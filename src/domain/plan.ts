import { createHash } from 'node:crypto';
import { z } from 'zod';

/**
 * The part of `tofu show -json <planfile>` this project reads. Unknown fields are
 * kept (loose objects) so newer OpenTofu/Terraform releases still parse.
 * `*_sensitive` mirror the shape of the value: `true` marks a sensitive subtree,
 * objects/arrays descend, anything else (false, missing) means not sensitive.
 */
const changeSchema = z.looseObject({
  actions: z.array(z.string()).min(1),
  before: z.unknown().optional(),
  after: z.unknown().optional(),
  after_unknown: z.unknown().optional(),
  before_sensitive: z.unknown().optional(),
  after_sensitive: z.unknown().optional(),
  /** Attribute paths (names and keys, never values) whose change forces a replacement. */
  replace_paths: z.array(z.array(z.union([z.string(), z.number()]))).optional(),
});

export const planJsonSchema = z.looseObject({
  format_version: z.string(),
  resource_changes: z
    .array(
      z.looseObject({
        address: z.string(),
        /** Absent for the root module. */
        module_address: z.string().optional(),
        deposed: z.string().optional(),
        change: changeSchema,
        /** Why the action was chosen (`replace_because_cannot_update`, `delete_because_no_resource_config`, …). */
        action_reason: z.string().optional(),
      }),
    )
    .optional(),
  output_changes: z.record(z.string(), changeSchema).optional(),
  /** Input variable values, sensitive ones in clear; `configuration` says which are sensitive. */
  variables: z.record(z.string(), z.looseObject({ value: z.unknown().optional() })).optional(),
  configuration: z
    .looseObject({
      root_module: z
        .looseObject({
          variables: z.record(z.string(), z.looseObject({ sensitive: z.boolean().optional() })).optional(),
        })
        .optional(),
    })
    .optional(),
});

export type PlanJson = z.infer<typeof planJsonSchema>;

export interface PlanSummary {
  add: number;
  change: number;
  destroy: number;
  /** Replacements, also counted in `add` and `destroy` (as tofu's "Plan:" line does). */
  replace: number;
}

/** Counts resource changes the way tofu's `Plan: N to add, N to change, N to destroy.` line does. */
export function summarizePlan(plan: PlanJson): PlanSummary {
  const summary: PlanSummary = { add: 0, change: 0, destroy: 0, replace: 0 };
  for (const { change } of plan.resource_changes ?? []) {
    const actions = change.actions;
    if (actions.includes('create') && actions.includes('delete')) {
      summary.replace += 1;
      summary.add += 1;
      summary.destroy += 1;
    } else if (actions.includes('create')) {
      summary.add += 1;
    } else if (actions.includes('update')) {
      summary.change += 1;
    } else if (actions.includes('delete')) {
      summary.destroy += 1;
    }
  }
  return summary;
}

/** True when applying the plan would change resources or outputs. */
export function planHasChanges(plan: PlanJson): boolean {
  const changes = [...(plan.resource_changes ?? []).map((r) => r.change), ...Object.values(plan.output_changes ?? {})];
  return changes.some((c) => !isNoop(c.actions));
}

export const SENSITIVE_PLACEHOLDER = '(sensitive)';

/**
 * A sha256 over the normalized plan: resource changes (address, deposed key,
 * actions, before, after, after_unknown) and output changes, with every value
 * marked sensitive replaced by a fixed placeholder and sensitive outputs' values
 * left out, serialized as canonical JSON (sorted keys, entries sorted by address).
 * No-op entries are left out: they say nothing about what an apply would do.
 *
 * Limitation, by design: because sensitive values never enter the hash (the hash
 * is recorded in the ledger and shown to approvers), a plan that differs from the
 * approved one ONLY in a sensitive value has the same fingerprint.
 */
export function planFingerprint(plan: PlanJson): string {
  const resources = (plan.resource_changes ?? [])
    .filter((r) => !isNoop(r.change.actions))
    .map((r) => ({
      address: r.address,
      deposed: r.deposed ?? null,
      actions: r.change.actions,
      before: maskSensitive(r.change.before ?? null, r.change.before_sensitive),
      after: maskSensitive(r.change.after ?? null, r.change.after_sensitive),
      after_unknown: r.change.after_unknown ?? null,
    }))
    .sort((a, b) => compare(`${a.address} ${a.deposed ?? ''}`, `${b.address} ${b.deposed ?? ''}`));
  const outputs = Object.entries(plan.output_changes ?? {})
    .filter(([, c]) => !isNoop(c.actions))
    .map(([name, c]) => {
      const sensitive = containsSensitiveMark(c.before_sensitive) || containsSensitiveMark(c.after_sensitive);
      return sensitive
        ? { name, actions: c.actions, sensitive: true }
        : {
            name,
            actions: c.actions,
            before: c.before ?? null,
            after: c.after ?? null,
            after_unknown: c.after_unknown ?? null,
          };
    })
    .sort((a, b) => compare(a.name, b.name));
  return createHash('sha256').update(canonicalJson({ resources, outputs })).digest('hex');
}

/**
 * Every string found at a position marked sensitive, and the values of sensitive
 * input variables, so a driver can redact them from logs and error messages even
 * before the apply reveals them as outputs.
 */
export function sensitiveStringsInPlan(plan: PlanJson): string[] {
  const found: string[] = [];
  for (const [name, declaration] of Object.entries(plan.configuration?.root_module?.variables ?? {})) {
    if (declaration.sensitive === true) collectStrings(plan.variables?.[name]?.value, found);
  }
  const changes = [...(plan.resource_changes ?? []).map((r) => r.change), ...Object.values(plan.output_changes ?? {})];
  for (const c of changes) {
    collectSensitive(c.before, c.before_sensitive, found);
    collectSensitive(c.after, c.after_sensitive, found);
  }
  return found;
}

function isNoop(actions: readonly string[]): boolean {
  return actions.every((a) => a === 'no-op');
}

function maskSensitive(value: unknown, marks: unknown): unknown {
  if (marks === true) return SENSITIVE_PLACEHOLDER;
  if (Array.isArray(marks) && Array.isArray(value)) {
    return value.map((item, i) => maskSensitive(item, marks[i]));
  }
  if (isPlainObject(marks) && isPlainObject(value)) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, maskSensitive(v, marks[k])]));
  }
  return value;
}

function containsSensitiveMark(marks: unknown): boolean {
  if (marks === true) return true;
  if (Array.isArray(marks)) return marks.some(containsSensitiveMark);
  if (isPlainObject(marks)) return Object.values(marks).some(containsSensitiveMark);
  return false;
}

function collectSensitive(value: unknown, marks: unknown, into: string[]): void {
  if (marks === true) {
    collectStrings(value, into);
  } else if (Array.isArray(marks) && Array.isArray(value)) {
    value.forEach((item, i) => collectSensitive(item, marks[i], into));
  } else if (isPlainObject(marks) && isPlainObject(value)) {
    for (const [k, v] of Object.entries(value)) collectSensitive(v, marks[k], into);
  }
}

/** The string forms a sensitive value can take in logs: its leaves, and its JSON when not a string. */
export function collectStrings(value: unknown, into: string[]): void {
  if (value === null || value === undefined) return;
  if (typeof value === 'string') {
    into.push(value);
    return;
  }
  if (typeof value === 'object') {
    into.push(JSON.stringify(value));
    for (const v of Object.values(value)) collectStrings(v, into);
    return;
  }
  // Booleans would redact every "true" in a log and hide nothing worth hiding.
  if (typeof value === 'number' || typeof value === 'bigint') into.push(String(value));
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** JSON with object keys sorted at every level, so equal values serialize identically. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (isPlainObject(value)) {
    return Object.fromEntries(
      Object.keys(value)
        .sort(compare)
        .map((k) => [k, sortKeys(value[k])]),
    );
  }
  return value;
}
