/**
 * Issue 36, item 6: the stand-in cannot drift from the tool. One workspace
 * (inside the stand-in's configuration subset: terraform_data with input and
 * triggers_replace, a sensitive variable and output) is planned, applied,
 * changed (a replacement, an in-place update, a removed resource) and applied
 * again, by the stand-in and by the real OpenTofu/Terraform on PATH, with the
 * product's own flags. What the product reads must be equal: exit codes of
 * `plan -detailed-exitcode`, apply and `state pull`; `show -json` of the plan
 * (the fields planJsonSchema reads); `output -json`; `state pull`'s lineage (a
 * UUID, kept across applies) and serial (moved by each apply, by nothing
 * else). Random ids are compared as "a UUID".
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runProcess } from '../../src/adapters/process.js';
import { describeWithRealTofu, requireRealTofu } from '../support/real-tofu.js';
import { standinPath } from '../support/tofu-standin.js';
import { scaled } from '../support/time.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Stage 1: web1 and web2 and the inventory; stage 2: web1 replaced, web2 removed, the inventory updated in place. */
function workspaceFiles(stage: 1 | 2) {
  const web = stage === 1 ? { web1: { input: 'web1', triggers_replace: 'img-1' }, web2: { input: 'web2' } } : {};
  return {
    'main.tf.json': {
      variable: {
        ansible_inventory: { type: 'any' },
        db_password: { type: 'string', sensitive: true, default: 'contract-only-password' },
      },
      resource: {
        terraform_data: {
          hosts: { input: '${var.ansible_inventory}' },
          ...web,
          ...(stage === 2 ? { web1: { input: 'web1', triggers_replace: 'img-2' } } : {}),
        },
      },
      output: {
        ansible_inventory: { value: '${terraform_data.hosts.output}' },
        db_password: { value: '${var.db_password}', sensitive: true },
      },
    },
    'exocomp.auto.tfvars.json': {
      ansible_inventory: { all: { hosts: { web1: { ansible_host: '127.0.9.1', rack: stage === 1 ? 'a1' : 'b2' } } } },
    },
  };
}

/** Every UUID (terraform_data ids, lineage) as "<uuid>": random on each run, equal in kind. */
function withoutIds(value: unknown): unknown {
  if (typeof value === 'string') return UUID.test(value) ? '<uuid>' : value;
  if (Array.isArray(value)) return value.map(withoutIds);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withoutIds(v)]));
  }
  return value;
}

function pick<T extends object>(object: T, keys: readonly string[]): Partial<T> {
  return Object.fromEntries(Object.entries(object).filter(([key]) => keys.includes(key))) as Partial<T>;
}

const CHANGE_FIELDS = [
  'actions',
  'before',
  'after',
  'after_unknown',
  'before_sensitive',
  'after_sensitive',
  'replace_paths',
];

/** The parts of `show -json PLAN` that planJsonSchema reads. */
function planReading(text: string) {
  const plan = JSON.parse(text) as {
    format_version: string;
    resource_changes?: Array<Record<string, unknown> & { address: string; change: object }>;
    output_changes?: Record<string, object>;
    variables?: Record<string, { value?: unknown }>;
    configuration?: { root_module?: { variables?: Record<string, { sensitive?: boolean }> } };
  };
  return withoutIds({
    format_version: plan.format_version,
    resource_changes: (plan.resource_changes ?? [])
      .sort((a, b) => (a.address < b.address ? -1 : 1))
      .map((r) => ({
        ...pick(r, ['address', 'module_address', 'deposed', 'action_reason']),
        change: pick(r.change, CHANGE_FIELDS),
      })),
    output_changes: Object.fromEntries(
      Object.entries(plan.output_changes ?? {}).map(([name, change]) => [name, pick(change, CHANGE_FIELDS)]),
    ),
    variables: plan.variables,
    sensitiveVariables: Object.entries(plan.configuration?.root_module?.variables ?? {})
      .filter(([, v]) => v.sensitive === true)
      .map(([name]) => name),
  });
}

