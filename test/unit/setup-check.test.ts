import { describe, expect, it } from 'vitest';
import {
  gateWarnings,
  gitlabBranchMatches,
  judgeSetup,
  type BranchRules,
  type GitHubSetupFacts,
  type GitLabSetupFacts,
  type LedgerWriter,
  type SetupRow,
} from '../../src/domain/setup-check.js';

const NOW = new Date('2026-06-01T12:00:00Z');
const ACTIONS_APP = 15368;

const ledgerRules = (over: Partial<BranchRules> = {}): BranchRules => ({
  rules: ['creation', 'update', 'deletion', 'non_fast_forward'],
  requiredApprovals: undefined,
  bypass: { value: [{ source: 'Organization', actors: [{ type: 'Integration', id: ACTIONS_APP }] }] },
  ...over,
});

/** One ruleset over the records, kept by `source`, with `actors` in its bypass list. */
const bypassedBy = (source: string, ...actors: Array<{ type: string; id: number | null }>): Partial<BranchRules> => ({
  bypass: { value: [{ source, actors }] },
});
const ACTIONS = { type: 'Integration', id: ACTIONS_APP };
const JOB_TOKEN: LedgerWriter = { kind: 'job-token' };

const github = (over: Partial<GitHubSetupFacts> = {}): GitHubSetupFacts => ({
  platform: 'github',
  repository: 'acme/infra',
  approvalMode: 'environment',
  environment: { name: 'production', protection: { value: { requiredReviewers: true, preventSelfReview: true } } },
  ledgerRecords: {
    branch: 'exocomp-ledger-records/workflows/x.json',
    rules: { value: ledgerRules() },
    writer: JOB_TOKEN,
  },
  defaultBranch: {
    branch: 'main',
    rules: { value: { rules: ['pull_request', 'non_fast_forward'], requiredApprovals: 1, bypass: { value: [] } } },
  },
  secrets: { value: ['EXOCOMP_FLEET_KEY', 'EXOCOMP_BOOTSTRAP_KEY', 'EXOCOMP_SEAL_KEY'] },
  lastScheduledRun: { value: '2026-06-01T06:00:00Z' },
  ...over,
});

const gitlab = (over: Partial<GitLabSetupFacts> = {}): GitLabSetupFacts => ({
  platform: 'gitlab',
  project: 'acme/infra',
  approvalMode: 'manual',
  environment: { name: 'production', approvals: { value: { requiredApprovals: 1 } } },
  defaultBranch: 'main',
  ledgerRecordBranch: 'exocomp-ledger-records/workflows/x.json',
  protectedBranches: {
    value: [
      { name: 'main', pushLevels: [40], pushByOthers: false, allowForcePush: false },
      { name: 'exocomp-ledger-records/*', pushLevels: [0], pushByOthers: true, allowForcePush: false },
    ],
  },
  jobTokenPush: { value: false },
  variables: {
    value: [
      'EXOCOMP_FLEET_KEY',
      'EXOCOMP_BOOTSTRAP_KEY',
      'EXOCOMP_SEAL_KEY',
      'EXOCOMP_GITLAB_TOKEN',
      'EXOCOMP_LEDGER_TOKEN',
    ].map((key) => ({ key, protected: true, masked: !key.endsWith('_KEY'), file: key.endsWith('_KEY') })),
  },
  schedules: { value: [{ name: 'nightly', active: true, lastPipelineAt: '2026-06-01T03:17:00Z' }] },
  ...over,
});

function status(rows: SetupRow[], check: string): SetupRow['status'] | undefined {
  return rows.find((row) => row.check === check)?.status;
}

