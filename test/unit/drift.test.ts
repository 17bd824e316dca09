import { describe, expect, it } from 'vitest';
import {
  configurationDrift,
  configurationFingerprint,
  driftExitCode,
  driftHeadline,
  driftVerdict,
  infrastructureDrift,
  type ConfigurationFacts,
  type DriftReport,
  type TaskResult,
} from '../../src/domain/drift.js';
import {
  escapeMarkdown,
  MAX_DIFF_LINES,
  MAX_MARKDOWN_LENGTH,
  renderDriftMarkdown,
  renderDriftText,
} from '../../src/domain/drift-render.js';
import { planJsonSchema, type PlanJson } from '../../src/domain/plan.js';

const plan = (extra: Partial<PlanJson>): PlanJson => planJsonSchema.parse({ format_version: '1.2', ...extra });
const change = (actions: string[], more: Record<string, unknown> = {}) => ({ actions, ...more });
const inventoryOf = (...hosts: string[]) => ({
  all: { hosts: Object.fromEntries(hosts.map((h) => [h, { ansible_host: '127.0.0.2' }])) },
});

describe('infrastructureDrift', () => {
  it('lists resources to add, change, destroy and replace by address, and skips no-ops and reads of nothing', () => {
    const infra = infrastructureDrift(
      plan({
        resource_changes: [
          { address: 'terraform_data.web', change: change(['update']) },
          { address: 'terraform_data.db', change: change(['no-op']) },
          { address: 'terraform_data.new', change: change(['create']) },
          { address: 'terraform_data.old', change: change(['delete']) },
          { address: 'terraform_data.swap', change: change(['delete', 'create']) },
          { address: 'terraform_data.gone', deposed: 'abcd1234', change: change(['delete']) },
        ],
      }),
      'f'.repeat(64),
      ['web1'],
    );
    expect(infra.resources).toEqual([
      { address: 'terraform_data.gone (deposed abcd1234)', action: 'delete' },
      { address: 'terraform_data.new', action: 'create' },
      { address: 'terraform_data.old', action: 'delete' },
      { address: 'terraform_data.swap', action: 'replace' },
      { address: 'terraform_data.web', action: 'update' },
    ]);
    expect(infra.outputs).toEqual([]);
    expect(infra.hosts).toEqual({ joining: [], leaving: [] });
  });

  it('names outputs that change, marking sensitive ones, and hosts joining and leaving tf:<name>', () => {
    const infra = infrastructureDrift(
      plan({
        output_changes: {
          ansible_inventory: change(['update'], {
            before: inventoryOf('web1', 'web2'),
            after: inventoryOf('web2', 'web3'),
            after_unknown: false,
          }),
          db_password: change(['update'], { before: 'a', after: 'b', after_sensitive: true }),
          region: change(['no-op'], { before: 'eu', after: 'eu' }),
        },
      }),
      'f'.repeat(64),
      ['web1', 'web2'],
    );
    expect(infra.outputs).toEqual([
      { name: 'ansible_inventory', action: 'update', sensitive: false },
      { name: 'db_password', action: 'update', sensitive: true },
    ]);
    expect(infra.hosts).toEqual({ joining: ['web3'], leaving: ['web1'] });
  });

  it('says the hosts are unknown when the inventory is known only after apply, and all leave when it is deleted', () => {
    const unknown = infrastructureDrift(
      plan({
        output_changes: {
          ansible_inventory: change(['update'], {
            after_unknown: { all: { hosts: { web3: { ansible_host: true } } } },
          }),
        },
      }),
      'f',
      ['web1'],
    );
    expect(unknown.hosts).toBeUndefined();
    const deleted = infrastructureDrift(plan({ output_changes: { ansible_inventory: change(['delete']) } }), 'f', [
      'web2',
      'web1',
    ]);
    expect(deleted.hosts).toEqual({ joining: [], leaving: ['web1', 'web2'] });
  });
});

const facts = (results: TaskResult[], more: Partial<ConfigurationFacts> = {}): ConfigurationFacts => ({
  checkedHosts: ['web1', 'web2'],
  results,
  keyMismatches: [],
  unreachableBeforePlay: [],
  ...more,
});

