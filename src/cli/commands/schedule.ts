import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, relative, resolve } from 'node:path';
import { Option, type Command } from 'commander';
import { describeMinuteWarning } from '../../domain/cron.js';
import { describeError, ExocompError, UsageError } from '../../domain/errors.js';
import { quoteValue } from '../../domain/names.js';
import {
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
import type { Io } from '../common.js';

function dirOption(): Option {
  return new Option('--dir <dir>', 'where the workflow files are').default(DEFAULT_WORKFLOWS_DIR);
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

export function registerSchedule(program: Command, io: Io): void {
  const schedule = program.command('schedule').description('recurring converges of a standing inventory, as scheduled CI workflows');

  schedule
    .command('add')
    .description('write .github/workflows/exocomp-<name>.yml (or print the GitLab job with --gitlab); after -- give the playbook and --check/--limit/--tags')
    .argument('<name>', 'schedule name: a-z, 0-9 and -')
    .argument('<playbook-and-flags...>', 'after --: the playbook, then --check, --limit <pattern>, --tags <tags>')
    .requiredOption('--cron <six fields>', "six-field cron, seconds first, in UTC, e.g. '0 17 3 * * *'")
    .requiredOption('--kind <kind>', 'what the schedule fires: play')
    .requiredOption('--target <tf:name>', 'the standing inventory the play runs against')
    .requiredOption('--concurrency-key <key>', 'fires sharing a key never overlap (CI concurrency group and ledger lease)')
    .addOption(dirOption())
    .addOption(new Option('--ledger-branch <name>', 'ledger branch the converge reads').default(DEFAULT_LEDGER_BRANCH))
    .addOption(new Option('--gitlab', 'print the .gitlab-ci.yml job and the pipeline-schedule settings instead of writing a file').default(false))
    .addOption(new Option('--force', 'replace an existing schedule file').default(false))
    .addOption(jsonOption())
    .action(async (rawName: string, words: string[], options: Record<string, unknown>) => {
      const name = parseScheduleName(rawName);
      if (options.kind !== 'play') {
        throw new UsageError(`--kind ${quoteValue(String(options.kind))} is not supported`, '--kind play is the only kind: the schedule fires a play against the standing inventory');
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
      };
      const { fiveFieldCron } = validateScheduleSpec(spec);
      const warning = describeMinuteWarning(fiveFieldCron);
      if (options.gitlab === true) {
        const { job, settings } = renderGitLabSchedule(spec);
        if (options.json === true) io.out(JSON.stringify({ result: { job, settings, cron: fiveFieldCron, ...(warning ? { warning } : {}) } }));
        else io.out(`${job}\n${settings.trimEnd()}`);
        if (warning && options.json !== true) io.err(`warning: ${warning}`);
        return;
      }
      const dir = resolve(process.cwd(), String(options.dir));
      const path = join(dir, scheduleFileName(name));
      const text = renderGitHubSchedule(spec);
      const existing = await readIfExists(path);
      const state = existing === undefined ? 'created' : existing === text ? 'unchanged' : 'replaced';
      if (state === 'replaced' && options.force !== true) {
        throw new UsageError(`${relative(process.cwd(), path)} already exists with different contents`, 'pass --force to replace it, or remove it first with `exocomp schedule remove`');
      }
      if (state !== 'unchanged') {
        await mkdir(dir, { recursive: true });
        await writeFile(path, text);
      }
      if (options.json === true) {
        io.out(JSON.stringify({ result: { path, state, cron: fiveFieldCron, ...(warning ? { warning } : {}) } }));
        return;
      }
      io.out(`${relative(process.cwd(), path) || path}: ${state} (cron '${fiveFieldCron}' UTC, ${spec.target}, concurrency key ${spec.concurrencyKey})`);
      io.err('commit and push this file yourself: a workflow token cannot push files under .github/workflows');
      if (warning) io.err(`warning: ${warning}`);
    });

  schedule
    .command('list')
    .description('list the schedules generated in --dir')
    .addOption(dirOption())
    .addOption(jsonOption())
    .action(async (options: Record<string, unknown>) => {
      const dir = resolve(process.cwd(), String(options.dir));
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

  schedule
    .command('remove')
    .description('delete .github/workflows/exocomp-<name>.yml (commit the deletion yourself)')
    .argument('<name>', 'schedule name')
    .addOption(dirOption())
    .addOption(jsonOption())
    .action(async (rawName: string, options: Record<string, unknown>) => {
      const name = parseScheduleName(rawName);
      const path = join(resolve(process.cwd(), String(options.dir)), scheduleFileName(name));
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
