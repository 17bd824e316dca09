/**
 * The pipeline schedules of a CI project that `schedule add/list/remove`
 * manage through an API (GitLab: src/platform/gitlab/schedules.ts). Only the
 * schedules this tool created are seen: they are found by their description.
 */
export interface PipelineSchedule {
  /** The exocomp schedule name. */
  name: string;
  id: number;
  cron: string;
  cronTimezone: string;
  ref: string;
  active: boolean;
  owner: string;
}

export interface PipelineSchedules {
  /** The project, for messages. */
  readonly project: string;
  list(): Promise<PipelineSchedule[]>;
  /** Creates schedule `name`; with `replace`, removing the ones of that name first, else refusing when one exists. */
  create(request: {
    name: string;
    cron: string;
    ref: string;
    replace: boolean;
  }): Promise<{ id: number; replaced: number }>;
  /** Removes the schedules named `name`; how many there were. */
  remove(name: string): Promise<number>;
}
