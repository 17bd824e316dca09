import { describe, expect, it } from 'vitest';
import { planJsonSchema, type PlanJson } from '../../src/domain/plan.js';
import {
  buildPlanView,
  pinsRetiredBy,
  planViewSchema,
  renderPlanViewMarkdown,
  renderPlanViewText,
} from '../../src/domain/plan-view.js';

const SECRET = 's3cr3t-db-password-value';

/** Shaped like `tofu show -json` of a real plan (format 1.2): modules, a replace with its reason and paths, a deleted resource. */
function mixedPlan(): PlanJson {
  const inventory = (hosts: string[]) => ({
    all: { hosts: Object.fromEntries(hosts.map((h, i) => [h, { ansible_host: `10.0.0.${i + 1}` }])) },
  });
  return planJsonSchema.parse({
    format_version: '1.2',
    resource_changes: [
      {
        address: 'aws_instance.web["web-3"]',
        mode: 'managed',
        type: 'aws_instance',
        name: 'web',
        index: 'web-3',
        change: { actions: ['create'], before: null, after: { ami: 'ami-1' }, after_unknown: { id: true } },
      },
      {
        address: 'aws_instance.web["web-1"]',
        mode: 'managed',
        type: 'aws_instance',
        name: 'web',
        index: 'web-1',
        change: {
          actions: ['delete', 'create'],
          before: { ami: 'ami-0' },
          after: { ami: 'ami-1' },
          replace_paths: [['ami'], ['tags', 'Name'], ['disk', 0]],
        },
        action_reason: 'replace_because_cannot_update',
      },
      {
        address: 'aws_instance.web["web-2"]',
        mode: 'managed',
        type: 'aws_instance',
        name: 'web',
        index: 'web-2',
        change: { actions: ['delete'], before: { ami: 'ami-0' }, after: null },
        action_reason: 'delete_because_each_key',
      },
      {
        address: 'module.db.aws_db_instance.main',
        module_address: 'module.db',
        mode: 'managed',
        type: 'aws_db_instance',
        name: 'main',
        change: {
          actions: ['update'],
          before: { password: 'old-password-value', size: 1 },
          after: { password: SECRET, size: 2 },
          before_sensitive: { password: true },
          after_sensitive: { password: true },
        },
      },
      {
        address: 'module.db.aws_db_parameter_group.main',
        module_address: 'module.db',
        mode: 'managed',
        type: 'aws_db_parameter_group',
        name: 'main',
        change: { actions: ['no-op'], before: {}, after: {} },
      },
      {
        address: 'module.net.module.vpc.aws_vpc.this',
        module_address: 'module.net.module.vpc',
        mode: 'managed',
        type: 'aws_vpc',
        name: 'this',
        change: { actions: ['create'], before: null, after: { cidr: '10.0.0.0/16' } },
      },
      {
        address: 'data.aws_ami.ubuntu',
        mode: 'data',
        type: 'aws_ami',
        name: 'ubuntu',
        change: { actions: ['read'], before: null, after: {} },
        action_reason: 'read_because_config_unknown',
      },
    ],
    output_changes: {
      ansible_inventory: {
        actions: ['update'],
        before: inventory(['web-1', 'web-2', 'db-1']),
        after: inventory(['web-1', 'web-3', 'db-1']),
        after_unknown: false,
        before_sensitive: false,
        after_sensitive: false,
      },
      db_password: { actions: ['update'], before: 'x', after: SECRET, before_sensitive: true, after_sensitive: true },
    },
  });
}

const currentHosts = [
  { name: 'web-1', pins: ['10.0.0.1'] },
  { name: 'web-2', pins: ['10.0.0.2', '[10.0.0.2]:2222'] },
  { name: 'db-1', pins: ['10.0.0.3'] },
];

function mixedView() {
  return buildPlanView({
    plan: mixedPlan(),
    fingerprint: 'f'.repeat(64),
    workflowId: 'w-1',
    workspace: 'fleet',
    currentHosts,
  });
}

