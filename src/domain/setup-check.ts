/**
 * The setup check (`exocomp doctor`, and the warnings of the approve and plan jobs): what a CI platform's
 * settings say about the protections that make the approval gate meaningful, judged row by row. The faces read
 * the settings through their API adapters into `SetupFacts`; this module only judges, so one rule serves the
 * CLI table, `--json` and the job warnings. Every row names the setting to change.
 */

export type RowStatus = 'ok' | 'missing' | 'risky' | 'unreadable';

export interface SetupRow {
  /** A stable key, e.g. `ledger-records`; `--json` readers match on it. */
  check: string;
  /** What was looked at, e.g. `environment production`. */
  subject: string;
  status: RowStatus;
  /** What was found. */
  detail: string;
  /** The setting to change (for ok rows: what keeps it ok). */
  help: string;
  /** Whether the approval gate depends on it: the approve and plan jobs warn about these. */
  gate: boolean;
}

/** A setting as read: its value, or what to grant to read it (never a failure of the job or command). */
export type Read<T> = { value: T } | { unreadable: string };

/** The rules of the rulesets that apply to one branch (GitHub `GET …/rules/branches/{branch}`). */
export interface BranchRules {
  /** Rule types, e.g. `update`, `deletion`, `non_fast_forward`, `creation`, `pull_request`. */
  rules: string[];
  /** `required_approving_review_count` of the strictest `pull_request` rule, when there is one. */
  requiredApprovals: number | undefined;
  /** The rulesets those rules come from, with their bypass actors, or why those could not be read (only admins see them). */
  bypass: Read<RulesetBypass[]>;
}

/** One ruleset's bypass list and where the ruleset is kept (GitHub's `source_type`: `Repository`, `Organization`). */
export interface RulesetBypass {
  source: string;
  actors: Array<{ type: string; id: number | null }>;
}

/**
 * Who pushes the ledger's records: the jobs' GITHUB_TOKEN (the GitHub Actions app), a GitHub App's installation
 * token given as the `token` input, or not known (a job's warning, which cannot tell what its token is).
 */
export type LedgerWriter = { kind: 'job-token' } | { kind: 'app'; appId: number } | { kind: 'unknown' };

export interface GitHubSetupFacts {
  platform: 'github';
  repository: string;
  /** The approval mode the repository uses; the environment rows apply to `environment` only. */
  approvalMode: 'environment' | 'dispatch';
  environment: {
    name: string;
    protection: Read<{ requiredReviewers: boolean; preventSelfReview: boolean } | undefined>;
  };
  /** The rules over a record branch of the ledger (`exocomp-ledger-records/workflows/…`), and who writes them. */
  ledgerRecords: { branch: string; rules: Read<BranchRules>; writer: LedgerWriter };
  /** The rules over the default branch, which holds the approve workflow. */
  defaultBranch: { branch: string; rules: Read<BranchRules> };
  /** Names of the repository's and the environment's Actions secrets (never values). */
  secrets?: Read<string[]>;
  /** When a `schedule` run last started (ISO time), undefined when none ever did. */
  lastScheduledRun?: Read<string | undefined>;
}

/** A GitLab protected branch as the API lists it (`GET /projects/:id/protected_branches`). */
export interface ProtectedBranch {
  name: string;
  /** Role levels allowed to push (0 no one, 30 developers, 40 maintainers, 60 admins); users, groups and deploy keys are not roles. */
  pushLevels: number[];
  /** Whether individual users, groups or deploy keys are allowed to push besides the roles. */
  pushByOthers: boolean;
  allowForcePush: boolean;
}

export interface GitLabSetupFacts {
  platform: 'gitlab';
  project: string;
  /** `manual`: the apply job is `when: manual` on a protected branch; `environment`: a protected environment. */
  approvalMode: 'manual' | 'environment';
  environment: { name: string; approvals: Read<{ requiredApprovals: number } | undefined> };
  defaultBranch: string;
  /** A record branch of the ledger, to match the protected branches' wildcards against. */
  ledgerRecordBranch: string;
  protectedBranches: Read<ProtectedBranch[]>;
  /** "Allow Git push requests to the repository" (`ci_push_repository_for_job_token_allowed`). */
  jobTokenPush: Read<boolean>;
  /** The ledger's project, when not `project` (the ledger-project input): its record branches and job-token push. */
  ledger?: { project: string; protectedBranches: Read<ProtectedBranch[]>; jobTokenPush: Read<boolean> };
  /** CI/CD variables by name, with their flags (never values). */
  variables?: Read<VariableFlags[]>;
  /** The exocomp pipeline schedules and when each last started a pipeline (ISO time; undefined: never). */
  schedules?: Read<Array<{ name: string; active: boolean; lastPipelineAt: string | undefined }>>;
}

