import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { Option, type Command } from 'commander';
import { describeMinuteWarning } from '../../domain/cron.js';
import { describeError, ExocompError, UsageError } from '../../domain/errors.js';
import { quoteValue } from '../../domain/names.js';
import { parseShardNumber } from '../../domain/shard.js';
import {
  describeGitLabIntervalWarning,
  GITLAB_CONVERGE_COMPONENT,
  GITLAB_DRIFT_COMPONENT,
  GITLAB_DIR,
  DEFAULT_WORKFLOWS_DIR,
  parseScheduleName,
  parsePassthrough,
  readGitHubSchedule,
  renderGitHubSchedule,
  renderGitLabSchedule,
  SCHEDULE_FILE_PREFIX,
  scheduleFileName,
  validateScheduleSpec,
  type ScheduleSpec,
  type ScheduleSummary,
} from '../../domain/schedule.js';
import { DEFAULT_LEDGER_BRANCH } from '../../ledger/git-store.js';
import { createExocompSchedule, listExocompSchedules, removeExocompSchedule, scheduleApi, type GitLabProjectRef } from '../../platform/gitlab/schedules.js';
import type { Io } from '../common.js';

function dirOption(): Option {
  return new Option('--dir <dir>', `where the schedule files are (default ${DEFAULT_WORKFLOWS_DIR}, with --gitlab ${GITLAB_DIR})`);
}

function scheduleDir(options: Record<string, unknown>): string {
  const fallback = options.gitlab === true ? GITLAB_DIR : DEFAULT_WORKFLOWS_DIR;
  return resolve(process.cwd(), typeof options.dir === 'string' ? options.dir : fallback);
}

/** GitLab connection options: the instance and project (defaults from the CI variables); the token only from EXOCOMP_GITLAB_TOKEN. */
function addGitLabProjectOptions(command: Command): Command {
  return command
    .addOption(new Option('--gitlab', 'GitLab: the pipeline schedule through the API (EXOCOMP_GITLAB_TOKEN, api scope)').default(false))
    .addOption(new Option('--gitlab-url <url>', 'GitLab instance URL (default: $CI_SERVER_URL)'))
    .addOption(new Option('--gitlab-project <id-or-path>', 'project id or group/project (default: $CI_PROJECT_ID)'));
}

