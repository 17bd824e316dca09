/**
 * The destroy guard (issue 27 item 2, issue 36 item 4): a plan that destroys or
 * replaces hosts, destroys more resources than the workspace allows, or touches
 * a protected address is refused after the plan and before any approval can
 * bind it or any apply runs it, unless the run says `allow-destroy` (protected
 * addresses: not even then). The policy is one small YAML file in the
 * workspace, checked with zod. */
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { ExocompError } from './errors.js';
import type { PlanView } from './plan-view.js';

/** Where the policy lives, relative to the workspace directory. */
export const POLICY_FILE = '.exocomp/policy.yml';

export const destroyPolicySchema = z.strictObject({
  /** The workspace may destroy and replace hosts without the run's `allow-destroy` (e.g. throwaway environments). */
  'allow-destroy': z.boolean().default(false),
  /** Address patterns no plan may change: `*` matches any run of characters; a pattern also covers what is under it (`module.db`). */
  protect: z.array(z.string().min(1)).default([]),
  /** More destroyed (or replaced) resources than this need `allow-destroy`. */
  'max-destroy': z.number().int().nonnegative().optional(),
});
export type DestroyPolicy = z.infer<typeof destroyPolicySchema>;

export const DEFAULT_POLICY: DestroyPolicy = { 'allow-destroy': false, protect: [] };

const POLICY_HELP = `${POLICY_FILE} holds allow-destroy (true/false), protect (a list of address patterns) and max-destroy (a whole number)`;

/** The policy from the file's text; undefined text (no file) is the default policy. */
export function parseDestroyPolicy(text: string | undefined): DestroyPolicy {
  if (text === undefined) return DEFAULT_POLICY;
  let data: unknown;
  try {
    data = parseYaml(text) ?? {};
  } catch (error) {
    throw new ExocompError('usage', `${POLICY_FILE} is not valid YAML: ${(error as Error).message.split('\n')[0]}`, {
      help: POLICY_HELP,
    });
  }
  const parsed = destroyPolicySchema.safeParse(data);
  if (!parsed.success) {
    const where = parsed.error.issues
      .map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`)
      .join('; ');
    throw new ExocompError('usage', `${POLICY_FILE} is not a valid policy (${where})`, { help: POLICY_HELP });
  }
  return parsed.data;
}

/** A protect pattern as a test on addresses: `*` is a wildcard, the rest literal; `module.db` also covers `module.db.x`. */
export function addressMatcher(pattern: string): (address: string) => boolean {
  const literal = pattern
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  const regex = new RegExp(`^${literal}(?:$|[.[])`);
  return (address) => regex.test(address);
}

export interface Offence {
  address: string;
  why: string;
}

export type GuardVerdict = { allowed: true } | { allowed: false; offences: Offence[]; help: string };

/** What a run adds to the workspace's policy: `allow-destroy`, and protect patterns of its own (they only add protection). */
export interface RunGuard {
  allowDestroy: boolean;
  protect?: readonly string[];
}

/** Judges a plan view against the policy and the run's `allow-destroy` and `protect`. */
export function judgeDestroy(view: PlanView, policy: DestroyPolicy, run: RunGuard): GuardVerdict {
  const allowDestroy = run.allowDestroy || policy['allow-destroy'];
  const offences: Offence[] = [];
  const patterns = [...new Set([...policy.protect, ...(run.protect ?? [])])];
  const matchers = patterns.map((pattern) => ({ pattern, matches: addressMatcher(pattern) }));
  for (const r of view.resources) {
    if (r.action === 'read') continue;
    const protectedBy = matchers.find((m) => m.matches(r.address));
    if (protectedBy)
      offences.push({ address: r.address, why: `${r.action} of an address protected by "${protectedBy.pattern}"` });
  }
  const protectedOnly = offences.length;
  if (!allowDestroy) {
    for (const h of view.hosts) {
      if (h.fate !== 'replaced' && h.fate !== 'destroyed') continue;
      const what = `host ${h.host} ${h.fate}`;
      if (h.resources.length === 0) offences.push({ address: `(inventory) ${h.host}`, why: what });
      for (const address of h.resources) offences.push({ address, why: what });
    }
    const destroyed = view.resources.filter((r) => r.action === 'destroy' || r.action === 'replace');
    const max = policy['max-destroy'];
    if (max !== undefined && destroyed.length > max) {
      const named = new Set(offences.map((o) => o.address));
      for (const r of destroyed) {
        if (!named.has(r.address))
          offences.push({
            address: r.address,
            why: `${r.action}: ${destroyed.length} resources destroyed, max-destroy is ${max}`,
          });
      }
    }
  }
  if (offences.length === 0) return { allowed: true };
  const help =
    protectedOnly === offences.length
      ? `a protected address changes only after ${POLICY_FILE} (a reviewed commit) and the run's protect list stop protecting it`
      : `if these are meant, run again (or resume the workflow) with allow-destroy (the \`allow-destroy\` input, or --allow-destroy)${protectedOnly > 0 ? `, and stop protecting the protected addresses in ${POLICY_FILE}` : ''}`;
  return { allowed: false, offences, help };
}

/** Where the guard stopped a plan: before it was recorded for approval, or before it was applied. */
export type GuardStage = 'approval' | 'apply';

/**
 * The refusal, naming every offending address and saying that nothing was recorded or applied. Refused at the apply,
 * its first line (what a failed step records as its summary) also says what to do.
 */
export function destroyRefusal(
  workspace: string,
  verdict: Extract<GuardVerdict, { allowed: false }>,
  stage: GuardStage,
): ExocompError {
  const lines = verdict.offences.map((o) => `  ${o.address}: ${o.why}`).join('\n');
  const refused = `the plan of tf:${workspace} is refused by the destroy guard (${verdict.offences.length} address(es))`;
  const headline = stage === 'approval' ? refused : `${refused}, nothing was applied; ${verdict.help}`;
  const nothing = stage === 'approval' ? 'nothing was recorded for approval' : 'nothing was applied';
  return new ExocompError('approval', `${headline}:\n${lines}`, {
    help: `${nothing}; ${verdict.help}`,
    detail: lines,
  });
}