/** A CI/CD variable's flags; `file`: of type File (the job sees a path to a file holding the value). */
export interface VariableFlags {
  key: string;
  protected: boolean;
  masked: boolean;
  file: boolean;
}

export type SetupFacts = GitHubSetupFacts | GitLabSetupFacts;

/** A scheduled run older than this is taken for a schedule that stopped (GitHub disables crons of idle repositories). */
export const SCHEDULE_STALE_DAYS = 7;

const GITHUB_ACTIONS_APP_ID = 15368;
const LEDGER_RULES = ['creation', 'update', 'deletion', 'non_fast_forward'] as const;
const RULE_NAMES: Record<string, string> = {
  creation: 'Restrict creations',
  update: 'Restrict updates',
  deletion: 'Restrict deletions',
  non_fast_forward: 'Block force pushes',
};

/** Judges every row; `now` dates the schedule rows. */
export function judgeSetup(facts: SetupFacts, now: Date): SetupRow[] {
  return facts.platform === 'github' ? judgeGitHub(facts, now) : judgeGitLab(facts, now);
}

/** The rows the approve and plan jobs print: those the gate depends on that are not ok. */
export function gateWarnings(rows: readonly SetupRow[]): SetupRow[] {
  return rows.filter((row) => row.gate && row.status !== 'ok');
}

function unreadable(check: string, subject: string, grant: string, gate: boolean): SetupRow {
  return { check, subject, status: 'unreadable', detail: 'the API refused to show it', help: grant, gate };
}

function judgeGitHub(facts: GitHubSetupFacts, now: Date): SetupRow[] {
  const rows: SetupRow[] = [];
  const slug = facts.repository;
  if (facts.approvalMode === 'environment') rows.push(...environmentRows(facts));
  rows.push(...ledgerRows(facts, slug));
  rows.push(defaultBranchRow(facts, slug));
  if (facts.secrets) rows.push(...secretRows(facts.secrets, slug, facts.environment.name));
  if (facts.lastScheduledRun) rows.push(scheduleRow(facts.lastScheduledRun, now, slug));
  return rows;
}

function environmentRows(facts: GitHubSetupFacts): SetupRow[] {
  const { name, protection } = facts.environment;
  const subject = `environment ${name}`;
  const where = `${facts.repository}: Settings → Environments → ${name}`;
  if ('unreadable' in protection) return [unreadable('environment-reviewers', subject, protection.unreadable, true)];
  const found = protection.value;
  const reviewers: SetupRow = {
    check: 'environment-reviewers',
    subject,
    gate: true,
    ...(found === undefined
      ? {
          status: 'missing',
          detail: 'the environment does not exist',
          help: `create it: ${where}, with Required reviewers`,
        }
      : found.requiredReviewers
        ? { status: 'ok', detail: 'required reviewers are set', help: `keep Required reviewers on (${where})` }
        : { status: 'missing', detail: 'no required reviewers', help: `${where} → Required reviewers` }),
  };
  const selfReview: SetupRow = {
    check: 'environment-self-review',
    subject,
    gate: true,
    ...(found?.requiredReviewers !== true
      ? {
          status: 'missing',
          detail: 'no reviewers, so nothing prevents self-review',
          help: `${where} → Required reviewers, then Prevent self-review`,
        }
      : found.preventSelfReview
        ? { status: 'ok', detail: 'self-review is prevented', help: `keep Prevent self-review on (${where})` }
        : {
            status: 'risky',
            detail: 'self-review is allowed: whoever pushed may approve their own deployment',
            help: `${where} → Prevent self-review (exocomp refuses self-approval meanwhile unless self-review: warn)`,
          }),
  };
  return [reviewers, selfReview];
}