function gitlabProject(options: Record<string, unknown>): GitLabProjectRef {
  const serverUrl = typeof options.gitlabUrl === 'string' ? options.gitlabUrl : process.env.CI_SERVER_URL;
  const project = typeof options.gitlabProject === 'string' ? options.gitlabProject : process.env.CI_PROJECT_ID;
  if (!serverUrl || !/^https?:\/\//.test(serverUrl)) throw new UsageError('no GitLab instance URL', 'pass --gitlab-url https://gitlab.example.com (or run inside a GitLab job)');
  if (!project) throw new UsageError('no GitLab project', 'pass --gitlab-project <id or group/project> (or run inside a GitLab job)');
  return { serverUrl: serverUrl.replace(/\/+$/, ''), project };
}

function jsonOption(): Option {
  return new Option('--json', 'machine-readable output').default(false);
}

async function readIfExists(path: string): Promise<string | undefined> {
  return readFile(path, 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
}

/** Writes a generated file: `created`, `unchanged`, or `replaced` (only with force). */
async function writeScheduleFile(path: string, text: string, force: boolean): Promise<'created' | 'unchanged' | 'replaced'> {
  const existing = await readIfExists(path);
  const state = existing === undefined ? 'created' : existing === text ? 'unchanged' : 'replaced';
  if (state === 'replaced' && !force) {
    throw new UsageError(
      `${relative(process.cwd(), path)} already exists with different contents`,
      'pass --force to replace it, or remove it first with `exocomp schedule remove`',
    );
  }
  if (state !== 'unchanged') {
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, text);
  }
  return state;
}

export function registerSchedule(program: Command, io: Io): void {
  const schedule = program.command('schedule').description('recurring converges of a standing inventory, as scheduled CI workflows');

  addGitLabProjectOptions(schedule.command('add'))
    .description(
      'write .github/workflows/exocomp-<name>.yml, or with --gitlab .gitlab/exocomp-<name>.yml (and --create its pipeline schedule); after -- give the playbook and --check/--limit/--tags',
    )
    .argument('<name>', 'schedule name: a-z, 0-9 and -')
    .argument('<playbook-and-flags...>', 'after --: the playbook, then --check, --limit <pattern>, --tags <tags>')
    .requiredOption('--cron <six fields>', "six-field cron, seconds first, in UTC, e.g. '0 17 3 * * *'")
    .requiredOption('--kind <kind>', 'what the schedule fires: play (a converge), or drift (the drift check of --workspace, with its sticky issue)')
    .addOption(new Option('--workspace <dir>', 'with --kind drift: the workspace directory the check plans'))
    .requiredOption('--target <tf:name>', 'the standing inventory the play runs against')
    .requiredOption('--concurrency-key <key>', 'fires sharing a key never overlap (CI concurrency group and ledger lease)')
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
    .addOption(new Option('--print', 'with --gitlab: print the file and the schedule settings instead of writing the file').default(false))
    .addOption(new Option('--create', 'with --gitlab: also create the pipeline schedule and its variable through the API').default(false))
    .addOption(new Option('--gitlab-ref <branch>', 'with --create: the branch the schedule runs on (default: $CI_DEFAULT_BRANCH, else main)'))
    .addOption(new Option('--force', 'replace an existing schedule file (and, with --create, the pipeline schedule)').default(false))
    .addOption(jsonOption())
    .action(async (rawName: string, words: string[], options: Record<string, unknown>) => {
      const name = parseScheduleName(rawName);
      if (options.kind !== 'play' && options.kind !== 'drift') {
        throw new UsageError(`--kind ${quoteValue(String(options.kind))} is not supported`, '--kind play fires a converge of the standing inventory, --kind drift its drift check');
      }
      const { playbook, args } = parsePassthrough(words);
      const spec: ScheduleSpec = {
        name,
        cron: String(options.cron),
        target: String(options.target),
        concurrencyKey: String(options.concurrencyKey),
        playbook,
        args,
        ledgerBranch: String(options.ledgerBranch),
        ...(options.kind === 'drift' ? { kind: 'drift' as const, ...(typeof options.workspace === 'string' ? { workspace: options.workspace } : {}) } : {}),
        ...(typeof options.shards === 'string' ? { shards: parseShardNumber(options.shards, '--shards') } : {}),
        ...(typeof options.maxParallel === 'string' ? { maxParallel: parseShardNumber(options.maxParallel, '--max-parallel') } : {}),
      };
      const { fiveFieldCron } = validateScheduleSpec(spec);
      const warning = describeMinuteWarning(fiveFieldCron);
      if (options.gitlab === true) {
        const gitlabWarning = describeGitLabIntervalWarning(fiveFieldCron);
        const { file, settings } = renderGitLabSchedule(spec, typeof options.gitlabTemplate === 'string' ? options.gitlabTemplate : undefined);
        if (options.print === true) {
          if (options.json === true) io.out(JSON.stringify({ result: { file, settings, cron: fiveFieldCron, ...(gitlabWarning ? { warning: gitlabWarning } : {}) } }));
          else io.out(`${file}\n${settings.trimEnd()}`);
        } else {
          const path = join(scheduleDir(options), scheduleFileName(name));
          const state = await writeScheduleFile(path, file, options.force === true);
          let created: { id: number; replaced: number } | undefined;
          if (options.create === true) {
            const ref = gitlabProject(options);
            const branch = typeof options.gitlabRef === 'string' ? options.gitlabRef : process.env.CI_DEFAULT_BRANCH || 'main';
            const { schedule: made, replaced } = await createExocompSchedule(scheduleApi(ref, process.env), ref.project, {
              name,
              cron: fiveFieldCron,
              ref: branch,
              replace: options.force === true,
            });
            created = { id: made.id, replaced };
          }
          if (options.json === true) {
            io.out(
              JSON.stringify({ result: { path, state, cron: fiveFieldCron, ...(created ? { schedule: created } : {}), ...(gitlabWarning ? { warning: gitlabWarning } : {}) } }),
            );
          } else {
            io.out(`${relative(process.cwd(), path) || path}: ${state} (cron '${fiveFieldCron}' UTC, ${spec.target}, resource group ${spec.concurrencyKey})`);
            if (created) io.out(`pipeline schedule ${created.id} created${created.replaced ? ` (replacing ${created.replaced})` : ''}`);
            else io.err(settings.trimEnd());
            io.err(`include it from .gitlab-ci.yml (include: - local: ${relative(process.cwd(), path)}) and commit both`);
          }
        }
        if (gitlabWarning && options.json !== true) io.err(`warning: ${gitlabWarning}`);
        return;
      }
      const path = join(scheduleDir(options), scheduleFileName(name));
      const text = renderGitHubSchedule(spec);
      const state = await writeScheduleFile(path, text, options.force === true);
      if (options.json === true) {
        io.out(JSON.stringify({ result: { path, state, cron: fiveFieldCron, ...(warning ? { warning } : {}) } }));
        return;
      }
      io.out(`${relative(process.cwd(), path) || path}: ${state} (cron '${fiveFieldCron}' UTC, ${spec.target}, concurrency key ${spec.concurrencyKey})`);
      io.err('commit and push this file yourself: a workflow token cannot push files under .github/workflows');
      if (warning) io.err(`warning: ${warning}`);
    });

  addGitLabProjectOptions(
    schedule
      .command('list')
      .description('list the schedules generated in --dir, or with --gitlab the pipeline schedules exocomp created in the project')
      .addOption(dirOption())
      .addOption(jsonOption()),
  ).action(async (options: Record<string, unknown>) => {
    if (options.gitlab === true) {
      const ref = gitlabProject(options);
      const found = await listExocompSchedules(scheduleApi(ref, process.env), ref.project);
      const schedules = found.map((s) => ({ name: s.name, id: s.id, cron: s.cron, cronTimezone: s.cronTimezone, ref: s.ref, active: s.active, owner: s.owner }));
      if (options.json === true) io.out(JSON.stringify({ result: { schedules } }));
      else if (schedules.length === 0) io.out(`no exocomp pipeline schedules in project ${ref.project}`);
      else for (const s of schedules) io.out(`${s.name}\tschedule ${s.id}\tcron '${s.cron}' ${s.cronTimezone}\t${s.ref}\t${s.active ? 'active' : 'inactive'}\towner ${s.owner}`);
      return;
    }
    const dir = scheduleDir(options);
    const files = (await readdir(dir).catch(() => [] as string[])).filter((f) => f.startsWith(SCHEDULE_FILE_PREFIX) && f.endsWith('.yml')).sort();
    const schedules: ScheduleSummary[] = [];
    const errors: string[] = [];
    for (const file of files) {
      const name = file.slice(SCHEDULE_FILE_PREFIX.length, -'.yml'.length);
      try {
        schedules.push(readGitHubSchedule(name, await readFile(join(dir, file), 'utf8')));
      } catch (error) {
        errors.push(describeError(error).split('\n')[0] ?? file);
      }
    }
    if (options.json === true) io.out(JSON.stringify({ result: { schedules, errors } }));
    else if (schedules.length === 0 && errors.length === 0) io.out(`no schedules in ${relative(process.cwd(), dir) || dir}`);
    else {
      for (const s of schedules) {
        io.out(`${s.name}\tcron '${s.cron}' UTC\t${s.target}\tkey ${s.concurrencyKey}\t${[s.playbook, ...s.args].join(' ')}`);
      }
      for (const e of errors) io.err(`error: ${e}`);
    }
    if (errors.length > 0) process.exitCode = 1;
  });

  addGitLabProjectOptions(
    schedule
      .command('remove')
      .description('delete .github/workflows/exocomp-<name>.yml, or with --gitlab the pipeline schedule and .gitlab/exocomp-<name>.yml (commit the deletion yourself)')
      .argument('<name>', 'schedule name')
      .addOption(dirOption())
      .addOption(jsonOption()),
  ).action(async (rawName: string, options: Record<string, unknown>) => {
    const name = parseScheduleName(rawName);
    const path = join(scheduleDir(options), scheduleFileName(name));
    if (options.gitlab === true) {
      const ref = gitlabProject(options);
      const removed = await removeExocompSchedule(scheduleApi(ref, process.env), ref.project, name);
      const file = await readIfExists(path);
      // Only a file this command generated is removed.
      const fileRemoved = file !== undefined && file.startsWith(`# Generated by \`exocomp schedule add ${name} --gitlab\``);
      if (fileRemoved) await rm(path);
      if (removed === 0 && !fileRemoved) {
        throw new ExocompError(
          'usage',
          `no schedule ${name}: project ${ref.project} has no pipeline schedule ${quoteValue(`exocomp ${name}`)} and ${relative(process.cwd(), path)} is not there`,
          {
            help: 'see the schedules with `exocomp schedule list --gitlab`',
          },
        );
      }
      if (options.json === true) io.out(JSON.stringify({ result: { schedulesRemoved: removed, path, fileRemoved } }));
      else io.out(`removed ${removed} pipeline schedule(s)${fileRemoved ? ` and ${relative(process.cwd(), path)} (commit the deletion)` : ''}`);
      return;
    }
    const text = await readIfExists(path);
    if (text === undefined) {
      throw new ExocompError('usage', `no schedule ${name}: ${relative(process.cwd(), path)} does not exist`, { help: 'see the schedules with `exocomp schedule list`' });
    }
    // Only a file this command generated is removed; a hand-written one of that name is left alone.
    readGitHubSchedule(name, text);
    await rm(path);
    if (options.json === true) io.out(JSON.stringify({ result: { path, state: 'removed' } }));
    else io.out(`${relative(process.cwd(), path)}: removed (commit the deletion)`);
  });
}