describe('configurationDrift', () => {
  it('groups changed tasks and diffs per host, and lists unreachable hosts, key mismatches and failed tasks', () => {
    const config = configurationDrift(
      facts(
        [
          { host: 'web2', task: 'Write motd', status: 'changed', diff: '--- before\n+++ after\n-a\n+b\n' },
          { host: 'web1', task: 'Write motd', status: 'ok' },
          { host: 'web2', task: 'Restart', status: 'changed' },
          { host: 'web1', task: 'Probe', status: 'failed', msg: 'boom\nmore lines' },
          { host: 'web1', task: 'Tolerated', status: 'failed', msg: 'meh', ignored: true },
          { host: 'web3', task: 'Gathering', status: 'unreachable', msg: 'Failed to connect' },
          { host: 'web3', task: 'Again', status: 'unreachable', msg: 'second message' },
        ],
        {
          checkedHosts: ['web1', 'web2', 'web3'],
          keyMismatches: [{ host: 'db1', detail: '[127.0.0.9]:2222' }],
          unreachableBeforePlay: [{ host: 'db2', detail: 'no host key could be scanned' }],
        },
      ),
    );
    expect(config.hostCount).toBe(5);
    expect(config.changed).toEqual([
      {
        host: 'web2',
        tasks: [
          { task: 'Write motd', diff: '--- before\n+++ after\n-a\n+b\n' },
          { task: 'Restart', diff: '' },
        ],
      },
    ]);
    expect(config.unreachable).toEqual([
      { host: 'db2', detail: 'no host key could be scanned' },
      { host: 'web3', detail: 'Failed to connect' },
    ]);
    expect(config.keyMismatches).toEqual([{ host: 'db1', detail: '[127.0.0.9]:2222' }]);
    expect(config.failed).toEqual([{ host: 'web1', task: 'Probe', detail: 'boom' }]);
  });

  it('fingerprints what the play would do, independent of the order hosts finish in', () => {
    const a: TaskResult = { host: 'web1', task: 'T1', status: 'changed', diff: 'x' };
    const b: TaskResult = { host: 'web2', task: 'T1', status: 'ok' };
    const c: TaskResult = { host: 'web1', task: 'T2', status: 'ok' };
    expect(configurationFingerprint(facts([a, b, c]))).toBe(configurationFingerprint(facts([b, a, c])));
    // A new task, another diff, another status, a key mismatch: each changes it.
    const base = configurationFingerprint(facts([a, b, c]));
    expect(configurationFingerprint(facts([a, b, c, { host: 'web1', task: 'T3', status: 'ok' }]))).not.toBe(base);
    expect(configurationFingerprint(facts([{ ...a, diff: 'y' }, b, c]))).not.toBe(base);
    expect(configurationFingerprint(facts([a, { ...b, status: 'changed' }, c]))).not.toBe(base);
    expect(configurationFingerprint(facts([a, b, c], { keyMismatches: [{ host: 'db1', detail: 'x' }] }))).not.toBe(
      base,
    );
    expect(base).toMatch(/^[0-9a-f]{64}$/);
    // ansible's temporary file in the header differs on every run; the hunks decide.
    const run = (tmp: string, line: string): TaskResult => ({
      host: 'web1',
      task: 'T',
      status: 'changed',
      diff: `--- before: /etc/motd\n+++ after: ${tmp}\n@@ -1 +1 @@\n-a\n+${line}\n`,
    });
    expect(configurationFingerprint(facts([run('/tmp/x/tmp1', 'b')]))).toBe(
      configurationFingerprint(facts([run('/tmp/y/tmp2', 'b')])),
    );
    expect(configurationFingerprint(facts([run('/tmp/x/tmp1', 'b')]))).not.toBe(
      configurationFingerprint(facts([run('/tmp/x/tmp1', 'c')])),
    );
  });
});

function report(infra: DriftReport['infrastructure'], config: DriftReport['configuration']): DriftReport {
  return { workspace: 'web', checkedAt: '2026-11-30T22:00:00.000Z', infrastructure: infra, configuration: config };
}
const cleanInfra = () => ({
  ok: true as const,
  value: infrastructureDrift(plan({}), 'a'.repeat(64), ['web1', 'web2']),
});
const cleanConfig = () => ({
  ok: true as const,
  value: configurationDrift(facts([{ host: 'web1', task: 'T', status: 'ok' }])),
});

describe('verdict and exit codes', () => {
  it('is clean (0) when neither half would change anything', () => {
    const r = report(cleanInfra(), cleanConfig());
    expect([driftVerdict(r), driftExitCode(r), driftHeadline(r)]).toEqual(['clean', 0, 'no drift']);
  });

  it.each([
    [
      'a resource change',
      () =>
        report(
          {
            ok: true,
            value: infrastructureDrift(
              plan({ resource_changes: [{ address: 'r.a', change: change(['update']) }] }),
              'a',
              [],
            ),
          },
          cleanConfig(),
        ),
    ],
    [
      'an output change',
      () =>
        report(
          { ok: true, value: infrastructureDrift(plan({ output_changes: { x: change(['update']) } }), 'a', []) },
          cleanConfig(),
        ),
    ],
    [
      'a changed task',
      () =>
        report(cleanInfra(), {
          ok: true,
          value: configurationDrift(facts([{ host: 'web1', task: 'T', status: 'changed' }])),
        }),
    ],
    [
      'an unreachable host',
      () =>
        report(cleanInfra(), {
          ok: true,
          value: configurationDrift(facts([{ host: 'web1', task: 'T', status: 'unreachable' }])),
        }),
    ],
    [
      'a key mismatch',
      () =>
        report(cleanInfra(), {
          ok: true,
          value: configurationDrift(facts([], { keyMismatches: [{ host: 'web1', detail: 'x' }] })),
        }),
    ],
  ])('is drift (3) for %s', (_, make) => {
    const r = make();
    expect([driftVerdict(r), driftExitCode(r)]).toEqual(['drift', 3]);
  });

  it.each([
    ['the plan failed', () => report({ ok: false, error: 'tofu plan failed' }, cleanConfig())],
    ['the play could not run', () => report(cleanInfra(), { ok: false, error: 'ansible-playbook was not found' })],
    [
      'a task failed in check mode',
      () =>
        report(cleanInfra(), {
          ok: true,
          value: configurationDrift(facts([{ host: 'web1', task: 'T', status: 'failed' }])),
        }),
    ],
  ])('is failed (1) when %s, even beside drift', (_, make) => {
    const r = make();
    expect([driftVerdict(r), driftExitCode(r)]).toEqual(['failed', 1]);
  });
});