function ledgerRows(facts: GitHubSetupFacts, slug: string): SetupRow[] {
  const { branch, rules, writer } = facts.ledgerRecords;
  const subject = `ledger records (${branch})`;
  const setting =
    `${slug}: Settings → Rules → Rulesets → New branch ruleset targeting \`exocomp-ledger-records/**/*\` ` +
    '(a single * stops at the first /) with Restrict creations, Restrict updates, Restrict deletions and Block force pushes';
  if ('unreadable' in rules)
    return [
      unreadable('ledger-records', subject, rules.unreadable, true),
      unreadable('ledger-bypass', subject, rules.unreadable, true),
    ];
  const on = LEDGER_RULES.filter((rule) => rules.value.rules.includes(rule));
  const off = LEDGER_RULES.filter((rule) => !on.includes(rule));
  const records: SetupRow = {
    check: 'ledger-records',
    subject,
    gate: true,
    ...(on.length === 0
      ? {
          status: 'missing',
          detail: 'no ruleset covers the record branches: anyone with write access can push a record',
          help: setting,
        }
      : off.length === 0
        ? {
            status: 'ok',
            detail: 'a ruleset restricts creations, updates, deletions and force pushes',
            help: 'keep the ruleset active',
          }
        : {
            status: 'risky',
            detail: `a ruleset covers them without ${off.map((rule) => RULE_NAMES[rule]).join(', ')}`,
            help: `${slug}: Settings → Rules → Rulesets → the ruleset over exocomp-ledger-records → add ${off.map((rule) => RULE_NAMES[rule]).join(', ')}`,
          }),
  };
  return [records, bypassRow('ledger-bypass', subject, rules.value, on.length > 0, slug, writer)];
}

function writerName(writer: LedgerWriter): string {
  if (writer.kind === 'app') return `GitHub App ${writer.appId} (its installation token as the token input)`;
  return writer.kind === 'job-token' ? "the GitHub Actions app (the jobs' GITHUB_TOKEN)" : 'a GitHub App';
}

function isWriter(writer: LedgerWriter, actor: { type: string; id: number | null }): boolean {
  if (actor.type !== 'Integration') return false;
  if (writer.kind === 'app') return actor.id === writer.appId;
  return writer.kind === 'job-token' ? actor.id === GITHUB_ACTIONS_APP_ID : true;
}

/**
 * How to let the writer through every ruleset over the records. GitHub takes the GitHub Actions app as a
 * bypass actor only in a ruleset kept by an organization: a repository ruleset answers 422 "Actor GitHub Actions
 * integration must be part of the ruleset source or owner organization", and a personal account has no
 * organization rulesets. A GitHub App installed on the repository is accepted in either (docs/github.md).
 */
function bypassFix(writer: LedgerWriter, lacking: readonly RulesetBypass[], slug: string): string {
  const app =
    'write the ledger as a GitHub App instead: create one with Contents: write, Pull requests: write and Actions: read, ' +
    "install it on the repository, add it to the ruleset's bypass list (Bypass list → Add bypass → Apps), pass its " +
    'installation token as the token input (actions/create-github-app-token) and run doctor with --ledger-app <app id>';
  if (writer.kind === 'app')
    return `${slug}: Settings → Rules → Rulesets → the ruleset over exocomp-ledger-records → Bypass list → Add bypass → Apps → the app with id ${writer.appId}`;
  if (writer.kind === 'unknown') return `add the GitHub App whose token writes the ledger to the ruleset's bypass list`;
  if (lacking.some((ruleset) => ruleset.source !== 'Organization'))
    return (
      'GitHub accepts the GitHub Actions app as a bypass actor only in an organization ruleset (a repository ruleset ' +
      'answers 422 "Actor GitHub Actions integration must be part of the ruleset source or owner organization"): ' +
      `keep the records' ruleset in the organization (Organization settings → Repository → Rulesets, targeting ${slug}) with ` +
      `GitHub Actions as its only bypass actor, or — on a personal account, or to keep the ruleset in the repository — ${app}`
    );
  return `the organization's ruleset over exocomp-ledger-records → Bypass list → Add bypass → Apps → GitHub Actions`;
}

