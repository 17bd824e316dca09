/**
 * `exocomp doctor --gitlab` against the GitLab double (routes checked against routes.json): a fully protected
 * project is all ok; each protection taken away in turn turns its row missing or risky, naming the setting.
 * Variable values are never read into the output.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/program.js';
import type { Io } from '../../src/cli/common.js';
import type { SetupRow } from '../../src/domain/setup-check.js';
import { GitLabDouble } from '../support/gitlab-double.js';

const TOKEN = 'glpat-doctorMaintainerToken1';
const JOB_TOKEN = 'glcbt-doctor-job-token-0001';
const PROJECT = 42;
const SECRET_VALUE = 'seal-key-value-never-printed';
const KEY_VALUE = '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n';
const HOUR = 3_600_000;

let double: GitLabDouble;
const savedEnv = { ...process.env };

beforeAll(async () => {
  double = new GitLabDouble();
  await double.start();
});

afterAll(async () => {
  await double.stop();
});

beforeEach(() => {
  const s = double.state;
  s.tokens[TOKEN] = { kind: 'personal', username: 'maintainer', scopes: ['read_api'] };
  s.tokens[JOB_TOKEN] = { kind: 'job', username: 'dev', jobId: 9 };
  s.projects = [{ id: PROJECT, path: 'acme/infra', jobTokenPushAllowed: true, defaultBranch: 'main' }];
  s.protectedBranches = [
    { projectId: PROJECT, name: 'main', push: [{ accessLevel: 40 }], allowForcePush: false },
    { projectId: PROJECT, name: 'exocomp-ledger-records/*', push: [{ accessLevel: 40 }], allowForcePush: false },
  ];
  s.protectedEnvironments = [{ projectId: PROJECT, name: 'production', requiredApprovals: 1 }];
  // As docs/gitlab.md says to keep them: the keys protected, unmasked File variables (GitLab cannot mask a
  // multi-line value; the double flags a masked one as a violation), the rest masked Variables.
  s.variables = [
    ...['EXOCOMP_FLEET_KEY', 'EXOCOMP_BOOTSTRAP_KEY'].map((key) => ({
      projectId: PROJECT,
      key,
      value: KEY_VALUE,
      variableType: 'file' as const,
      protected: true,
      masked: false,
    })),
    ...['EXOCOMP_SEAL_KEY', 'EXOCOMP_GITLAB_TOKEN'].map((key) => ({
      projectId: PROJECT,
      key,
      value: SECRET_VALUE,
      protected: true,
      masked: true,
    })),
  ];
  s.schedules = [
    {
      id: 301,
      projectId: PROJECT,
      description: 'exocomp nightly',
      ref: 'refs/heads/main',
      cron: '17 3 * * *',
      cronTimezone: 'UTC',
      active: true,
      owner: 'maintainer',
      variables: [{ key: 'EXOCOMP_SCHEDULE', value: 'nightly', variableType: 'env_var' }],
      pipelines: [new Date(Date.now() - 30 * HOUR).toISOString(), new Date(Date.now() - 6 * HOUR).toISOString()],
    },
  ];
  process.env.EXOCOMP_GITLAB_TOKEN = TOKEN;
});

afterEach(() => {
  process.env = { ...savedEnv };
  process.exitCode = undefined;
  expect(double.violations).toEqual([]);
  double.violations.length = 0;
});

async function doctor(...extra: string[]): Promise<{ code: number; rows: SetupRow[]; output: string }> {
  const out: string[] = [];
  const io: Io = { out: (line) => out.push(line), err: (line) => out.push(line) };
  const code = await main(['doctor', '--gitlab', String(PROJECT), '--gitlab-url', double.url, '--json', ...extra], io);
  const rows = (JSON.parse(out.at(-1) ?? '{}') as { rows: SetupRow[] }).rows;
  return { code, rows, output: out.join('\n') };
}

describe('exocomp doctor --gitlab', () => {
  it('says ok for every row of a fully protected project, never printing a variable’s value', async () => {
    const { code, rows, output } = await doctor();
    expect(rows.map((r) => [r.check, r.status])).toEqual([
      ['manual-gate', 'ok'],
      ['ledger-records', 'ok'],
      ['job-token-push', 'ok'],
      ['variable:EXOCOMP_FLEET_KEY', 'ok'],
      ['variable:EXOCOMP_BOOTSTRAP_KEY', 'ok'],
      ['variable:EXOCOMP_SEAL_KEY', 'ok'],
      ['variable:EXOCOMP_GITLAB_TOKEN', 'ok'],
      ['schedule:nightly', 'ok'],
    ]);
    expect(code).toBe(0);
    expect(output).not.toContain(SECRET_VALUE);
    expect(output).not.toContain('b3BlbnNzaC1rZXktdjEAAAAA');
    expect(output).not.toContain(TOKEN);
  });

  it('in environment mode, checks the protected environment’s approvals instead of the manual gate', async () => {
    const { rows } = await doctor('--approval-mode', 'environment');
    expect(rows[0]).toMatchObject({ check: 'environment-approvals', status: 'ok' });
    double.state.protectedEnvironments = [];
    const { rows: unprotected, code } = await doctor('--approval-mode', 'environment');
    expect(unprotected[0]).toMatchObject({
      check: 'environment-approvals',
      status: 'missing',
      help: expect.stringContaining('Settings → CI/CD → Protected environments'),
    });
    expect(code).toBe(1);
  });

  const removals: Array<{
    name: string;
    change: (s: GitLabDouble['state']) => void;
    check: string;
    status: SetupRow['status'];
    setting: string;
    alsoOff?: string[];
  }> = [
    {
      name: 'the default branch’s protection',
      change: (s) => (s.protectedBranches = s.protectedBranches.filter((b) => b.name !== 'main')),
      check: 'manual-gate',
      status: 'missing',
      setting: 'Protected branches → protect main',
    },
    {
      name: 'maintainers-only pushes to the default branch',
      change: (s) => ((s.protectedBranches[0] as { push: unknown[] }).push = [{ accessLevel: 30 }]),
      check: 'manual-gate',
      status: 'risky',
      setting: 'allowed to push and merge → Maintainers',
    },
    {
      name: 'the ledger records’ protection',
      change: (s) => (s.protectedBranches = s.protectedBranches.filter((b) => b.name === 'main')),
      check: 'ledger-records',
      status: 'missing',
      setting: 'protect `exocomp-ledger-records/*`',
      alsoOff: ['job-token-push'],
    },
    {
      name: 'blocked force pushes of records',
      change: (s) => ((s.protectedBranches[1] as { allowForcePush: boolean }).allowForcePush = true),
      check: 'ledger-records',
      status: 'risky',
      setting: 'Allowed to force push off',
    },
    {
      name: 'the fleet key variable',
      change: (s) => (s.variables = s.variables.filter((v) => v.key !== 'EXOCOMP_FLEET_KEY')),
      check: 'variable:EXOCOMP_FLEET_KEY',
      status: 'missing',
      setting: 'Add variable EXOCOMP_FLEET_KEY',
    },
    {
      name: 'the File type of the fleet key (a plain Variable, which GitLab cannot mask)',
      change: (s) => ((s.variables[0] as { variableType?: string }).variableType = 'env_var'),
      check: 'variable:EXOCOMP_FLEET_KEY',
      status: 'risky',
      setting: 'Type: File (GitLab cannot mask a key)',
    },
    {
      name: 'masking of the seal key',
      change: (s) => ((s.variables.find((v) => v.key === 'EXOCOMP_SEAL_KEY') as { masked: boolean }).masked = false),
      check: 'variable:EXOCOMP_SEAL_KEY',
      status: 'risky',
      setting: 'Mask variable',
    },
    {
      name: 'job-token pushes, with no ledger token',
      change: (s) => ((s.projects[0] as { jobTokenPushAllowed: boolean }).jobTokenPushAllowed = false),
      check: 'variable:ledger-credential',
      status: 'missing',
      setting: 'EXOCOMP_LEDGER_TOKEN',
    },
    {
      name: 'an active schedule',
      change: (s) => ((s.schedules[0] as { active: boolean }).active = false),
      check: 'schedule:nightly',
      status: 'risky',
      setting: 'Activate',
    },
    {
      name: 'a recent scheduled pipeline',
      change: (s) =>
        ((s.schedules[0] as { pipelines?: string[] }).pipelines = [new Date(Date.now() - 400 * HOUR).toISOString()]),
      check: 'schedule:nightly',
      status: 'risky',
      setting: 'take ownership',
    },
    {
      name: 'every exocomp schedule',
      change: (s) => (s.schedules = []),
      check: 'schedules',
      status: 'missing',
      setting: 'exocomp schedule add --gitlab',
    },
  ];

  it.each(removals)('without $name: $check is $status, naming the setting', async (removal) => {
    removal.change(double.state);
    const { code, rows } = await doctor();
    const row = rows.find((r) => r.check === removal.check);
    expect(row?.status).toBe(removal.status);
    expect(row?.help).toContain(removal.setting);
    expect(rows.filter((r) => r.status !== 'ok').map((r) => r.check)).toEqual([
      removal.check,
      ...(removal.alsoOff ?? []),
    ]);
    expect(code).toBe(1);
  });

  it('without EXOCOMP_GITLAB_TOKEN, says which token to export (exit 2)', async () => {
    process.env.EXOCOMP_GITLAB_TOKEN = '';
    const out: string[] = [];
    const code = await main(['doctor', '--gitlab', String(PROJECT), '--gitlab-url', double.url], {
      out: (line) => out.push(line),
      err: (line) => out.push(line),
    });
    expect(code).toBe(2);
    expect(out.join('\n')).toContain('EXOCOMP_GITLAB_TOKEN');
  });

  it('with a token GitLab refuses, marks the rows unreadable naming the scope, and fails nothing', async () => {
    double.state.tokens[TOKEN] = { kind: 'personal', username: 'maintainer', scopes: ['read_user'] };
    const { code, rows } = await doctor();
    expect(rows.filter((r) => r.status !== 'unreadable')).toEqual([]);
    expect(rows[0]?.help).toContain('read_api');
    expect(code).toBe(0);
  });
});