describe('judgeSetup: GitHub', () => {
  it('is all ok for a protected repository, every row with help', () => {
    const rows = judgeSetup(github(), NOW);
    expect(rows.every((row) => row.status === 'ok' && row.help.length > 0)).toBe(true);
    expect(gateWarnings(rows)).toEqual([]);
  });

  it.each([
    ['no environment', { value: undefined }, 'missing', 'missing'],
    ['no reviewers', { value: { requiredReviewers: false, preventSelfReview: false } }, 'missing', 'missing'],
    ['self-review allowed', { value: { requiredReviewers: true, preventSelfReview: false } }, 'ok', 'risky'],
    ['unreadable', { unreadable: 'grant actions: read' }, 'unreadable', undefined],
  ] as const)('environment: %s', (_, protection, reviewers, selfReview) => {
    const rows = judgeSetup(github({ environment: { name: 'production', protection } }), NOW);
    expect(status(rows, 'environment-reviewers')).toBe(reviewers);
    expect(status(rows, 'environment-self-review')).toBe(selfReview);
  });

  it('has no environment rows in dispatch mode', () => {
    const rows = judgeSetup(
      github({ approvalMode: 'dispatch', environment: { name: '', protection: { value: undefined } } }),
      NOW,
    );
    expect(rows.map((row) => row.check)).not.toContain('environment-reviewers');
  });

  it.each([
    ['no rules', ledgerRules({ rules: [] }), 'missing', 'missing'],
    ['updates only', ledgerRules({ rules: ['update'] }), 'risky', 'ok'],
    ['force pushes allowed', ledgerRules({ rules: ['creation', 'update', 'deletion'] }), 'risky', 'ok'],
    [
      'a role bypasses too',
      ledgerRules(bypassedBy('Organization', ACTIONS, { type: 'RepositoryRole', id: 5 })),
      'ok',
      'risky',
    ],
    [
      'an org admin bypasses too',
      ledgerRules(bypassedBy('Organization', ACTIONS, { type: 'OrganizationAdmin', id: null })),
      'ok',
      'risky',
    ],
    [
      'another app bypasses too',
      ledgerRules(bypassedBy('Organization', ACTIONS, { type: 'Integration', id: 1 })),
      'ok',
      'risky',
    ],
    [
      'only a role bypasses',
      ledgerRules(bypassedBy('Organization', { type: 'RepositoryRole', id: 5 })),
      'ok',
      'missing',
    ],
    ['bypass list hidden', ledgerRules({ bypass: { unreadable: 'an admin token' } }), 'ok', 'unreadable'],
  ] as const)('ledger records: %s', (_, rules, records, bypass) => {
    const rows = judgeSetup(
      github({ ledgerRecords: { branch: 'b', rules: { value: rules }, writer: JOB_TOKEN } }),
      NOW,
    );
    expect(status(rows, 'ledger-records')).toBe(records);
    expect(status(rows, 'ledger-bypass')).toBe(bypass);
  });

  // Issue 39: the arrangements GitHub accepts, and the one it refuses with 422.
  describe('who writes the ledger', () => {
    const judge = (writer: LedgerWriter, bypass: BranchRules['bypass']) =>
      judgeSetup(
        github({ ledgerRecords: { branch: 'b', rules: { value: ledgerRules({ bypass }) }, writer } }),
        NOW,
      ).find((row) => row.check === 'ledger-bypass')!;
    const APP: LedgerWriter = { kind: 'app', appId: 4242 };
    const app = { type: 'Integration', id: 4242 };

    it('the job token through an organization ruleset naming GitHub Actions: ok', () => {
      expect(judge(JOB_TOKEN, { value: [{ source: 'Organization', actors: [ACTIONS] }] }).status).toBe('ok');
    });

    it('a GitHub App token through a repository ruleset naming that app: ok', () => {
      const row = judge(APP, { value: [{ source: 'Repository', actors: [app] }] });
      expect(row).toMatchObject({ status: 'ok', detail: expect.stringContaining('GitHub App 4242') });
    });

    it('the 422 shape: a repository ruleset saved without GitHub Actions, the job token writing: missing, with both fixes', () => {
      const row = judge(JOB_TOKEN, { value: [{ source: 'Repository', actors: [] }] });
      expect(row.status).toBe('missing');
      expect(row.detail).toContain('GH013');
      expect(row.help).toContain('must be part of the ruleset source or owner organization');
      expect(row.help).toContain('organization ruleset');
      expect(row.help).toContain('GitHub App');
      expect(row.help).toContain('--ledger-app');
    });

    it('an organization ruleset without GitHub Actions: missing, naming that bypass list', () => {
      const row = judge(JOB_TOKEN, { value: [{ source: 'Organization', actors: [] }] });
      expect(row).toMatchObject({ status: 'missing', help: expect.stringContaining("organization's ruleset") });
    });

    it('every ruleset over the records must let the writer through: one of two without it is missing', () => {
      const row = judge(APP, {
        value: [
          { source: 'Repository', actors: [app] },
          { source: 'Organization', actors: [ACTIONS] },
        ],
      });
      expect(row).toMatchObject({ status: 'missing', help: expect.stringContaining('id 4242') });
    });

    it('the app writer with GitHub Actions also bypassing: risky', () => {
      expect(judge(APP, { value: [{ source: 'Repository', actors: [app, ACTIONS] }] }).status).toBe('risky');
    });

    it("a job's warning, which cannot tell its token: any app in each bypass list passes", () => {
      expect(judge({ kind: 'unknown' }, { value: [{ source: 'Repository', actors: [app] }] }).status).toBe('ok');
      expect(judge({ kind: 'unknown' }, { value: [{ source: 'Repository', actors: [] }] }).status).toBe('missing');
    });
  });

  it('a hidden bypass list is not a gate warning (no job token sees it); unprotected records are', () => {
    const hidden = judgeSetup(
      github({
        ledgerRecords: {
          branch: 'b',
          rules: { value: ledgerRules({ bypass: { unreadable: 'x' } }) },
          writer: JOB_TOKEN,
        },
      }),
      NOW,
    );
    expect(gateWarnings(hidden)).toEqual([]);
    const open = judgeSetup(
      github({ ledgerRecords: { branch: 'b', rules: { value: ledgerRules({ rules: [] }) }, writer: JOB_TOKEN } }),
      NOW,
    );
    expect(gateWarnings(open).map((row) => row.check)).toEqual(['ledger-records', 'ledger-bypass']);
  });

  it('names what to grant when the rules cannot be read', () => {
    const rows = judgeSetup(
      github({ ledgerRecords: { branch: 'b', rules: { unreadable: 'Grant metadata: read' }, writer: JOB_TOKEN } }),
      NOW,
    );
    expect(rows.find((row) => row.check === 'ledger-records')).toMatchObject({
      status: 'unreadable',
      help: 'Grant metadata: read',
      gate: true,
    });
  });

  it.each([
    ['no pull request rule', { rules: ['non_fast_forward'], requiredApprovals: undefined }, 'missing'],
    ['no approving review', { rules: ['pull_request', 'non_fast_forward'], requiredApprovals: 0 }, 'risky'],
    ['force pushes allowed', { rules: ['pull_request'], requiredApprovals: 2 }, 'risky'],
  ] as const)('default branch: %s', (_, rules, expected) => {
    const rows = judgeSetup(
      github({
        defaultBranch: {
          branch: 'main',
          rules: { value: { ...rules, rules: [...rules.rules], bypass: { value: [] } } },
        },
      }),
      NOW,
    );
    expect(status(rows, 'default-branch')).toBe(expected);
  });

  it('secrets: required ones missing, the seal key risky, unreadable names the grant; never gate rows', () => {
    const rows = judgeSetup(github({ secrets: { value: ['EXOCOMP_BOOTSTRAP_KEY'] } }), NOW);
    expect(status(rows, 'secret:EXOCOMP_FLEET_KEY')).toBe('missing');
    expect(status(rows, 'secret:EXOCOMP_SEAL_KEY')).toBe('risky');
    expect(gateWarnings(rows)).toEqual([]);
    expect(status(judgeSetup(github({ secrets: { unreadable: 'x' } }), NOW), 'secrets')).toBe('unreadable');
  });

  it.each([
    ['never ran', { value: undefined }, 'missing'],
    ['ran 8 days ago', { value: '2026-05-24T11:00:00Z' }, 'risky'],
    ['ran 6 days ago', { value: '2026-05-26T12:00:00Z' }, 'ok'],
    ['unreadable', { unreadable: 'x' }, 'unreadable'],
  ] as const)('schedules: %s', (_, lastScheduledRun, expected) => {
    expect(status(judgeSetup(github({ lastScheduledRun }), NOW), 'schedules')).toBe(expected);
  });

  it('the gate scope (no secrets, no schedules read) has no such rows', () => {
    const { secrets: _s, lastScheduledRun: _l, ...gate } = github();
    expect(judgeSetup(gate, NOW).map((row) => row.check)).toEqual([
      'environment-reviewers',
      'environment-self-review',
      'ledger-records',
      'ledger-bypass',
      'default-branch',
    ]);
  });
});

