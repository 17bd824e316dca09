import { Option, type Command } from 'commander';
import { z } from 'zod';
import { UsageError } from '../../domain/errors.js';
import { SecretRegistry } from '../../app/runtime/secrets.js';
import { DEFAULT_LEDGER_BRANCH } from '../../ledger/git-store.js';
import { gitlabJobEnv, shellExports } from '../../platform/gitlab/job-env.js';
import { readGitLabJob } from '../../platform/gitlab/job.js';
import { runGitLabJob, type GitLabJobKind } from '../../platform/gitlab/session.js';
import { parseOptions, type Io } from '../common.js';

const envOptions = z.object({
  ledgerProject: z.string().optional(),
  ledgerBranch: z.string().min(1),
  state: z.enum(['local', 'gitlab']),
  stateName: z.string().optional(),
});

const jsonOnly = z.object({ json: z.boolean() });

export function registerGitLab(program: Command, io: Io): void {
  const gitlab = program
    .command('gitlab')
    .description('the GitLab CI face: what the templates in templates/ run inside a job');

  gitlab
    .command('env')
    .description(
      'check that the job may push to the ledger (a dry run), then print `export` lines for eval: EXOCOMP_LEDGER, the git credentials, TF_HTTP_* with --state gitlab, and EXOCOMP_SHARD (i/N) in a job with `parallel: N`',
    )
    .addOption(
      new Option('--ledger-project <group/project>', "project holding the ledger branch (default: the job's project)"),
    )
    .addOption(new Option('--ledger-branch <name>', 'ledger branch').default(DEFAULT_LEDGER_BRANCH))
    .addOption(
      new Option('--state <kind>', '`gitlab`: the project’s GitLab-managed OpenTofu state (http backend)')
        .choices(['local', 'gitlab'])
        .default('local'),
    )
    .addOption(new Option('--state-name <name>', 'name of the GitLab-managed state (default: the workspace name)'))
    .addOption(new Option('--json', 'print {"result":{"variables":{…}}} instead of export lines').default(false))
    .action(async (raw: Record<string, unknown>) => {
      const { json, ...rest } = raw;
      const blankless = Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== ''));
      const parsed = envOptions.safeParse(blankless);
      if (!parsed.success) throw new UsageError(`invalid option: ${parsed.error.issues[0]?.message ?? 'bad value'}`);
      const options = parsed.data;
      if (options.state === 'gitlab' && options.stateName === undefined)
        throw new UsageError(
          '--state gitlab needs --state-name',
          'pass the workspace name, as GitLab’s OpenTofu component does',
        );
      const vars = await gitlabJobEnv({
        job: readGitLabJob(process.env),
        branch: options.ledgerBranch,
        ledgerProject: options.ledgerProject,
        env: process.env,
        secrets: new SecretRegistry(),
        state: options.state,
        stateName: options.stateName,
      });
      io.out(json === true ? JSON.stringify({ result: { variables: vars } }) : shellExports(vars));
    });

  const jobs: Array<[GitLabJobKind, string]> = [
    ['plan', 'plan and record the plan awaiting approval (starts the workflow; its id goes to the dotenv report)'],
    ['apply', 'pass the approval gate (EXOCOMP_APPROVAL: manual, environment or none) and apply the approved plan'],
    ['configure', 'run the steps after apply: ssh-wait, onboard, configure'],
    [
      'resume',
      'continue EXOCOMP_WORKFLOW_ID from where the ledger says it stands (the resume template, a triggered pipeline)',
    ],
    [
      'sweep',
      'start a pipeline (trigger API, EXOCOMP_WORKFLOW_ID) for every workflow a finished GitLab job left unfinished',
    ],
  ];
  for (const [kind, description] of jobs) {
    gitlab
      .command(kind)
      .description(`${description}; reads its settings from EXOCOMP_* CI/CD variables (see docs/gitlab.md)`)
      .addOption(new Option('--json', 'print {"result":{"code":N}} at the end').default(false))
      .action(async (raw: Record<string, unknown>) => {
        const options = parseOptions(jsonOnly, raw);
        const code = await runGitLabJob(kind);
        if (options.json) io.out(JSON.stringify({ result: { code } }));
        process.exitCode = code;
      });
  }
}