describe('buildPlanView', () => {
  it('lists every changed resource with its action, module and reason, and leaves no-ops out', () => {
    const view = mixedView();
    expect(view.resources).toEqual([
      {
        address: 'aws_instance.web["web-1"]',
        module: '',
        action: 'replace',
        reason: 'replace_because_cannot_update',
        replacePaths: ['ami', 'tags.Name', 'disk[0]'],
      },
      { address: 'aws_instance.web["web-2"]', module: '', action: 'destroy', reason: 'delete_because_each_key' },
      { address: 'aws_instance.web["web-3"]', module: '', action: 'create' },
      { address: 'data.aws_ami.ubuntu', module: '', action: 'read', reason: 'read_because_config_unknown' },
      { address: 'module.db.aws_db_instance.main', module: 'module.db', action: 'update' },
      { address: 'module.net.module.vpc.aws_vpc.this', module: 'module.net.module.vpc', action: 'create' },
    ]);
    expect(view.summary).toEqual({ add: 3, change: 1, destroy: 2, replace: 1 });
    expect(planViewSchema.parse(view)).toEqual(view);
  });

  it('says which hosts are created, replaced (pins retired), destroyed and unchanged', () => {
    const view = mixedView();
    expect(view.hosts).toEqual([
      { host: 'web-3', fate: 'created', resources: ['aws_instance.web["web-3"]'], pinsRetired: [] },
      { host: 'web-1', fate: 'replaced', resources: ['aws_instance.web["web-1"]'], pinsRetired: ['10.0.0.1'] },
      {
        host: 'web-2',
        fate: 'destroyed',
        resources: ['aws_instance.web["web-2"]'],
        pinsRetired: ['10.0.0.2', '[10.0.0.2]:2222'],
      },
      { host: 'db-1', fate: 'unchanged', resources: [], pinsRetired: [] },
    ]);
    expect(pinsRetiredBy(view)).toEqual(['10.0.0.1', '10.0.0.2', '[10.0.0.2]:2222']);
    expect(view.createdHostsUnknown).toBe(false);
  });

  it('matches a host by resource name, and by the instance key of its module', () => {
    const plan = planJsonSchema.parse({
      format_version: '1.2',
      resource_changes: [
        { address: 'terraform_data.edge1', change: { actions: ['delete', 'create'] } },
        {
          address: 'module.host["edge2"].aws_instance.this',
          module_address: 'module.host["edge2"]',
          change: { actions: ['delete'] },
        },
        { address: 'terraform_data.edge3x', change: { actions: ['delete'] } },
      ],
    });
    const view = buildPlanView({
      plan,
      fingerprint: 'f',
      workflowId: 'w',
      workspace: 'edge',
      currentHosts: ['edge1', 'edge2', 'edge3'].map((name) => ({ name, pins: [name] })),
    });
    expect(view.hosts.map((h) => [h.host, h.fate])).toEqual([
      ['edge1', 'replaced'],
      ['edge2', 'destroyed'],
      ['edge3', 'unchanged'],
    ]);
  });

  it('says when the hosts a plan creates are known only after apply', () => {
    const plan = planJsonSchema.parse({
      format_version: '1.2',
      resource_changes: [{ address: 'terraform_data.hosts', change: { actions: ['update'] } }],
      output_changes: { ansible_inventory: { actions: ['update'], before: {}, after_unknown: true } },
    });
    const view = buildPlanView({ plan, fingerprint: 'f', workflowId: 'w', workspace: 'edge', currentHosts: [] });
    expect(view.createdHostsUnknown).toBe(true);
    expect(renderPlanViewText(view)).toContain('known only after apply');
  });
});

describe('rendering the plan view', () => {
  it('shows every address and action, the replaced host’s pins, the destroyed host — and no value of the plan', () => {
    const view = mixedView();
    const text = renderPlanViewText(view);
    const markdown = renderPlanViewMarkdown(view, { limit: 65_536, fullView: 'exocomp approval show w-1' });
    // Markdown escapes brackets and pipes; what a reader sees is the unescaped text.
    for (const rendered of [text, markdown.replace(/\\(.)/g, '$1')]) {
      for (const r of view.resources) expect(rendered).toContain(r.address);
      for (const action of ['create', 'update', 'replace', 'destroy', 'read']) expect(rendered).toContain(action);
      expect(rendered).toMatch(/web-1.*replaced: new host key, onboarded again; pins retired: 10\.0\.0\.1/);
      expect(rendered).toMatch(/web-2.*destroyed: leaves tf:fleet; pins retired: 10\.0\.0\.2, \[10\.0\.0\.2\]:2222/);
      expect(rendered).toMatch(/web-3.*created: will be onboarded/);
      expect(rendered).toContain('module.net.module.vpc');
      expect(rendered).toContain('forced by ami, tags.Name, disk[0]');
      expect(rendered).toMatch(/db_password.*\(sensitive\)/);
      expect(rendered).not.toContain(SECRET);
      expect(rendered).not.toContain('old-password-value');
      expect(rendered).not.toContain('ami-1');
    }
    expect(markdown).not.toContain('<details>');
    expect(markdown).not.toContain('more row(s)');
  });

  it('escapes what the plan names, so an address cannot inject markdown', () => {
    const plan = planJsonSchema.parse({
      format_version: '1.2',
      resource_changes: [{ address: 'x.y["`|<img src=q>"]', change: { actions: ['create'] }, action_reason: '<b>|x' }],
    });
    const view = buildPlanView({ plan, fingerprint: 'f', workflowId: 'w', workspace: 'edge', currentHosts: [] });
    const markdown = renderPlanViewMarkdown(view, { limit: 65_536, fullView: 'x' });
    expect(markdown).toContain('| create | `x.y["\'\\|<img src=q>"]` | \\<b\\>\\|x |');
  });

  it('folds a 5,000-resource plan and cuts it under GitHub’s comment limit with a pointer to the full view', () => {
    const resource_changes = Array.from({ length: 5000 }, (_, i) => ({
      address: `module.m${i % 7}.aws_instance.node["node-${String(i).padStart(4, '0')}"]`,
      module_address: `module.m${i % 7}`,
      change: { actions: i % 3 === 0 ? ['delete', 'create'] : ['create'], replace_paths: [['ami']] },
      ...(i % 3 === 0 ? { action_reason: 'replace_because_cannot_update' } : {}),
    }));
    const plan = planJsonSchema.parse({ format_version: '1.2', resource_changes });
    const view = buildPlanView({ plan, fingerprint: 'f', workflowId: 'w-big', workspace: 'big', currentHosts: [] });
    const limit = 60_000;
    const markdown = renderPlanViewMarkdown(view, { limit, fullView: '`exocomp approval show w-big`' });
    expect(markdown.length).toBeLessThanOrEqual(limit);
    expect(markdown).toContain('<details><summary>5000 changed resources</summary>');
    expect(markdown.trimEnd().endsWith('</details>')).toBe(true);
    const shown = markdown.split('\n').filter((l) => l.startsWith('| replace |') || l.startsWith('| create |')).length;
    expect(shown).toBeGreaterThan(100);
    expect(markdown).toContain(`${5000 - shown} more row(s) not shown here`);
    expect(markdown).toContain('the full view: `exocomp approval show w-big`');
    // The terminal view is never cut.
    expect(
      renderPlanViewText(view)
        .split('\n')
        .filter((l) => l.includes('aws_instance.node')).length,
    ).toBe(5000);
  });
});