describe('judgeSetup: GitLab', () => {
  it('is all ok for a protected project', () => {
    expect(judgeSetup(gitlab(), NOW).filter((row) => row.status !== 'ok')).toEqual([]);
  });

  const branches = (value: GitLabSetupFacts extends { protectedBranches: infer R } ? R : never) => ({
    protectedBranches: value,
  });

  it.each([
    [
      'main unprotected',
      [{ name: 'exocomp-ledger-records/*', pushLevels: [40], pushByOthers: false, allowForcePush: false }],
      'missing',
      'ok',
    ],
    [
      'records unprotected',
      [{ name: 'main', pushLevels: [40], pushByOthers: false, allowForcePush: false }],
      'ok',
      'missing',
    ],
    [
      'developers push everywhere',
      [{ name: '*', pushLevels: [30], pushByOthers: false, allowForcePush: false }],
      'risky',
      'risky',
    ],
    [
      'force push allowed by a wildcard',
      [{ name: '*', pushLevels: [40], pushByOthers: false, allowForcePush: true }],
      'risky',
      'risky',
    ],
    [
      'one wildcard protects both',
      [{ name: '*', pushLevels: [40], pushByOthers: false, allowForcePush: false }],
      'ok',
      'ok',
    ],
  ] as const)('protected branches: %s', (_, value, gate, records) => {
    const rows = judgeSetup(
      gitlab(branches({ value: value.map((b) => ({ ...b, pushLevels: [...b.pushLevels] })) })),
      NOW,
    );
    expect(status(rows, 'manual-gate')).toBe(gate);
    expect(status(rows, 'ledger-records')).toBe(records);
  });

  it('unreadable protected branches name the token', () => {
    const rows = judgeSetup(gitlab({ protectedBranches: { unreadable: 'set EXOCOMP_GITLAB_TOKEN' } }), NOW);
    expect(status(rows, 'manual-gate')).toBe('unreadable');
    expect(status(rows, 'ledger-records')).toBe('unreadable');
  });

  it.each([
    ['not protected', { value: undefined }, 'missing'],
    ['no approvals', { value: { requiredApprovals: 0 } }, 'missing'],
    ['two approvals', { value: { requiredApprovals: 2 } }, 'ok'],
    ['unreadable', { unreadable: 'x' }, 'unreadable'],
  ] as const)('environment mode: %s', (_, approvals, expected) => {
    const rows = judgeSetup(
      gitlab({ approvalMode: 'environment', environment: { name: 'production', approvals } }),
      NOW,
    );
    expect(status(rows, 'environment-approvals')).toBe(expected);
    expect(status(rows, 'manual-gate')).toBeUndefined();
  });

  it('job-token push: on with protected records is ok, on with open records risky, off ok', () => {
    expect(status(judgeSetup(gitlab({ jobTokenPush: { value: true } }), NOW), 'job-token-push')).toBe('ok');
    const open = gitlab({
      jobTokenPush: { value: true },
      protectedBranches: { value: [{ name: 'main', pushLevels: [40], pushByOthers: false, allowForcePush: false }] },
    });
    expect(status(judgeSetup(open, NOW), 'job-token-push')).toBe('risky');
    expect(status(judgeSetup(gitlab({ jobTokenPush: { unreadable: 'x' } }), NOW), 'job-token-push')).toBe('unreadable');
  });

  it('a ledger in another project: its record branches and job-token push are judged there, named by that project', () => {
    const onlyMain = [{ name: 'main', pushLevels: [40], pushByOthers: false, allowForcePush: false }];
    const elsewhere = (protectedBranches: GitLabSetupFacts['protectedBranches'], jobTokenPush: boolean) =>
      judgeSetup(
        gitlab({
          protectedBranches: { value: onlyMain },
          ledger: { project: 'acme/ledger', protectedBranches, jobTokenPush: { value: jobTokenPush } },
        }),
        NOW,
      );
    const covered = elsewhere({ value: [{ ...onlyMain[0]!, name: 'exocomp-ledger-records/*' }] }, true);
    expect(covered.filter((row) => row.status !== 'ok')).toEqual([]);
    const open = elsewhere({ value: onlyMain }, true);
    expect(open.find((row) => row.check === 'ledger-records')).toMatchObject({ status: 'missing' });
    expect(open.find((row) => row.check === 'ledger-records')?.help).toMatch(/^.*acme\/ledger: Settings → Repository/);
    expect(open.find((row) => row.check === 'job-token-push')).toMatchObject({ status: 'risky' });
    expect(open.find((row) => row.check === 'job-token-push')?.help).toContain('acme/ledger: Settings → CI/CD');
    expect(status(open, 'manual-gate')).toBe('ok');
    expect(status(elsewhere({ unreadable: 'x' }, false), 'ledger-records')).toBe('unreadable');
  });

  it('variables: absent, unmasked, unprotected; and no credential at all for the ledger', () => {
    const rows = judgeSetup(
      gitlab({
        variables: {
          value: [
            { key: 'EXOCOMP_FLEET_KEY', protected: false, masked: false, file: true },
            { key: 'EXOCOMP_BOOTSTRAP_KEY', protected: true, masked: false, file: false },
            { key: 'EXOCOMP_GITLAB_TOKEN', protected: true, masked: false, file: true },
          ],
        },
      }),
      NOW,
    );
    expect(status(rows, 'variable:EXOCOMP_FLEET_KEY')).toBe('risky');
    expect(status(rows, 'variable:EXOCOMP_BOOTSTRAP_KEY')).toBe('risky');
    expect(rows.find((row) => row.check === 'variable:EXOCOMP_BOOTSTRAP_KEY')?.help).toContain('Type: File');
    // A File variable holds only a path in the job's environment: unmasked (GitLab cannot mask a key) is fine.
    expect(status(rows, 'variable:EXOCOMP_GITLAB_TOKEN')).toBe('ok');
    expect(status(rows, 'variable:EXOCOMP_SEAL_KEY')).toBe('risky');
    expect(status(rows, 'variable:ledger-credential')).toBe('missing');
    expect(status(judgeSetup(gitlab({ variables: { unreadable: 'x' } }), NOW), 'variables')).toBe('unreadable');
  });

  it.each([
    ['none', [], 'schedules', 'missing'],
    ['inactive', [{ name: 'n', active: false, lastPipelineAt: '2026-06-01T00:00:00Z' }], 'schedule:n', 'risky'],
    ['never fired', [{ name: 'n', active: true, lastPipelineAt: undefined }], 'schedule:n', 'risky'],
    ['stale', [{ name: 'n', active: true, lastPipelineAt: '2026-05-01T00:00:00Z' }], 'schedule:n', 'risky'],
  ] as const)('schedules: %s', (_, value, check, expected) => {
    expect(status(judgeSetup(gitlab({ schedules: { value: value.map((s) => ({ ...s })) } }), NOW), check)).toBe(
      expected,
    );
  });
});

describe('gitlabBranchMatches', () => {
  it.each([
    ['exocomp-ledger-records/*', 'exocomp-ledger-records/workflows/x.json', true],
    ['exocomp-ledger-records/*', 'exocomp-ledger', false],
    ['*', 'anything/at/all', true],
    ['main', 'main', true],
    ['main', 'maintenance', false],
    ['release-1.*', 'release-1x0', false],
    ['release-1.*', 'release-1.0', true],
  ])('%s vs %s', (pattern, branch, expected) => {
    expect(gitlabBranchMatches(pattern, branch)).toBe(expected);
  });
});
