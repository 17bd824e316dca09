import { relative, resolve } from 'node:path';
import { Option, type Command } from 'commander';
import { z } from 'zod';
import { UsageError } from '../../domain/errors.js';
import { quoteValue } from '../../domain/names.js';
import { parseShardNumber } from '../../domain/shard.js';
import {
  GITLAB_CONVERGE_COMPONENT,
  GITLAB_DRIFT_COMPONENT,
  GITLAB_DIR,
  DEFAULT_WORKFLOWS_DIR,
  parseScheduleName,
  parsePassthrough,
  type ScheduleSpec,
} from '../../domain/schedule.js';
import { DEFAULT_LEDGER_BRANCH } from '../../ledger/git-store.js';
import {
  addSchedule,
  listSchedules,
  removeSchedule,
  type AddScheduleResult,
  type ListSchedulesResult,
} from '../../app/schedules/schedules.js';
import { gitlabPipelineSchedules, type GitLabProjectRef } from '../../platform/gitlab/schedules.js';
import { parseOptions, type Io } from '../common.js';

function dirOption(): Option {
  return new Option(
    '--dir <dir>',
    `where the schedule files are (default ${DEFAULT_WORKFLOWS_DIR}, with --gitlab ${GITLAB_DIR})`,
  );
}

/** Where the schedule files are, and the GitLab project (defaults from the CI variables; the token only from EXOCOMP_GITLAB_TOKEN). */
const placeOptions = z.object({
  dir: z.string().optional(),
  gitlab: z.boolean(),
  gitlabUrl: z.string().optional(),
  gitlabProject: z.string().optional(),
  json: z.boolean(),
});

const shardCount = (what: string) => z.string().transform((raw) => parseShardNumber(raw, what));

const addOptions = placeOptions.extend({
  cron: z.string(),
  kind: z.string().transform((kind) => {
    if (kind !== 'play' && kind !== 'drift') {
      throw new UsageError(
        `--kind ${quoteValue(kind)} is not supported`,
        '--kind play fires a converge of the standing inventory, --kind drift its drift check',
      );
    }
    return kind;
  }),
  workspace: z.string().optional(),
  target: z.string(),
  concurrencyKey: z.string(),
  shards: shardCount('--shards').optional(),
  maxParallel: shardCount('--max-parallel').optional(),
  ledgerBranch: z.string(),
  gitlabTemplate: z.string().optional(),
  state: z.enum(['local', 'gitlab']).optional(),
  image: z.string().optional(),
  ledgerProject: z.string().optional(),
  print: z.boolean(),
  create: z.boolean(),
  gitlabRef: z.string().optional(),
  force: z.boolean(),
});

function scheduleDir(options: z.output<typeof placeOptions>): string {
  return resolve(process.cwd(), options.dir ?? (options.gitlab ? GITLAB_DIR : DEFAULT_WORKFLOWS_DIR));
}

/** GitLab connection options: the instance and project (defaults from the CI variables); the token only from EXOCOMP_GITLAB_TOKEN. */
function addGitLabProjectOptions(command: Command): Command {
  return command
    .addOption(
      new Option('--gitlab', 'GitLab: the pipeline schedule through the API (EXOCOMP_GITLAB_TOKEN, api scope)').default(
        false,
      ),
    )
    .addOption(new Option('--gitlab-url <url>', 'GitLab instance URL (default: $CI_SERVER_URL)'))
    .addOption(new Option('--gitlab-project <id-or-path>', 'project id or group/project (default: $CI_PROJECT_ID)'));
}