/** What the product reads of each step, in order, from one binary. */
async function readingsOf(binary: string, dir: string): Promise<unknown[]> {
  await mkdir(dir, { recursive: true });
  const tofu = async (args: string[]) => {
    const result = await runProcess(binary, args, {
      cwd: dir,
      env: { ...process.env, TF_IN_AUTOMATION: '1', TF_INPUT: '0' },
      timeoutMs: scaled(60_000),
    });
    return { code: result.code, stdout: result.stdout };
  };
  const write = async (stage: 1 | 2) => {
    for (const [name, content] of Object.entries(workspaceFiles(stage))) {
      await writeFile(join(dir, name), JSON.stringify(content, null, 2));
    }
  };
  const readings: unknown[] = [];
  const lineages = new Set<string>();
  let lastSerial: number | undefined;
  const statePull = async (step: string) => {
    const pulled = await tofu(['state', 'pull']);
    const state = pulled.stdout.trim() === '' ? undefined : (JSON.parse(pulled.stdout) as Record<string, unknown>);
    if (typeof state?.lineage === 'string') lineages.add(state.lineage);
    const serial = state?.serial;
    // How far a serial moves is the tool's own (Terraform 1.11 persists the state after each resource of an apply:
    // serial 4 after creating three); what the product relies on is that it moves with each change, and only then.
    const serialMoved =
      typeof serial !== 'number' || !Number.isInteger(serial) || serial < 0
        ? 'not a serial'
        : lastSerial === undefined
          ? 'first'
          : serial > lastSerial
            ? 'increased'
            : serial === lastSerial
              ? 'unchanged'
              : 'decreased';
    if (typeof serial === 'number') lastSerial = serial;
    readings.push({ step, code: pulled.code, state: state && { serialMoved, lineage: withoutIds(state.lineage) } });
  };
  const planAndApply = async (step: string) => {
    const plan = await tofu(['plan', '-input=false', '-no-color', '-json', '-detailed-exitcode', '-out=tfplan']);
    readings.push({ step: `${step}: plan -detailed-exitcode`, code: plan.code });
    const shown = await tofu(['show', '-json', 'tfplan']);
    readings.push({ step: `${step}: show -json`, code: shown.code, plan: planReading(shown.stdout) });
    const applied = await tofu(['apply', '-input=false', '-no-color', '-json', 'tfplan']);
    readings.push({ step: `${step}: apply`, code: applied.code });
    const outputs = await tofu(['output', '-json']);
    readings.push({ step: `${step}: output -json`, code: outputs.code, outputs: JSON.parse(outputs.stdout) });
    await statePull(`${step}: state pull`);
  };

  await write(1);
  readings.push({ step: 'init', code: (await tofu(['init', '-input=false', '-no-color'])).code });
  await statePull('state pull before any apply');
  await planAndApply('stage 1');
  const unchanged = await tofu(['plan', '-input=false', '-no-color', '-json', '-detailed-exitcode', '-out=tfplan']);
  readings.push({ step: 'plan -detailed-exitcode without changes', code: unchanged.code });
  await statePull('state pull after a plan without changes');
  await write(2);
  await planAndApply('stage 2');
  readings.push({ step: 'one lineage across applies', lineages: lineages.size });
  return readings;
}

describeWithRealTofu('the stand-in reads as the real binary does', () => {
  let root: string;
  let real: unknown[];
  let standin: unknown[];

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'exocomp-standin-contract-'));
    [real, standin] = await Promise.all([
      readingsOf(requireRealTofu(), join(root, 'real')),
      readingsOf(standinPath, join(root, 'standin')),
    ]);
  });
  afterAll(() => rm(root, { recursive: true, force: true }));

  it('the real binary went where the product expects: changes, none, a replacement and a removal', () => {
    const codes = (real as Array<{ step: string; code?: number }>).map((r) => [r.step, r.code]);
    expect(codes).toContainEqual(['stage 1: plan -detailed-exitcode', 2]);
    expect(codes).toContainEqual(['plan -detailed-exitcode without changes', 0]);
    expect(codes).toContainEqual(['stage 2: plan -detailed-exitcode', 2]);
    expect(JSON.stringify(real)).toContain('delete_because_no_resource_config');
    expect(JSON.stringify(real)).toContain('"actions":["delete","create"]');
  });

  it('every reading of the stand-in equals the real binary’s', () => {
    expect(standin).toEqual(real);
  });
});