function bypassRow(
  check: string,
  subject: string,
  rules: BranchRules,
  covered: boolean,
  slug: string,
  writer: LedgerWriter,
): SetupRow {
  const base = { check, subject: `who may bypass: ${subject}`, gate: true };
  if (!covered)
    return {
      ...base,
      status: 'missing',
      detail: 'no ruleset, so every writer may push',
      help: 'add the ruleset first',
    };
  if ('unreadable' in rules.bypass)
    return { ...unreadable(check, base.subject, rules.bypass.unreadable, true), gate: false };
  // A push must pass every ruleset over the branch, so the writer has to be in each one's bypass list.
  const lacking = rules.bypass.value.filter((ruleset) => !ruleset.actors.some((actor) => isWriter(writer, actor)));
  if (lacking.length > 0)
    return {
      ...base,
      status: 'missing',
      detail: `${writerName(writer)} may not bypass ${lacking.length === 1 ? 'a ruleset' : `${lacking.length} rulesets`} over the records (${lacking.map((ruleset) => `${ruleset.source.toLowerCase()} ruleset`).join(', ')}): its ledger writes are refused (GH013)`,
      help: bypassFix(writer, lacking, slug),
    };
  const others = [
    ...new Set(
      rules.bypass.value
        .flatMap((ruleset) => ruleset.actors)
        .filter((actor) => !isWriter(writer, actor))
        .map((actor) => (actor.id === null ? actor.type : `${actor.type} ${actor.id}`)),
    ),
  ];
  return others.length === 0
    ? {
        ...base,
        status: 'ok',
        detail: `only ${writerName(writer)} may bypass`,
        help: `keep the bypass list to ${writerName(writer)}`,
      }
    : {
        ...base,
        status: 'risky',
        detail: `also bypassed by ${others.join(', ')}`,
        help: `${slug}: Settings → Rules → Rulesets → the ruleset → Bypass list: keep only ${writerName(writer)}`,
      };
}

function defaultBranchRow(facts: GitHubSetupFacts, slug: string): SetupRow {
  const { branch, rules } = facts.defaultBranch;
  const subject = `approve workflow (default branch ${branch})`;
  // The approve workflow decides only from the default branch (dispatch mode); in environment mode the branch
  // still holds the workflows that get `contents: write`, so a reviewed default branch matters to both.
  if ('unreadable' in rules) return unreadable('default-branch', subject, rules.unreadable, true);
  const setting = `${slug}: Settings → Rules → Rulesets → New branch ruleset targeting the default branch with Require a pull request before merging (1 approval or more) and Block force pushes`;
  const base = { check: 'default-branch', subject, gate: true };
  if (!rules.value.rules.includes('pull_request'))
    return {
      ...base,
      status: 'missing',
      detail: 'no ruleset requires a reviewed pull request: anyone with write access can change the approve workflow',
      help: setting,
    };
  if ((rules.value.requiredApprovals ?? 0) < 1)
    return {
      ...base,
      status: 'risky',
      detail: 'pull requests are required but need no approving review',
      help: `${slug}: Settings → Rules → Rulesets → the default branch's ruleset → Required approvals: 1 or more`,
    };
  if (!rules.value.rules.includes('non_fast_forward'))
    return {
      ...base,
      status: 'risky',
      detail: 'force pushes are not blocked',
      help: `${slug}: Settings → Rules → Rulesets → the default branch's ruleset → Block force pushes`,
    };
  return {
    ...base,
    status: 'ok',
    detail: `a reviewed pull request (${rules.value.requiredApprovals} approval(s)) is required`,
    help: 'keep the ruleset active',
  };
}

/** The secrets the workflows read (docs/github.md, "Secrets"): required ones are missing when absent, the seal key risky. */
const GITHUB_SECRETS: Array<{ name: string; required: boolean; why: string }> = [
  { name: 'EXOCOMP_FLEET_KEY', required: true, why: 'the fleet key the plays log in with' },
  { name: 'EXOCOMP_BOOTSTRAP_KEY', required: true, why: 'the key new hosts accept first' },
  {
    name: 'EXOCOMP_SEAL_KEY',
    required: false,
    why: 'without it plans travel unsealed (the apply re-plans) and sensitive outputs are dropped',
  },
];

function secretRows(secrets: Read<string[]>, slug: string, environment: string): SetupRow[] {
  if ('unreadable' in secrets) return [unreadable('secrets', 'secrets', secrets.unreadable, false)];
  return GITHUB_SECRETS.map(({ name, required, why }) => {
    const base = { check: `secret:${name}`, subject: `secret ${name}`, gate: false };
    if (secrets.value.includes(name)) return { ...base, status: 'ok', detail: 'present (value not read)', help: why };
    return {
      ...base,
      status: required ? 'missing' : 'risky',
      detail: `absent: ${why}`,
      help: `${slug}: Settings → Environments → ${environment} → Environment secrets → Add ${name} (or Settings → Secrets and variables → Actions)`,
    };
  });
}