function gitlabProject(options: z.output<typeof placeOptions>): GitLabProjectRef {
  const serverUrl = options.gitlabUrl ?? process.env.CI_SERVER_URL;
  const project = options.gitlabProject ?? process.env.CI_PROJECT_ID;
  if (!serverUrl || !/^https?:\/\//.test(serverUrl))
    throw new UsageError(
      'no GitLab instance URL',
      'pass --gitlab-url https://gitlab.example.com (or run inside a GitLab job)',
    );
  if (!project)
    throw new UsageError(
      'no GitLab project',
      'pass --gitlab-project <id or group/project> (or run inside a GitLab job)',
    );
  return { serverUrl: serverUrl.replace(/\/+$/, ''), project };
}

function jsonOption(): Option {
  return new Option('--json', 'machine-readable output').default(false);
}

function renderAdded(io: Io, json: boolean, spec: ScheduleSpec, result: AddScheduleResult): void {
  const { cron, warning } = result;
  if (result.kind === 'printed') {
    if (json)
      io.out(
        JSON.stringify({
          result: { file: result.file, settings: result.settings, cron, ...(warning ? { warning } : {}) },
        }),
      );
    else io.out(`${result.file}\n${result.settings.trimEnd()}`);
  } else if (json) {
    const { path, state, created } = result;
    io.out(
      JSON.stringify({
        result: { path, state, cron, ...(created ? { schedule: created } : {}), ...(warning ? { warning } : {}) },
      }),
    );
  } else {
    const shown = relative(process.cwd(), result.path) || result.path;
    if (result.platform === 'github') {
      io.out(`${shown}: ${result.state} (cron '${cron}' UTC, ${spec.target}, concurrency key ${spec.concurrencyKey})`);
      io.err('commit and push this file yourself: a workflow token cannot push files under .github/workflows');
    } else {
      io.out(`${shown}: ${result.state} (cron '${cron}' UTC, ${spec.target}, resource group ${spec.concurrencyKey})`);
      if (result.created)
        io.out(
          `pipeline schedule ${result.created.id} created${result.created.replaced ? ` (replacing ${result.created.replaced})` : ''}`,
        );
      else io.err((result.settings ?? '').trimEnd());
      io.err(
        `include it from .gitlab-ci.yml (include: - local: ${relative(process.cwd(), result.path)}) and commit both`,
      );
    }
  }
  if (warning && !json) io.err(`warning: ${warning}`);
}

function renderList(io: Io, json: boolean, result: ListSchedulesResult): void {
  if (result.platform === 'gitlab') {
    const { schedules } = result;
    if (json) io.out(JSON.stringify({ result: { schedules } }));
    else if (schedules.length === 0) io.out(`no exocomp pipeline schedules in project ${result.project}`);
    else
      for (const s of schedules)
        io.out(
          `${s.name}\tschedule ${s.id}\tcron '${s.cron}' ${s.cronTimezone}\t${s.ref}\t${s.active ? 'active' : 'inactive'}\towner ${s.owner}`,
        );
    return;
  }
  const { schedules, errors } = result;
  if (json) io.out(JSON.stringify({ result: { schedules, errors } }));
  else if (schedules.length === 0 && errors.length === 0)
    io.out(`no schedules in ${relative(process.cwd(), result.dir) || result.dir}`);
  else {
    for (const s of schedules)
      io.out(
        `${s.name}\tcron '${s.cron}' UTC\t${s.target}\tkey ${s.concurrencyKey}\t${[s.playbook, ...s.args].join(' ')}`,
      );
    for (const e of errors) io.err(`error: ${e}`);
  }
  if (errors.length > 0) process.exitCode = 1;
}

export function registerSchedule(program: Command, io: Io): void {
  const schedule = program
    .command('schedule')
    .description('recurring converges of a standing inventory, as scheduled CI workflows');

  addGitLabProjectOptions(schedule.command('add'))
    .description(
      'write .github/workflows/exocomp-<name>.yml, or with --gitlab .gitlab/exocomp-<name>.yml (and --create its pipeline schedule); after -- give the playbook and --check/--limit/--tags',
    )
    .argument('<name>', 'schedule name: a-z, 0-9 and -')
    .argument('<playbook-and-flags...>', 'after --: the playbook, then --check, --limit <pattern>, --tags <tags>')
    .requiredOption('--cron <six fields>', "six-field cron, seconds first, in UTC, e.g. '0 17 3 * * *'")
    .requiredOption(
      '--kind <kind>',
      'what the schedule fires: play (a converge), or drift (the drift check of --workspace, with its sticky issue)',
    )
    .addOption(new Option('--workspace <dir>', 'with --kind drift: the workspace directory the check plans'))
    .requiredOption('--target <tf:name>', 'the standing inventory the play runs against')
    .requiredOption(
      '--concurrency-key <key>',
      'fires sharing a key never overlap (CI concurrency group and ledger lease)',
    )
    .addOption(dirOption())
    .addOption(
      new Option(
        '--shards <N>',
        "split the converge into N matrix jobs (GitLab: the template's parallel: N jobs), shard i holding the lease <key>/<i>, and a final job that folds their results",
      ),
    )
    .addOption(new Option('--max-parallel <M>', 'with --shards: at most M shard jobs at once'))
    .addOption(new Option('--ledger-branch <name>', 'ledger branch the converge reads').default(DEFAULT_LEDGER_BRANCH))
    .addOption(
      new Option(
        '--gitlab-template <component-or-path>',
        `with --gitlab: the template to include, a component or a .yml path in the project (default ${GITLAB_CONVERGE_COMPONENT}, for --kind drift ${GITLAB_DRIFT_COMPONENT})`,
      ),
    )
    .addOption(
      new Option(
        '--state <backend>',
        "with --gitlab --kind drift: the provision include's state input (gitlab: the project's GitLab-managed OpenTofu state)",
      ).choices(['local', 'gitlab']),
    )
    .addOption(new Option('--image <ref>', "with --gitlab: the provision include's image input (the job image)"))
    .addOption(
      new Option(
        '--ledger-project <group/project>',
        "with --gitlab: the provision include's ledger-project input (the project holding the ledger branch)",
      ),
    )
    .addOption(
      new Option(
        '--print',
        'with --gitlab: print the file and the schedule settings instead of writing the file',
      ).default(false),
    )
    .addOption(
      new Option(
        '--create',
        'with --gitlab: also create the pipeline schedule and its variable through the API',
      ).default(false),
    )
    .addOption(
      new Option(
        '--gitlab-ref <branch>',
        'with --create: the branch the schedule runs on (default: $CI_DEFAULT_BRANCH, else main)',
      ),
    )
    .addOption(
      new Option('--force', 'replace an existing schedule file (and, with --create, the pipeline schedule)').default(
        false,
      ),
    )
    .addOption(jsonOption())
    .action(async (rawName: string, words: string[], raw: Record<string, unknown>) => {
      const o = parseOptions(addOptions, raw);
      const { playbook, args } = parsePassthrough(words);
      if (!o.gitlab && (o.state !== undefined || o.image !== undefined || o.ledgerProject !== undefined))
        throw new UsageError('--state, --image and --ledger-project are inputs of the GitLab include', 'add --gitlab');
      const spec: ScheduleSpec = {
        name: parseScheduleName(rawName),
        cron: o.cron,
        target: o.target,
        concurrencyKey: o.concurrencyKey,
        playbook,
        args,
        ledgerBranch: o.ledgerBranch,
        ...(o.kind === 'drift'
          ? { kind: 'drift' as const, ...(o.workspace !== undefined ? { workspace: o.workspace } : {}) }
          : {}),
        ...(o.shards !== undefined ? { shards: o.shards } : {}),
        ...(o.maxParallel !== undefined ? { maxParallel: o.maxParallel } : {}),
      };
      const create =
        o.gitlab && o.create && !o.print
          ? {
              schedules: gitlabPipelineSchedules(gitlabProject(o), process.env),
              ref: o.gitlabRef ?? (process.env.CI_DEFAULT_BRANCH || 'main'),
            }
          : undefined;
      const result = await addSchedule({
        spec,
        dir: scheduleDir(o),
        cwd: process.cwd(),
        force: o.force,
        ...(o.gitlab
          ? {
              gitlab: {
                template: o.gitlabTemplate,
                state: o.state,
                image: o.image,
                ledgerProject: o.ledgerProject,
                print: o.print,
                create,
              },
            }
          : {}),
      });
      renderAdded(io, o.json, spec, result);
    });

  addGitLabProjectOptions(
    schedule
      .command('list')
      .description(
        'list the schedules generated in --dir, or with --gitlab the pipeline schedules exocomp created in the project',
      )
      .addOption(dirOption())
      .addOption(jsonOption()),
  ).action(async (raw: Record<string, unknown>) => {
    const o = parseOptions(placeOptions, raw);
    const result = await listSchedules({
      dir: scheduleDir(o),
      gitlab: o.gitlab ? gitlabPipelineSchedules(gitlabProject(o), process.env) : undefined,
    });
    renderList(io, o.json, result);
  });

  addGitLabProjectOptions(
    schedule
      .command('remove')
      .description(
        'delete .github/workflows/exocomp-<name>.yml, or with --gitlab the pipeline schedule and .gitlab/exocomp-<name>.yml (commit the deletion yourself)',
      )
      .argument('<name>', 'schedule name')
      .addOption(dirOption())
      .addOption(jsonOption()),
  ).action(async (rawName: string, raw: Record<string, unknown>) => {
    const name = parseScheduleName(rawName);
    const o = parseOptions(placeOptions, raw);
    const gitlab = o.gitlab ? gitlabPipelineSchedules(gitlabProject(o), process.env) : undefined;
    const result = await removeSchedule({ name, dir: scheduleDir(o), cwd: process.cwd(), gitlab });
    const shown = relative(process.cwd(), result.path);
    if (result.platform === 'github') {
      if (o.json) io.out(JSON.stringify({ result: { path: result.path, state: 'removed' } }));
      else io.out(`${shown}: removed (commit the deletion)`);
    } else if (o.json)
      io.out(
        JSON.stringify({
          result: { schedulesRemoved: result.schedulesRemoved, path: result.path, fileRemoved: result.fileRemoved },
        }),
      );
    else
      io.out(
        `removed ${result.schedulesRemoved} pipeline schedule(s)${result.fileRemoved ? ` and ${shown} (commit the deletion)` : ''}`,
      );
  });
}