describe('renderers', () => {
  const drifted = report(
    {
      ok: true,
      value: infrastructureDrift(
        plan({
          resource_changes: [{ address: 'terraform_data.web', change: change(['update']) }],
          output_changes: {
            ansible_inventory: change(['update'], { before: inventoryOf('web1'), after: inventoryOf('web1', 'web2') }),
          },
        }),
        'b'.repeat(64),
        ['web1'],
      ),
    },
    {
      ok: true,
      value: configurationDrift(
        facts(
          [
            {
              host: 'web1',
              task: 'Write /etc/motd',
              status: 'changed',
              diff: '--- before: /etc/motd\n+++ after: /etc/motd\n@@ -1 +1 @@\n-tampered\n+managed by exocomp\n',
            },
            { host: 'web<b>2', task: 'Evil ``` `task`', status: 'changed', diff: '```\n+``` not a fence end\n' },
          ],
          { keyMismatches: [{ host: 'db1', detail: '[127.0.0.9]:2222' }] },
        ),
      ),
    },
  );

  it('says a clean run in one line, in text and markdown', () => {
    const r = report(cleanInfra(), cleanConfig());
    expect(renderDriftText(r)).toBe(
      'no drift in tf:web: the plan has no changes and the play would change nothing on 2 host(s)\n',
    );
    expect(renderDriftMarkdown(r).trimEnd().split('\n')).toHaveLength(1);
  });

  it('text names the resource, the hosts joining, the host, the task, its diff and the key mismatch', () => {
    const text = renderDriftText(drifted);
    expect(text).toContain('drift found in tf:web');
    expect(text).toContain('~   terraform_data.web (update)');
    expect(text).toContain('joining: web2');
    expect(text).toContain('  web1:\n    ~ Write /etc/motd\n      --- before: /etc/motd');
    expect(text).toContain('      -tampered\n      +managed by exocomp');
    expect(text).toContain('host key mismatch: db1 ([127.0.0.9]:2222) — not re-pinned');
  });

  it('markdown fences diffs so host text cannot close them, and escapes names', () => {
    const md = renderDriftMarkdown(drifted);
    expect(md).toContain('| update | `terraform_data.web` |');
    expect(md).toContain('**web\\<b\\>2**');
    expect(md).toContain('- Evil \\`\\`\\` \\`task\\`');
    expect(md).toContain('````diff\n```\n+``` not a fence end\n````');
    expect(md).toContain('| host key mismatch (not re-pinned) | db1 |');
    expect(md).toMatch(/Configuration fingerprint `[0-9a-f]{16}`/);
  });

  it('bounds long diffs and the markdown size', () => {
    const longDiff = Array.from({ length: 500 }, (_, i) => `+line ${i} ${'x'.repeat(100)}`).join('\n');
    const hosts = Array.from({ length: 40 }, (_, i) => ({
      host: `h${i}`,
      task: 'Big',
      status: 'changed' as const,
      diff: longDiff,
    }));
    const big = report(cleanInfra(), { ok: true, value: configurationDrift(facts(hosts)) });
    expect(renderDriftText(big)).toContain(`… ${500 - MAX_DIFF_LINES} more line(s)`);
    const md = renderDriftMarkdown(big);
    expect(md.length).toBeLessThanOrEqual(MAX_MARKDOWN_LENGTH + 200);
    expect(md).toContain('the report was cut to fit');
    expect((md.match(/^````?diff$/gm) ?? []).length).toBeGreaterThan(0);
    // Every fence opened is closed.
    expect((md.match(/^`{3,}/gm) ?? []).length % 2).toBe(0);
  });

  it('escapes markdown in untrusted text', () => {
    expect(escapeMarkdown('[x](http://e) *b* | c\nd')).toBe('\\[x\\]\\(http://e\\) \\*b\\* \\| c d');
  });
});