function scheduleRow(last: Read<string | undefined>, now: Date, slug: string): SetupRow {
  const base = { check: 'schedules', subject: 'scheduled runs (resume sweeper, converge, drift)', gate: false };
  if ('unreadable' in last) return { ...unreadable(base.check, base.subject, last.unreadable, false) };
  if (last.value === undefined)
    return {
      ...base,
      status: 'missing',
      detail: 'no scheduled run ever started',
      help: `add \`on: schedule\` to the resume sweeper (examples/github/resume-sweeper.yml) on ${slug}'s default branch`,
    };
  const age = ageInDays(last.value, now);
  return age > SCHEDULE_STALE_DAYS
    ? {
        ...base,
        status: 'risky',
        detail: `the last scheduled run started ${last.value} (${Math.floor(age)} days ago)`,
        help: `${slug}: Actions → the scheduled workflow → Enable workflow (GitHub disables schedules of repositories idle for 60 days)`,
      }
    : { ...base, status: 'ok', detail: `the last scheduled run started ${last.value}`, help: 'nothing to change' };
}

function ageInDays(iso: string, now: Date): number {
  return (now.getTime() - Date.parse(iso)) / 86_400_000;
}

/** GitLab's protected-branch wildcard: `*` matches any run of characters, `/` included. */
export function gitlabBranchMatches(pattern: string, branch: string): boolean {
  const regex = pattern
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${regex}$`).test(branch);
}

const DEVELOPER = 30;

function judgeGitLab(facts: GitLabSetupFacts, now: Date): SetupRow[] {
  const rows: SetupRow[] = [];
  const project = facts.project;
  const protectedPage = `${project}: Settings → Repository → Protected branches`;
  const protection = (
    branch: string,
    rules: Read<ProtectedBranch[]> = facts.protectedBranches,
  ): Read<ProtectedBranch | undefined> =>
    'unreadable' in rules ? rules : { value: rules.value.find((rule) => gitlabBranchMatches(rule.name, branch)) };
  const ledger = facts.ledger ?? {
    project,
    protectedBranches: facts.protectedBranches,
    jobTokenPush: facts.jobTokenPush,
  };
  const ledgerPage = `${ledger.project}: Settings → Repository → Protected branches`;

  if (facts.approvalMode === 'manual') {
    const found = protection(facts.defaultBranch);
    const subject = `manual apply gate (branch ${facts.defaultBranch})`;
    rows.push(
      'unreadable' in found
        ? unreadable('manual-gate', subject, found.unreadable, true)
        : branchRow('manual-gate', subject, found.value, true, {
            missing: `the branch is not protected: exocomp refuses a manual apply there, and anyone with the Developer role could run it; ${protectedPage} → protect ${facts.defaultBranch}, allowed to merge and push: the approvers (Maintainers)`,
            developers: `${protectedPage} → ${facts.defaultBranch}: allowed to push and merge → Maintainers (only the approvers)`,
          }),
    );
  } else {
    const { name, approvals } = facts.environment;
    const subject = `protected environment ${name}`;
    const where = `${project}: Settings → CI/CD → Protected environments`;
    rows.push(
      'unreadable' in approvals
        ? unreadable('environment-approvals', subject, approvals.unreadable, true)
        : approvals.value === undefined
          ? {
              check: 'environment-approvals',
              subject,
              gate: true,
              status: 'missing',
              detail: 'the environment is not protected',
              help: `${where} → Protect an environment: ${name}, with Required approvals 1 or more`,
            }
          : approvals.value.requiredApprovals < 1
            ? {
                check: 'environment-approvals',
                subject,
                gate: true,
                status: 'missing',
                detail: 'protected without required approvals',
                help: `${where} → ${name} → Required approvals: 1 or more`,
              }
            : {
                check: 'environment-approvals',
                subject,
                gate: true,
                status: 'ok',
                detail: `${approvals.value.requiredApprovals} approval(s) required`,
                help: 'keep the protection',
              },
    );
  }

  const records = protection(facts.ledgerRecordBranch, ledger.protectedBranches);
  const recordsSubject = `ledger records (${facts.ledgerRecordBranch})`;
  rows.push(
    'unreadable' in records
      ? unreadable('ledger-records', recordsSubject, records.unreadable, true)
      : branchRow('ledger-records', recordsSubject, records.value, true, {
          missing: `no protected branch covers the record branches: anyone with the Developer role can push a record; ${ledgerPage} → protect \`exocomp-ledger-records/*\` (and exocomp-ledger), allowed to push: Maintainers or the ledger's token/deploy key, force push off`,
          developers: `${ledgerPage} → exocomp-ledger-records/*: allowed to push → Maintainers, or the ledger's project access token or deploy key`,
        }),
  );
  rows.push(jobTokenRow(ledger.jobTokenPush, records, ledger.project));
  if (facts.variables) rows.push(...variableRows(facts.variables, ledger.jobTokenPush, project));
  if (facts.schedules) rows.push(...gitlabScheduleRows(facts.schedules, now, project));
  return rows;
}

