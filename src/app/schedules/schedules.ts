/**
 * `schedule add/list/remove`: recurring converges and drift checks as CI
 * files this tool generates (GitHub workflows, GitLab includes) and, on GitLab,
 * the pipeline schedules that fire them (through the PipelineSchedules port).
 * A file is written only when new or unchanged, or replaced when asked; only a
 * file this tool generated is ever removed.
 */
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { describeMinuteWarning } from '../../domain/cron.js';
import { describeError, ExocompError, UsageError } from '../../domain/errors.js';
import { quoteValue } from '../../domain/names.js';
import {
  describeGitLabIntervalWarning,
  gitlabScheduleDescription,
  readGitHubSchedule,
  renderGitHubSchedule,
  renderGitLabSchedule,
  type GitLabIncludeOptions,
  SCHEDULE_FILE_PREFIX,
  scheduleFileName,
  validateScheduleSpec,
  type ScheduleSpec,
  type ScheduleSummary,
} from '../../domain/schedule.js';
import type { PipelineSchedule, PipelineSchedules } from '../ports/pipeline-schedules.js';

export type FileState = 'created' | 'unchanged' | 'replaced';

export interface AddScheduleRequest {
  spec: ScheduleSpec;
  /** Where the schedule files are (absolute). */
  dir: string;
  /** The working directory, for the paths messages show. */
  cwd: string;
  /** Replace a file (and a pipeline schedule) of that name with different contents. */
  force: boolean;
  /** A GitLab include instead of a GitHub workflow. */
  gitlab?: GitLabIncludeOptions & {
    /** Only render the file and the schedule settings; write and create nothing. */
    print: boolean;
    /** Also create the pipeline schedule on `ref` here. */
    create?: { schedules: PipelineSchedules; ref: string } | undefined;
  };
}

export type AddScheduleResult =
  | { kind: 'printed'; file: string; settings: string; cron: string; warning?: string }
  | {
      kind: 'written';
      platform: 'github' | 'gitlab';
      path: string;
      state: FileState;
      cron: string;
      warning?: string;
      /** GitLab: the schedule's settings, for creating it by hand. */
      settings?: string;
      /** GitLab with `create`: the pipeline schedule made, and how many of that name it replaced. */
      created?: { id: number; replaced: number };
    };

export async function addSchedule(request: AddScheduleRequest): Promise<AddScheduleResult> {
  const { spec, gitlab } = request;
  const { fiveFieldCron: cron } = validateScheduleSpec(spec);
  const path = join(request.dir, scheduleFileName(spec.name));
  if (gitlab === undefined) {
    const warning = describeMinuteWarning(cron);
    const state = await writeScheduleFile(path, renderGitHubSchedule(spec), request);
    return { kind: 'written', platform: 'github', path, state, cron, ...(warning ? { warning } : {}) };
  }
  const warning = describeGitLabIntervalWarning(cron);
  const { file, settings } = renderGitLabSchedule(spec, gitlab);
  if (gitlab.print) return { kind: 'printed', file, settings, cron, ...(warning ? { warning } : {}) };
  const state = await writeScheduleFile(path, file, request);
  const create = gitlab.create;
  const created =
    create && (await create.schedules.create({ name: spec.name, cron, ref: create.ref, replace: request.force }));
  return {
    kind: 'written',
    platform: 'gitlab',
    path,
    state,
    cron,
    settings,
    ...(created ? { created } : {}),
    ...(warning ? { warning } : {}),
  };
}

export type ListSchedulesResult =
  | { platform: 'github'; dir: string; schedules: ScheduleSummary[]; errors: string[] }
  | { platform: 'gitlab'; project: string; schedules: PipelineSchedule[] };

/**
 * The schedules generated in `dir` (GitHub workflows; a file that does not
 * read as one is an error, not a schedule), or on GitLab the pipeline
 * schedules this tool created in the project.
 */
export async function listSchedules(request: {
  dir: string;
  gitlab?: PipelineSchedules | undefined;
}): Promise<ListSchedulesResult> {
  if (request.gitlab)
    return { platform: 'gitlab', project: request.gitlab.project, schedules: await request.gitlab.list() };
  const names = await readdir(request.dir).catch((): string[] => []);
  const files = names.filter((f) => f.startsWith(SCHEDULE_FILE_PREFIX) && f.endsWith('.yml')).sort();
  const schedules: ScheduleSummary[] = [];
  const errors: string[] = [];
  for (const file of files) {
    const name = file.slice(SCHEDULE_FILE_PREFIX.length, -'.yml'.length);
    try {
      schedules.push(readGitHubSchedule(name, await readFile(join(request.dir, file), 'utf8')));
    } catch (error) {
      errors.push(describeError(error).split('\n')[0] ?? file);
    }
  }
  return { platform: 'github', dir: request.dir, schedules, errors };
}

export type RemoveScheduleResult =
  | { platform: 'github'; path: string }
  | { platform: 'gitlab'; path: string; schedulesRemoved: number; fileRemoved: boolean };

/**
 * Removes schedule `name`: its generated file in `dir`, and on GitLab its
 * pipeline schedules. Nothing of that name is a usage error.
 */
export async function removeSchedule(request: {
  name: string;
  dir: string;
  cwd: string;
  gitlab?: PipelineSchedules | undefined;
}): Promise<RemoveScheduleResult> {
  const { name, gitlab } = request;
  const path = join(request.dir, scheduleFileName(name));
  const shown = relative(request.cwd, path);
  const text = await readIfExists(path);
  if (gitlab === undefined) {
    if (text === undefined)
      throw new ExocompError('usage', `no schedule ${name}: ${shown} does not exist`, {
        help: 'see the schedules with `exocomp schedule list`',
      });
    // Only a file this command generated is removed; a hand-written one of that name is left alone.
    readGitHubSchedule(name, text);
    await rm(path);
    return { platform: 'github', path };
  }
  const schedulesRemoved = await gitlab.remove(name);
  // Only a file this command generated is removed.
  const fileRemoved = text !== undefined && text.startsWith(`# Generated by \`exocomp schedule add ${name} --gitlab\``);
  if (fileRemoved) await rm(path);
  if (schedulesRemoved === 0 && !fileRemoved) {
    throw new ExocompError(
      'usage',
      `no schedule ${name}: project ${gitlab.project} has no pipeline schedule ${quoteValue(gitlabScheduleDescription(name))} and ${shown} is not there`,
      {
        help: 'see the schedules with `exocomp schedule list --gitlab`',
      },
    );
  }
  return { platform: 'gitlab', path, schedulesRemoved, fileRemoved };
}

async function readIfExists(path: string): Promise<string | undefined> {
  return readFile(path, 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
}

/** Writes a generated file: `created`, `unchanged`, or `replaced` (only with force). */
async function writeScheduleFile(
  path: string,
  text: string,
  request: Pick<AddScheduleRequest, 'force' | 'cwd'>,
): Promise<FileState> {
  const existing = await readIfExists(path);
  const state = existing === undefined ? 'created' : existing === text ? 'unchanged' : 'replaced';
  if (state === 'replaced' && !request.force) {
    throw new UsageError(
      `${relative(request.cwd, path)} already exists with different contents`,
      'pass --force to replace it, or remove it first with `exocomp schedule remove`',
    );
  }
  if (state !== 'unchanged') {
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, text);
  }
  return state;
}
