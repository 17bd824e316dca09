/**
 * `exocomp doctor --github` against the OpenAPI-checked GitHub double: a fully protected repository is all ok;
 * each protection taken away in turn turns its row missing or risky, naming the setting to change.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/program.js';
import type { SetupRow } from '../../src/domain/setup-check.js';
import type { Io } from '../../src/cli/common.js';
import {
  gateRulesets,
  GITHUB_ACTIONS_APP_ID,
  PERMISSIVE_TOKEN,
  startGitHubDouble,
  type GitHubDouble,
  type SeedRuleset,
} from '../support/github-double.js';

const ADMIN_TOKEN = 'ghp_adminTokenForDoctorTests01';
const JOB_TOKEN = 'ghs_jobTokenForDoctorTests00002';
const LEDGER_RULESET = 1;
const DEFAULT_RULESET = 2;
const HOUR = 3_600_000;

let double: GitHubDouble;
const savedEnv = { ...process.env };

beforeAll(async () => {
  double = await startGitHubDouble({ repository: 'acme/infra' });
});

afterAll(async () => {
  await double.close();
});

beforeEach(() => {
  const s = double.state;
  s.tokens[ADMIN_TOKEN] = {
    login: 'octo-admin',
    permissions: { ...PERMISSIVE_TOKEN, administration: 'write', secrets: 'read' },
  };
  s.tokens[JOB_TOKEN] = { login: 'github-actions[bot]', permissions: { ...PERMISSIVE_TOKEN } };
  s.environments = {
    production: { requiredReviewers: ['alice'], preventSelfReview: true, secrets: ['EXOCOMP_SEAL_KEY'] },
  };
  s.rulesets = gateRulesets();
  s.secrets = ['EXOCOMP_FLEET_KEY', 'EXOCOMP_BOOTSTRAP_KEY'];
  s.runs = {
    7001: { status: 'completed', conclusion: 'success', event: 'push' },
    7002: {
      status: 'completed',
      conclusion: 'success',
      event: 'schedule',
      workflowPath: '.github/workflows/resume-sweeper.yml',
      createdAt: new Date(Date.now() - 2 * HOUR).toISOString(),
    },
  };
  process.env.GITHUB_API_URL = double.url;
  process.env.GITHUB_TOKEN = ADMIN_TOKEN;
  delete process.env.GH_TOKEN;
});

afterEach(() => {
  process.env = { ...savedEnv };
  process.exitCode = undefined;
  expect(double.violations).toEqual([]);
  double.violations.length = 0;
});

async function doctor(...extra: string[]): Promise<{ code: number; rows: SetupRow[]; text: string[] }> {
  const out: string[] = [];
  const io: Io = { out: (line) => out.push(line), err: (line) => out.push(line) };
  const code = await main(['doctor', '--github', 'acme/infra', '--json', ...extra], io);
  const rows = (JSON.parse(out.at(-1) ?? '{}') as { rows: SetupRow[] }).rows;
  return { code, rows, text: out };
}

function row(rows: SetupRow[], check: string): SetupRow {
  const found = rows.find((r) => r.check === check);
  expect(found, `row ${check}`).toBeDefined();
  return found as SetupRow;
}

describe('exocomp doctor --github', () => {
  it('says ok for every row of a fully protected repository, and exits 0', async () => {
    const { code, rows } = await doctor();
    expect(rows.map((r) => [r.check, r.status])).toEqual([
      ['environment-reviewers', 'ok'],
      ['environment-self-review', 'ok'],
      ['ledger-records', 'ok'],
      ['ledger-bypass', 'ok'],
      ['default-branch', 'ok'],
      ['secret:EXOCOMP_FLEET_KEY', 'ok'],
      ['secret:EXOCOMP_BOOTSTRAP_KEY', 'ok'],
      ['secret:EXOCOMP_SEAL_KEY', 'ok'],
      ['schedules', 'ok'],
    ]);
    expect(code).toBe(0);
    // The record branches are asked about by a record's own name, two levels under the namespace.
    expect(double.requestsTo('GET /repos/{owner}/{repo}/rules/branches/{branch}').map((r) => r.params.branch)).toEqual(
      expect.arrayContaining(['exocomp-ledger-records/workflows/exocomp-doctor.json', 'main']),
    );
  });

  const removals: Array<{
    name: string;
    change: (s: GitHubDouble['state']) => void;
    check: string;
    status: SetupRow['status'];
    setting: string;
    /** Rows that follow from the same change. */
    alsoOff?: string[];
  }> = [
    {
      name: 'the environment',
      change: (s) => delete s.environments.production,
      check: 'environment-reviewers',
      status: 'missing',
      setting: 'Settings → Environments → production',
      alsoOff: ['environment-self-review', 'secret:EXOCOMP_SEAL_KEY'],
    },
    {
      name: 'required reviewers',
      change: (s) => (s.environments.production = { requiredReviewers: [], secrets: ['EXOCOMP_SEAL_KEY'] }),
      check: 'environment-reviewers',
      status: 'missing',
      setting: 'Required reviewers',
      alsoOff: ['environment-self-review'],
    },
    {
      name: 'prevent self-review',
      change: (s) => ((s.environments.production as { preventSelfReview?: boolean }).preventSelfReview = false),
      check: 'environment-self-review',
      status: 'risky',
      setting: 'Prevent self-review',
    },
    {
      name: 'the ledger ruleset',
      change: (s) => delete s.rulesets[LEDGER_RULESET],
      check: 'ledger-records',
      status: 'missing',
      setting: 'exocomp-ledger-records/**/*',
      alsoOff: ['ledger-bypass'],
    },
    {
      name: 'the second level of the ledger ruleset (a single * stops at /)',
      change: (s) =>
        ((s.rulesets[LEDGER_RULESET] as { include: string[] }).include = ['refs/heads/exocomp-ledger-records/*']),
      check: 'ledger-records',
      status: 'missing',
      setting: 'a single * stops at the first /',
      alsoOff: ['ledger-bypass'],
    },
    {
      name: 'the ledger ruleset’s enforcement',
      change: (s) => ((s.rulesets[LEDGER_RULESET] as { enforcement?: string }).enforcement = 'disabled'),
      check: 'ledger-records',
      status: 'missing',
      setting: 'New branch ruleset',
      alsoOff: ['ledger-bypass'],
    },
    {
      name: 'blocking force pushes of records',
      change: (s) => {
        const ruleset = s.rulesets[LEDGER_RULESET] as { rules: Array<{ type: string }> };
        ruleset.rules = ruleset.rules.filter((rule) => rule.type !== 'non_fast_forward');
      },
      check: 'ledger-records',
      status: 'risky',
      setting: 'Block force pushes',
    },
    {
      name: 'a bypass list kept to GitHub Actions',
      change: (s) =>
        (s.rulesets[LEDGER_RULESET] as { bypassActors: unknown[] }).bypassActors.push({
          actorType: 'RepositoryRole',
          actorId: 5,
        }),
      check: 'ledger-bypass',
      status: 'risky',
      setting: 'Bypass list',
    },
    {
      name: 'the default branch’s ruleset',
      change: (s) => delete s.rulesets[DEFAULT_RULESET],
      check: 'default-branch',
      status: 'missing',
      setting: 'Require a pull request before merging',
    },
    {
      name: 'an approving review on the default branch',
      change: (s) => {
        const rule = (s.rulesets[DEFAULT_RULESET] as { rules: Array<{ parameters?: Record<string, unknown> }> })
          .rules[0];
        (rule?.parameters as Record<string, unknown>).required_approving_review_count = 0;
      },
      check: 'default-branch',
      status: 'risky',
      setting: 'Required approvals: 1 or more',
    },
    {
      name: 'the fleet key secret',
      change: (s) => (s.secrets = ['EXOCOMP_BOOTSTRAP_KEY']),
      check: 'secret:EXOCOMP_FLEET_KEY',
      status: 'missing',
      setting: 'Add EXOCOMP_FLEET_KEY',
    },
    {
      name: 'the seal key secret',
      change: (s) => ((s.environments.production as { secrets?: string[] }).secrets = []),
      check: 'secret:EXOCOMP_SEAL_KEY',
      status: 'risky',
      setting: 'Add EXOCOMP_SEAL_KEY',
    },
    {
      name: 'every scheduled run',
      change: (s) => delete s.runs[7002],
      check: 'schedules',
      status: 'missing',
      setting: 'on: schedule',
    },
    {
      name: 'a recent scheduled run',
      change: (s) =>
        ((s.runs[7002] as { createdAt?: string }).createdAt = new Date(Date.now() - 30 * 24 * HOUR).toISOString()),
      check: 'schedules',
      status: 'risky',
      setting: 'Enable workflow',
    },
  ];

  it.each(removals)(
    'without $name: $check is $status, naming the setting',
    async ({ change, check, status, setting, alsoOff }) => {
      change(double.state);
      const { code, rows } = await doctor();
      const changed = row(rows, check);
      expect(changed.status).toBe(status);
      expect(changed.help).toContain(setting);
      expect(code).toBe(1);
      // Only that protection's rows moved.
      expect(rows.filter((r) => r.status !== 'ok').map((r) => r.check)).toEqual([check, ...(alsoOff ?? [])]);
    },
  );

  // Issue 39: the ledger protections GitHub accepts, on organization and personal repositories, and the one it refuses.
  describe('who writes the ledger', () => {
    const APP_ID = 424242;
    /** The records' ruleset kept in the repository, its bypass list `actors`. */
    const repositoryRuleset = (actors: NonNullable<SeedRuleset['bypassActors']>) => {
      const ruleset = double.state.rulesets[LEDGER_RULESET]!;
      double.state.rulesets[LEDGER_RULESET] = { ...ruleset, source: 'Repository', bypassActors: actors };
    };

    it('an organization ruleset naming GitHub Actions, the jobs’ GITHUB_TOKEN writing: ok', async () => {
      const { rows } = await doctor();
      expect(row(rows, 'ledger-bypass')).toMatchObject({
        status: 'ok',
        detail: expect.stringContaining('GitHub Actions app'),
      });
    });

    it('a repository ruleset naming a GitHub App, whose token writes the ledger (--ledger-app): every row ok', async () => {
      repositoryRuleset([{ actorType: 'Integration', actorId: APP_ID }]);
      const { code, rows } = await doctor('--ledger-app', String(APP_ID));
      expect(rows.filter((r) => r.status !== 'ok')).toEqual([]);
      expect(row(rows, 'ledger-bypass').detail).toContain(`GitHub App ${APP_ID}`);
      expect(code).toBe(0);
    });

    it('the same ruleset while the jobs’ GITHUB_TOKEN writes: missing (its pushes get GH013)', async () => {
      repositoryRuleset([{ actorType: 'Integration', actorId: APP_ID }]);
      const { code, rows } = await doctor();
      expect(row(rows, 'ledger-bypass')).toMatchObject({ status: 'missing', detail: expect.stringContaining('GH013') });
      expect(code).toBe(1);
    });

    it('the 422 shape: a repository ruleset saved without its bypass, GITHUB_TOKEN writing: missing, with both fixes', async () => {
      repositoryRuleset([]);
      const { code, rows } = await doctor();
      const bypass = row(rows, 'ledger-bypass');
      expect(bypass.status).toBe('missing');
      expect(bypass.help).toContain('422');
      expect(bypass.help).toContain('Organization settings → Repository → Rulesets');
      expect(bypass.help).toContain('actions/create-github-app-token');
      expect(bypass.help).toContain('--ledger-app');
      expect(rows.filter((r) => r.status !== 'ok').map((r) => r.check)).toEqual(['ledger-bypass']);
      expect(code).toBe(1);
    });

    it('the double serves no repository ruleset naming GitHub Actions, as GitHub saves none', async () => {
      repositoryRuleset([{ actorType: 'Integration', actorId: GITHUB_ACTIONS_APP_ID }]);
      await doctor();
      expect(double.violations.map((v) => v.message).join('\n')).toContain('must be part of the ruleset source');
      double.violations.length = 0;
    });
  });

  it('with dispatch mode, has no environment rows', async () => {
    delete double.state.environments.production;
    double.state.secrets.push('EXOCOMP_SEAL_KEY');
    const { code, rows } = await doctor('--approval-mode', 'dispatch');
    expect(rows.map((r) => r.check)).not.toContain('environment-reviewers');
    expect(rows.every((r) => r.status === 'ok')).toBe(true);
    expect(code).toBe(0);
  });

  it('with a job’s GITHUB_TOKEN, names what to grant for what it may not read, and judges the rest', async () => {
    process.env.GITHUB_TOKEN = JOB_TOKEN;
    const { code, rows, text } = await doctor();
    expect(row(rows, 'ledger-records').status).toBe('ok');
    expect(row(rows, 'ledger-bypass')).toMatchObject({ status: 'unreadable', help: expect.stringContaining('admin') });
    expect(row(rows, 'secrets')).toMatchObject({
      status: 'unreadable',
      help: expect.stringContaining('secrets: read'),
    });
    expect(code).toBe(0);
    expect(text.join('\n')).not.toContain(JOB_TOKEN);
  });

  it('prints a table with the settings to change', async () => {
    delete double.state.rulesets[LEDGER_RULESET];
    const out: string[] = [];
    const code = await main(['doctor', '--github', 'acme/infra'], { out: (l) => out.push(l), err: (l) => out.push(l) });
    expect(code).toBe(1);
    expect(out.join('\n')).toMatch(
      /^MISSING\s+ledger records \(exocomp-ledger-records\/workflows\/exocomp-doctor\.json\)/m,
    );
    expect(out.join('\n')).toContain('→ acme/infra: Settings → Rules → Rulesets');
    expect(out.at(-1)).toMatch(/^\d+ ok, 2 missing, 0 risky$/);
  });
});
