import { describe, expect, it } from 'vitest';
import {
  addressMatcher,
  DEFAULT_POLICY,
  destroyRefusal,
  judgeDestroy,
  parseDestroyPolicy,
} from '../../src/domain/destroy-policy.js';
import type { PlanView, ResourceView } from '../../src/domain/plan-view.js';

function view(resources: Array<Pick<ResourceView, 'address' | 'action'>>, hosts: PlanView['hosts'] = []): PlanView {
  return {
    schemaVersion: 1,
    workflowId: 'w',
    workspace: 'fleet',
    fingerprint: 'f',
    summary: { add: 0, change: 0, destroy: 0, replace: 0 },
    resources: resources.map((r) => ({ ...r, module: '' })),
    outputs: [],
    hosts,
    createdHostsUnknown: false,
  };
}

describe('parseDestroyPolicy', () => {
  it('is the default without a file, and reads the three documented keys', () => {
    expect(parseDestroyPolicy(undefined)).toEqual(DEFAULT_POLICY);
    expect(parseDestroyPolicy('')).toEqual(DEFAULT_POLICY);
    expect(parseDestroyPolicy('allow-destroy: true\nprotect: [module.db]\nmax-destroy: 3\n')).toEqual({
      'allow-destroy': true,
      protect: ['module.db'],
      'max-destroy': 3,
    });
  });

  it('refuses unknown keys, wrong types and broken YAML, naming the file', () => {
    expect(() => parseDestroyPolicy('allow_destroy: true')).toThrow(/\.exocomp\/policy\.yml is not a valid policy/);
    expect(() => parseDestroyPolicy('max-destroy: -1')).toThrow(/max-destroy/);
    expect(() => parseDestroyPolicy('protect: [a')).toThrow(/not valid YAML/);
  });
});

describe('addressMatcher', () => {
  it('matches exactly, with * as a wildcard, and covers what is under a module or resource', () => {
    const db = addressMatcher('module.db');
    expect(db('module.db.aws_db_instance.main')).toBe(true);
    expect(db('module.db["x"].aws_db_instance.main')).toBe(true);
    expect(db('module.dbx.aws_db_instance.main')).toBe(false);
    expect(addressMatcher('aws_instance.web["*"]')('aws_instance.web["web-1"]')).toBe(true);
    expect(addressMatcher('aws_instance.web["*"]')('aws_instance.webx["web-1"]')).toBe(false);
    expect(addressMatcher('*.bastion')('module.net.aws_instance.bastion')).toBe(true);
  });
});

describe('judgeDestroy', () => {
  const replacedHost: PlanView['hosts'] = [
    { host: 'web1', fate: 'replaced', resources: ['aws_instance.web["web1"]'], pinsRetired: ['10.0.0.1'] },
    { host: 'web2', fate: 'destroyed', resources: [], pinsRetired: [] },
    { host: 'web3', fate: 'unchanged', resources: [], pinsRetired: [] },
  ];
  const plan = view([{ address: 'aws_instance.web["web1"]', action: 'replace' }], replacedHost);

  it('refuses replaced and destroyed hosts without allow-destroy, naming their addresses', () => {
    const verdict = judgeDestroy(plan, DEFAULT_POLICY, { allowDestroy: false });
    expect(verdict).toMatchObject({
      allowed: false,
      offences: [
        { address: 'aws_instance.web["web1"]', why: 'host web1 replaced' },
        { address: '(inventory) web2', why: 'host web2 destroyed' },
      ],
    });
    const error = destroyRefusal('fleet', verdict as Extract<typeof verdict, { allowed: false }>, 'approval');
    expect(error.message).toContain('aws_instance.web["web1"]: host web1 replaced');
    expect(error.help).toContain('allow-destroy');
  });

  it('lets them through with the run’s allow-destroy, or the policy’s', () => {
    expect(judgeDestroy(plan, DEFAULT_POLICY, { allowDestroy: true })).toEqual({ allowed: true });
    expect(judgeDestroy(plan, { ...DEFAULT_POLICY, 'allow-destroy': true }, { allowDestroy: false })).toEqual({
      allowed: true,
    });
  });

  it('counts destroyed and replaced resources against max-destroy', () => {
    const many = view([
      { address: 'a.one', action: 'destroy' },
      { address: 'a.two', action: 'replace' },
      { address: 'a.three', action: 'create' },
    ]);
    expect(judgeDestroy(many, { ...DEFAULT_POLICY, 'max-destroy': 2 }, { allowDestroy: false })).toEqual({
      allowed: true,
    });
    expect(judgeDestroy(many, { ...DEFAULT_POLICY, 'max-destroy': 1 }, { allowDestroy: false })).toMatchObject({
      allowed: false,
      offences: [
        { address: 'a.one', why: 'destroy: 2 resources destroyed, max-destroy is 1' },
        { address: 'a.two', why: 'replace: 2 resources destroyed, max-destroy is 1' },
      ],
    });
    expect(judgeDestroy(many, { ...DEFAULT_POLICY, 'max-destroy': 1 }, { allowDestroy: true })).toEqual({
      allowed: true,
    });
  });

  it('refuses any change to a protected address, whatever allow-destroy says; reads are not changes', () => {
    const touched = view([
      { address: 'module.db.aws_db_instance.main', action: 'update' },
      { address: 'module.db.data.x.y', action: 'read' },
    ]);
    const verdict = judgeDestroy(touched, { ...DEFAULT_POLICY, protect: ['module.db'] }, { allowDestroy: true });
    expect(verdict).toMatchObject({
      allowed: false,
      offences: [{ address: 'module.db.aws_db_instance.main', why: 'update of an address protected by "module.db"' }],
      help: expect.stringContaining('stop protecting it'),
    });
  });

  it('a run’s protect patterns add to the policy’s, never lift them', () => {
    const touched = view([{ address: 'aws_instance.bastion', action: 'update' }]);
    expect(judgeDestroy(touched, DEFAULT_POLICY, { allowDestroy: true })).toEqual({ allowed: true });
    expect(
      judgeDestroy(touched, DEFAULT_POLICY, { allowDestroy: true, protect: ['aws_instance.bastion'] }),
    ).toMatchObject({
      allowed: false,
      offences: [{ address: 'aws_instance.bastion' }],
    });
    const policy = { ...DEFAULT_POLICY, protect: ['aws_instance.*'] };
    expect(judgeDestroy(touched, policy, { allowDestroy: true, protect: [] })).toMatchObject({ allowed: false });
  });
});