function branchRow(
  check: string,
  subject: string,
  rule: ProtectedBranch | undefined,
  gate: boolean,
  help: { missing: string; developers: string },
): SetupRow {
  const base = { check, subject, gate };
  if (rule === undefined) return { ...base, status: 'missing', detail: 'not protected', help: help.missing };
  if (rule.pushLevels.some((level) => level > 0 && level <= DEVELOPER))
    return {
      ...base,
      status: 'risky',
      detail: `protected by ${rule.name}, but Developers may push`,
      help: help.developers,
    };
  if (rule.allowForcePush)
    return {
      ...base,
      status: 'risky',
      detail: `protected by ${rule.name}, with force push allowed`,
      help: `${help.developers}; turn Allowed to force push off`,
    };
  const who =
    rule.pushLevels.includes(0) && !rule.pushByOthers ? 'no one' : 'Maintainers or named users, groups or deploy keys';
  return { ...base, status: 'ok', detail: `protected by ${rule.name}; ${who} may push`, help: 'keep the protection' };
}

function jobTokenRow(
  jobTokenPush: Read<boolean>,
  records: Read<ProtectedBranch | undefined>,
  project: string,
): SetupRow {
  const base = {
    check: 'job-token-push',
    subject: 'job token push ("Allow Git push requests to the repository")',
    gate: true,
  };
  const setting = `${project}: Settings → CI/CD → Job token permissions → Allow Git push requests to the repository`;
  if ('unreadable' in jobTokenPush) return unreadable(base.check, base.subject, jobTokenPush.unreadable, true);
  if (!jobTokenPush.value)
    return {
      ...base,
      status: 'ok',
      detail: 'off: jobs push the ledger with EXOCOMP_LEDGER_TOKEN or EXOCOMP_LEDGER_DEPLOY_KEY',
      help: `to let the job token write the ledger instead: ${setting}`,
    };
  const protectedRecords = !('unreadable' in records) && records.value !== undefined;
  return protectedRecords
    ? {
        ...base,
        status: 'ok',
        detail: 'on; the record branches are protected',
        help: 'keep the record branches protected',
      }
    : {
        ...base,
        status: 'risky',
        detail: "on while the record branches are unprotected: any job of any branch's pipeline can push a record",
        help: `protect exocomp-ledger-records/* (above), or turn off ${setting} and give EXOCOMP_LEDGER_TOKEN`,
      };
}

/**
 * The CI/CD variables the templates read (docs/gitlab.md, "What the jobs need"). `multiLine`: a private key, which
 * GitLab cannot mask (a masked value must be one line of at least 8 characters from the Base64 alphabet and
 * `@:.~-`, https://docs.gitlab.com/ci/variables/#mask-a-cicd-variable), so it is kept as a File variable instead:
 * the job's environment then holds only a path, never the key.
 */
const GITLAB_VARIABLES: Array<{ key: string; required: boolean; multiLine: boolean; why: string }> = [
  { key: 'EXOCOMP_FLEET_KEY', required: true, multiLine: true, why: 'the fleet key the plays log in with' },
  { key: 'EXOCOMP_BOOTSTRAP_KEY', required: true, multiLine: true, why: 'the key new hosts accept first' },
  {
    key: 'EXOCOMP_SEAL_KEY',
    required: false,
    multiLine: false,
    why: 'without it plans travel unsealed (the apply re-plans) and sensitive outputs are dropped',
  },
  {
    key: 'EXOCOMP_GITLAB_TOKEN',
    required: false,
    multiLine: false,
    why: 'without it there is no MR note, no drift issue and no schedules',
  },
];

