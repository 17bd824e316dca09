import { describe, expect, it } from 'vitest';
import {
  SENSITIVE_PLACEHOLDER,
  canonicalJson,
  planFingerprint,
  planHasChanges,
  planJsonSchema,
  sensitiveStringsInPlan,
  summarizePlan,
  type PlanJson,
} from '../../src/domain/plan.js';

type ResourceChange = NonNullable<PlanJson['resource_changes']>[number];

function resource(address: string, actions: string[], extra: Partial<ResourceChange['change']> = {}): ResourceChange {
  return {
    address,
    mode: 'managed',
    type: 'terraform_data',
    name: address.split('.').pop(),
    provider_name: 'terraform.io/builtin/terraform',
    change: {
      actions,
      before: null,
      after: null,
      after_unknown: {},
      before_sensitive: false,
      after_sensitive: false,
      ...extra,
    },
  };
}

/** A plan shaped like `tofu show -json` prints it for a workspace with a web host and a secret. */
function samplePlan(overrides: { webIp?: string; password?: string; dbOutput?: string } = {}): PlanJson {
  return planJsonSchema.parse({
    format_version: '1.2',
    terraform_version: '1.8.0',
    resource_changes: [
      resource('terraform_data.web', ['create'], {
        after: { input: { ip: overrides.webIp ?? '127.0.0.2', port: 22 }, triggers_replace: null },
        after_unknown: { id: true, output: true },
        after_sensitive: { input: {} },
      }),
      resource('terraform_data.db', ['update'], {
        before: { input: { password: 'old-secret-value', size: 'small' }, id: 'abc' },
        after: { input: { password: overrides.password ?? 'new-secret-value', size: 'large' }, id: 'abc' },
        before_sensitive: { input: { password: true } },
        after_sensitive: { input: { password: true } },
      }),
      resource('terraform_data.unchanged', ['no-op'], { before: { id: 'x' }, after: { id: 'x' } }),
    ],
    output_changes: {
      web_ip: {
        actions: ['create'],
        before: null,
        after: overrides.webIp ?? '127.0.0.2',
        after_unknown: false,
        before_sensitive: false,
        after_sensitive: false,
      },
      db_password: {
        actions: ['update'],
        before: 'old-secret-value',
        after: overrides.dbOutput ?? 'new-secret-value',
        after_unknown: false,
        before_sensitive: true,
        after_sensitive: true,
      },
    },
  });
}

/** Rebuilds a value with object keys in reverse order at every level. */
function reverseKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reverseKeys);
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(
      Object.entries(value)
        .reverse()
        .map(([k, v]) => [k, reverseKeys(v)]),
    );
  }
  return value;
}

describe('summarizePlan', () => {
  it('counts create, update, delete and replacements like the Plan: line', () => {
    const plan = planJsonSchema.parse({
      format_version: '1.2',
      resource_changes: [
        resource('a.one', ['create']),
        resource('a.two', ['create']),
        resource('b.one', ['update']),
        resource('c.one', ['delete']),
        resource('d.one', ['delete', 'create']),
        resource('d.two', ['create', 'delete']),
        resource('e.one', ['no-op']),
        resource('f.one', ['read']),
      ],
    });
    expect(summarizePlan(plan)).toEqual({ add: 4, change: 1, destroy: 3, replace: 2 });
  });

  it('is all zeros for a plan without resource changes', () => {
    const plan = planJsonSchema.parse({ format_version: '1.2' });
    expect(summarizePlan(plan)).toEqual({ add: 0, change: 0, destroy: 0, replace: 0 });
    expect(planHasChanges(plan)).toBe(false);
  });

  it('sees output-only changes as changes', () => {
    const plan = planJsonSchema.parse({
      format_version: '1.2',
      resource_changes: [resource('e.one', ['no-op'])],
      output_changes: { x: { actions: ['create'], after: 1 } },
    });
    expect(planHasChanges(plan)).toBe(true);
  });
});

describe('planJsonSchema', () => {
  it('rejects a resource change without actions', () => {
    const result = planJsonSchema.safeParse({
      format_version: '1.2',
      resource_changes: [{ address: 'a.b', change: { before: null } }],
    });
    expect(result.success).toBe(false);
  });
});

