/**
 * `exocomp doctor --github | --gitlab`: reads the repository's or project's settings through the API and
 * prints one row per protection the approval gate relies on (ok / missing / risky / unreadable) with the setting
 * to change. Exit 1 when a row is missing or risky, so a pipeline can run it. Tokens come only from the
 * environment (GITHUB_TOKEN or GH_TOKEN; EXOCOMP_GITLAB_TOKEN), never from an argument.
 */
import { Option, type Command } from 'commander';
import { z } from 'zod';
import { UsageError } from '../../domain/errors.js';
import { parseLedgerName } from '../../domain/names.js';
import type { SetupRow } from '../../domain/setup-check.js';
import { checkSetup } from '../../app/setup/setup-check.js';
import { SecretRegistry } from '../../app/runtime/secrets.js';
import { DEFAULT_LEDGER_BRANCH } from '../../ledger/git-store.js';
import { createGitHub } from '../../platform/github/octokit.js';
import { githubSetupReader } from '../../platform/github/setup.js';
import { GITLAB_TOKEN_VARIABLE, GitLabApi, gitlabApiRoot } from '../../platform/gitlab/api.js';
import { gitlabSetupReader } from '../../platform/gitlab/setup.js';
import { parseOptions, type Io } from '../common.js';

const doctorOptions = z
  .object({
    github: z.union([z.string().regex(/^[^/\s]+\/[^/\s]+$/, 'owner/repo'), z.literal(true)]).optional(),
    gitlab: z.union([z.string().min(1), z.literal(true)]).optional(),
    gitlabUrl: z
      .string()
      .regex(/^https?:\/\//, 'an http(s) URL')
      .optional(),
    approvalMode: z.enum(['environment', 'dispatch', 'manual']).optional(),
    environment: z.string().min(1),
    defaultBranch: z.string().min(1),
    ledgerBranch: z.string().transform((raw) => parseLedgerName(raw)),
    ledgerApp: z.coerce.number().int().positive().optional(),
    json: z.boolean(),
  })
  .refine((o) => (o.github === undefined) !== (o.gitlab === undefined), {
    message: 'pass exactly one of --github and --gitlab',
  });

const MARK: Record<SetupRow['status'], string> = { ok: 'ok', missing: 'MISSING', risky: 'RISKY', unreadable: '?' };

export function registerDoctor(program: Command, io: Io): void {
  program
    .command('doctor')
    .description(
      "check the repository's or project's protections that make the approval gate meaningful (reads the API; exit 1 when one is missing or risky)",
    )
    .addOption(
      new Option(
        '--github [owner/repo]',
        'a GitHub repository (default: $GITHUB_REPOSITORY; token: $GITHUB_TOKEN or $GH_TOKEN)',
      ),
    )
    .addOption(
      new Option(
        '--gitlab [project]',
        `a GitLab project, id or group/project (default: $CI_PROJECT_ID; token: $${GITLAB_TOKEN_VARIABLE})`,
      ),
    )
    .addOption(new Option('--gitlab-url <url>', 'GitLab instance URL (default: $CI_SERVER_URL)'))
    .addOption(
      new Option(
        '--approval-mode <mode>',
        'the approval mode in use (GitHub: environment | dispatch; GitLab: manual | environment)',
      ),
    )
    .addOption(new Option('--environment <name>', 'the environment the apply job names').default('production'))
    .addOption(
      new Option('--default-branch <name>', 'GitHub: the default branch, which holds the approve workflow').default(
        'main',
      ),
    )
    .addOption(
      new Option('--ledger-branch <name>', 'ledger name (records on <name>-records/*)').default(DEFAULT_LEDGER_BRANCH),
    )
    .addOption(
      new Option(
        '--ledger-app <id>',
        "GitHub: the id of the GitHub App whose installation token (the actions' token input) writes the ledger; default: the jobs' GITHUB_TOKEN",
      ),
    )
    .addOption(new Option('--json', 'machine-readable output').default(false))
    .action(async (options: Record<string, unknown>) => {
      const o = parseOptions(doctorOptions, options);
      const rows = await checkSetup(o.github !== undefined ? githubReader(o) : gitlabReader(o), new Date());
      if (o.json) io.out(JSON.stringify({ rows }));
      else for (const line of renderRows(rows)) io.out(line);
      if (rows.some((row) => row.status === 'missing' || row.status === 'risky')) process.exitCode = 1;
    });
}

type DoctorOptions = z.output<typeof doctorOptions>;

function githubReader(o: DoctorOptions) {
  const slug = typeof o.github === 'string' ? o.github : process.env.GITHUB_REPOSITORY;
  const [owner, repo] = slug?.split('/') ?? [];
  if (!owner || !repo) throw new UsageError('no GitHub repository', 'pass --github owner/repo');
  const token = process.env.GITHUB_TOKEN || process.env.GH_TOKEN;
  if (!token)
    throw new UsageError('no GitHub token', 'export GITHUB_TOKEN (e.g. `export GITHUB_TOKEN=$(gh auth token)`)');
  const mode = o.approvalMode ?? 'environment';
  if (mode === 'manual')
    throw new UsageError('--approval-mode manual is GitLab’s', 'on GitHub: environment or dispatch');
  return githubSetupReader(createGitHub({ token }), {
    repository: { owner, repo },
    approvalMode: mode,
    environment: o.environment,
    defaultBranch: o.defaultBranch,
    ledgerBranch: o.ledgerBranch,
    ledgerWriter: o.ledgerApp === undefined ? { kind: 'job-token' } : { kind: 'app', appId: o.ledgerApp },
  });
}

function gitlabReader(o: DoctorOptions) {
  const serverUrl = (o.gitlabUrl ?? process.env.CI_SERVER_URL)?.replace(/\/+$/, '');
  const project = typeof o.gitlab === 'string' ? o.gitlab : process.env.CI_PROJECT_ID;
  if (!serverUrl) throw new UsageError('no GitLab instance URL', 'pass --gitlab-url https://gitlab.example.com');
  if (!project) throw new UsageError('no GitLab project', 'pass --gitlab <id or group/project>');
  const token = process.env[GITLAB_TOKEN_VARIABLE];
  if (!token)
    throw new UsageError(
      `no ${GITLAB_TOKEN_VARIABLE}`,
      `export ${GITLAB_TOKEN_VARIABLE} with a token with the read_api scope of a Maintainer`,
    );
  const mode = o.approvalMode ?? 'manual';
  if (mode === 'dispatch')
    throw new UsageError('--approval-mode dispatch is GitHub’s', 'on GitLab: manual or environment');
  return gitlabSetupReader(new GitLabApi(gitlabApiRoot(serverUrl), { accessToken: token }, new SecretRegistry()), {
    project,
    approvalMode: mode,
    environment: o.environment,
    ledgerBranch: o.ledgerBranch,
  });
}

/** One block per row: the verdict and what was checked, then what was found and the setting to change. */
export function renderRows(rows: readonly SetupRow[]): string[] {
  const width = Math.max(...rows.map((row) => MARK[row.status].length));
  const lines = rows.flatMap((row) => [
    `${MARK[row.status].padEnd(width)}  ${row.subject}: ${row.detail}`,
    ...(row.status === 'ok' ? [] : [`${' '.repeat(width)}  → ${row.help}`]),
  ]);
  const count = (status: SetupRow['status']) => rows.filter((row) => row.status === status).length;
  lines.push(
    `${count('ok')} ok, ${count('missing')} missing, ${count('risky')} risky${count('unreadable') ? `, ${count('unreadable')} unreadable` : ''}`,
  );
  return lines;
}