function variableRows(
  variables: NonNullable<GitLabSetupFacts['variables']>,
  jobTokenPush: Read<boolean>,
  project: string,
): SetupRow[] {
  if ('unreadable' in variables) return [unreadable('variables', 'CI/CD variables', variables.unreadable, false)];
  const where = `${project}: Settings → CI/CD → Variables`;
  const rows = GITLAB_VARIABLES.map(({ key, required, multiLine, why }): SetupRow => {
    const base = { check: `variable:${key}`, subject: `variable ${key}`, gate: false };
    const found = variables.value.find((variable) => variable.key === key);
    const kept = multiLine ? 'Type File, Protect variable' : 'Type File or masked, Protect variable';
    if (!found)
      return {
        ...base,
        status: required ? 'missing' : 'risky',
        detail: `absent: ${why}`,
        help: `${where} → Add variable ${key} (${kept})`,
      };
    // A File variable's value never enters the environment (only its path does), which is what masking guards.
    const hidden = found.masked || found.file;
    if (!hidden || !found.protected)
      return {
        ...base,
        status: 'risky',
        detail: `present but ${[hidden ? '' : 'neither masked nor a File variable', found.protected ? '' : 'not protected'].filter(Boolean).join(' and ')}`,
        help: `${where} → ${key} → ${[hidden ? '' : multiLine ? 'Type: File (GitLab cannot mask a key)' : 'Mask variable (or Type: File)', found.protected ? '' : 'Protect variable (so only protected branches’ pipelines get it)'].filter(Boolean).join(', ')}`,
      };
    const how = found.masked ? 'masked' : 'a File variable';
    return { ...base, status: 'ok', detail: `present, ${how} and protected (value not read)`, help: why };
  });
  const pushOff = !('unreadable' in jobTokenPush) && !jobTokenPush.value;
  const credential = variables.value.some(
    (v) => v.key === 'EXOCOMP_LEDGER_TOKEN' || v.key === 'EXOCOMP_LEDGER_DEPLOY_KEY',
  );
  if (pushOff && !credential)
    rows.push({
      check: 'variable:ledger-credential',
      subject: 'ledger credential',
      gate: false,
      status: 'missing',
      detail:
        'the job token may not push and neither EXOCOMP_LEDGER_TOKEN nor EXOCOMP_LEDGER_DEPLOY_KEY is set: no job can write the ledger',
      help: `${where} → Add EXOCOMP_LEDGER_TOKEN (write_repository), or turn on job token pushes`,
    });
  return rows;
}

function gitlabScheduleRows(
  schedules: NonNullable<GitLabSetupFacts['schedules']>,
  now: Date,
  project: string,
): SetupRow[] {
  const base = { check: 'schedules', subject: 'pipeline schedules', gate: false };
  if ('unreadable' in schedules) return [unreadable(base.check, base.subject, schedules.unreadable, false)];
  if (schedules.value.length === 0)
    return [
      {
        ...base,
        status: 'missing',
        detail: 'no exocomp pipeline schedule',
        help: `exocomp schedule add --gitlab … (or ${project}: Build → Pipeline schedules)`,
      },
    ];
  return schedules.value.map((schedule): SetupRow => {
    const row = { ...base, check: `schedule:${schedule.name}`, subject: `schedule ${schedule.name}` };
    if (!schedule.active)
      return {
        ...row,
        status: 'risky',
        detail: 'inactive',
        help: `${project}: Build → Pipeline schedules → exocomp ${schedule.name} → Activate`,
      };
    if (schedule.lastPipelineAt === undefined)
      return {
        ...row,
        status: 'risky',
        detail: 'active, never fired yet',
        help: `check its cron and owner (${project}: Build → Pipeline schedules)`,
      };
    const age = ageInDays(schedule.lastPipelineAt, now);
    return age > SCHEDULE_STALE_DAYS
      ? {
          ...row,
          status: 'risky',
          detail: `last fired ${schedule.lastPipelineAt} (${Math.floor(age)} days ago)`,
          help: `its owner may have lost access: take ownership (${project}: Build → Pipeline schedules)`,
        }
      : { ...row, status: 'ok', detail: `last fired ${schedule.lastPipelineAt}`, help: 'nothing to change' };
  });
}