describe('planFingerprint', () => {
  it('is a sha256 hex digest', () => {
    expect(planFingerprint(samplePlan())).toMatch(/^[0-9a-f]{64}$/);
  });

  it('is the same for the same plan whatever the key order and resource order', () => {
    const plan = samplePlan();
    const shuffled = reverseKeys(plan) as PlanJson;
    shuffled.resource_changes = [...(shuffled.resource_changes ?? [])].reverse();
    expect(JSON.stringify(shuffled)).not.toBe(JSON.stringify(plan));
    expect(planFingerprint(shuffled)).toBe(planFingerprint(plan));
  });

  it('changes when a non-sensitive attribute changes', () => {
    expect(planFingerprint(samplePlan({ webIp: '127.0.0.3' }))).not.toBe(planFingerprint(samplePlan()));
  });

  it('changes when the actions change', () => {
    const replaced = samplePlan();
    const web = replaced.resource_changes?.[0];
    if (!web) throw new Error('sample plan has no resources');
    web.change.actions = ['delete', 'create'];
    expect(planFingerprint(replaced)).not.toBe(planFingerprint(samplePlan()));
  });

  it('ignores no-op entries', () => {
    const plan = samplePlan();
    plan.resource_changes = plan.resource_changes?.filter((r) => r.address !== 'terraform_data.unchanged');
    expect(planFingerprint(plan)).toBe(planFingerprint(samplePlan()));
  });

  // Documented limitation: sensitive values never enter the hash, so a plan that
  // differs from the approved one only in a sensitive value cannot be told apart.
  it('does NOT change when only a sensitive value changes (sensitive values are left out)', () => {
    const base = planFingerprint(samplePlan());
    expect(planFingerprint(samplePlan({ password: 'another-secret' }))).toBe(base);
    expect(planFingerprint(samplePlan({ dbOutput: 'another-secret' }))).toBe(base);
  });

  it('still changes when a non-sensitive attribute beside a sensitive one changes', () => {
    const plan = samplePlan();
    const db = plan.resource_changes?.[1];
    if (!db) throw new Error('sample plan has no db resource');
    db.change.after = { input: { password: 'new-secret-value', size: 'medium' }, id: 'abc' };
    expect(planFingerprint(plan)).not.toBe(planFingerprint(samplePlan()));
  });

  it('masks wholly sensitive values and sensitive list elements', () => {
    const plan = (whole: string, listSecret: string, listPublic: string) =>
      planJsonSchema.parse({
        format_version: '1.2',
        resource_changes: [
          resource('a.whole', ['create'], { after: { secret: whole }, after_sensitive: true }),
          resource('a.list', ['create'], {
            after: { keys: [listSecret, listPublic] },
            after_sensitive: { keys: [true, false] },
          }),
        ],
      });
    const base = planFingerprint(plan('one', 'k1', 'public'));
    expect(planFingerprint(plan('two', 'k2', 'public'))).toBe(base);
    expect(planFingerprint(plan('one', 'k1', 'other'))).not.toBe(base);
  });
});

describe('sensitiveStringsInPlan', () => {
  it('finds the values at sensitive positions and nothing else', () => {
    const found = sensitiveStringsInPlan(samplePlan());
    expect(found).toEqual(expect.arrayContaining(['old-secret-value', 'new-secret-value']));
    expect(found).not.toContain('127.0.0.2');
    expect(found).not.toContain('small');
    expect(found).not.toContain(SENSITIVE_PLACEHOLDER);
  });

  it('finds the values of input variables declared sensitive', () => {
    const plan = planJsonSchema.parse({
      format_version: '1.2',
      variables: { db_password: { value: 'variable-secret' }, region: { value: 'loopback-1' } },
      configuration: { root_module: { variables: { db_password: { sensitive: true }, region: {} } } },
    });
    expect(sensitiveStringsInPlan(plan)).toEqual(['variable-secret']);
  });
});

describe('canonicalJson', () => {
  it('sorts keys at every level and keeps array order', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, 1], c: null } })).toBe('{"a":{"c":null,"d":[2,1]},"b":1}');
  });
});
