/**
 * Pipeline schedules of the converge jobs `schedule add --gitlab` generates,
 * through the API: one schedule per name, found by its description
 * (`exocomp <name>`), firing on the five-field cron in UTC with the variable
 * EXOCOMP_SCHEDULE=<name> that the generated job's rule matches.
 */
import { ExocompError } from '../../domain/errors.js';
import {
  GITLAB_SCHEDULE_VARIABLE,
  gitlabScheduleDescription,
  scheduleNameOfDescription,
} from '../../domain/schedule.js';
import type { PipelineSchedules } from '../../app/ports/pipeline-schedules.js';
import { SecretRegistry } from '../../app/runtime/secrets.js';
import { GITLAB_TOKEN_VARIABLE, GitLabApi, gitlabApiRoot, type Schedule } from './api.js';

export interface GitLabProjectRef {
  serverUrl: string;
  /** Numeric id or `group/project`. */
  project: string;
}

export interface ExocompSchedule extends Schedule {
  name: string;
}

/** The API for schedules: the access token comes only from the environment, never an argument. */
export function scheduleApi(ref: GitLabProjectRef, env: NodeJS.ProcessEnv): GitLabApi {
  const token = env[GITLAB_TOKEN_VARIABLE];
  if (!token) {
    throw new ExocompError('usage', `managing GitLab pipeline schedules needs ${GITLAB_TOKEN_VARIABLE}`, {
      help: `export ${GITLAB_TOKEN_VARIABLE} with a project or personal access token with the api scope (the Maintainer role to manage others' schedules)`,
    });
  }
  return new GitLabApi(gitlabApiRoot(ref.serverUrl), { accessToken: token }, new SecretRegistry());
}

export async function listExocompSchedules(api: GitLabApi, project: string): Promise<ExocompSchedule[]> {
  const all = await api.schedules(project);
  return all.flatMap((s) => {
    const name = scheduleNameOfDescription(s.description);
    return name === undefined ? [] : [{ ...s, name }];
  });
}

export async function createExocompSchedule(
  api: GitLabApi,
  project: string,
  request: { name: string; cron: string; ref: string; replace: boolean },
): Promise<{ schedule: Schedule; replaced: number }> {
  const existing = (await listExocompSchedules(api, project)).filter((s) => s.name === request.name);
  if (existing.length > 0 && !request.replace) {
    throw new ExocompError(
      'usage',
      `project ${project} already has the pipeline schedule ${gitlabScheduleDescription(request.name)} (id ${existing.map((s) => s.id).join(', ')})`,
      {
        help: 'pass --force to replace it, or remove it first with `exocomp schedule remove --gitlab`',
      },
    );
  }
  for (const old of existing) await api.removeSchedule(project, old.id);
  const schedule = await api.createSchedule(project, {
    description: gitlabScheduleDescription(request.name),
    ref: request.ref,
    cron: request.cron,
    variables: { [GITLAB_SCHEDULE_VARIABLE]: request.name },
  });
  return { schedule, replaced: existing.length };
}

/** Deletes the schedules named `name`; how many there were. */
export async function removeExocompSchedule(api: GitLabApi, project: string, name: string): Promise<number> {
  const found = (await listExocompSchedules(api, project)).filter((s) => s.name === name);
  for (const s of found) await api.removeSchedule(project, s.id);
  return found.length;
}

/** The project's pipeline schedules as the port `schedule add/list/remove --gitlab` use. */
export function gitlabPipelineSchedules(ref: GitLabProjectRef, env: NodeJS.ProcessEnv): PipelineSchedules {
  const api = scheduleApi(ref, env);
  return {
    project: ref.project,
    list: async () =>
      (await listExocompSchedules(api, ref.project)).map((s) => ({
        name: s.name,
        id: s.id,
        cron: s.cron,
        cronTimezone: s.cronTimezone,
        ref: s.ref,
        active: s.active,
        owner: s.owner,
      })),
    create: async (request) => {
      const { schedule, replaced } = await createExocompSchedule(api, ref.project, request);
      return { id: schedule.id, replaced };
    },
    remove: (name) => removeExocompSchedule(api, ref.project, name),
  };
}
