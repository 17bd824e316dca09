/** The schedule use cases (src/app/schedules/schedules.ts) over a temporary directory and a recording PipelineSchedules. */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { addSchedule, listSchedules, removeSchedule } from '../../src/app/schedules/schedules.js';
import type { PipelineSchedule, PipelineSchedules } from '../../src/app/ports/pipeline-schedules.js';
import type { ScheduleSpec } from '../../src/domain/schedule.js';

const spec: ScheduleSpec = {
  name: 'nightly',
  cron: '0 17 3 * * *',
  target: 'tf:edge',
  concurrencyKey: 'edge-nightly',
  playbook: 'site.yml',
  args: [],
  ledgerBranch: 'exocomp-ledger',
};

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'exocomp-schedules-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function recordingSchedules(): PipelineSchedules & { made: PipelineSchedule[] } {
  const made: PipelineSchedule[] = [];
  return {
    project: 'acme/infra',
    made,
    list: async () => made,
    create: async ({ name, cron, ref, replace }) => {
      const replaced = made.filter((s) => s.name === name).length;
      if (replaced > 0 && !replace) throw new Error('exists');
      made.splice(0, made.length, ...made.filter((s) => s.name !== name));
      made.push({ name, id: 100 + made.length, cron, cronTimezone: 'UTC', ref, active: true, owner: 'bot' });
      return { id: 100 + made.length - 1, replaced };
    },
    remove: async (name) => {
      const before = made.length;
      made.splice(0, made.length, ...made.filter((s) => s.name !== name));
      return before - made.length;
    },
  };
}

describe('GitHub schedules', () => {
  it('writes the workflow once: created, then unchanged; a different file is replaced only with force', async () => {
    const add = (changed: Partial<ScheduleSpec>, force = false) =>
      addSchedule({ spec: { ...spec, ...changed }, dir, cwd: dir, force });
    expect(await add({})).toMatchObject({ kind: 'written', platform: 'github', state: 'created', cron: '17 3 * * *' });
    expect(await add({})).toMatchObject({ state: 'unchanged' });
    await expect(add({ playbook: 'other.yml' })).rejects.toMatchObject({
      kind: 'usage',
      message: expect.stringContaining('already exists with different contents'),
    });
    expect(await add({ playbook: 'other.yml' }, true)).toMatchObject({ state: 'replaced' });
    expect(await listSchedules({ dir })).toMatchObject({
      platform: 'github',
      schedules: [{ name: 'nightly', playbook: 'other.yml', target: 'tf:edge' }],
      errors: [],
    });
  });

  it('removes only a file it generated; a missing one is bad usage', async () => {
    await writeFile(join(dir, 'exocomp-hand.yml'), 'name: written by hand\non: push\n');
    await expect(removeSchedule({ name: 'hand', dir, cwd: dir })).rejects.toThrow();
    expect(await readFile(join(dir, 'exocomp-hand.yml'), 'utf8')).toContain('written by hand');
    await expect(removeSchedule({ name: 'nightly', dir, cwd: dir })).rejects.toMatchObject({
      kind: 'usage',
      message: expect.stringContaining('does not exist'),
    });
    await addSchedule({ spec, dir, cwd: dir, force: false });
    expect(await removeSchedule({ name: 'nightly', dir, cwd: dir })).toEqual({
      platform: 'github',
      path: join(dir, 'exocomp-nightly.yml'),
    });
    expect((await listSchedules({ dir })).schedules).toEqual([]);
  });
});

describe('GitLab schedules', () => {
  it('prints without writing or creating anything', async () => {
    const schedules = recordingSchedules();
    const printed = await addSchedule({
      spec,
      dir,
      cwd: dir,
      force: false,
      gitlab: { print: true, create: undefined },
    });
    expect(printed).toMatchObject({ kind: 'printed', cron: '17 3 * * *', file: expect.stringContaining('include:') });
    expect((await listSchedules({ dir })).schedules).toEqual([]);
    expect(schedules.made).toEqual([]);
  });

  it('writes the include and creates the pipeline schedule, lists it, and removes both', async () => {
    const schedules = recordingSchedules();
    const added = await addSchedule({
      spec,
      dir,
      cwd: dir,
      force: false,
      gitlab: { print: false, create: { schedules, ref: 'main' } },
    });
    expect(added).toMatchObject({ kind: 'written', platform: 'gitlab', state: 'created', created: { replaced: 0 } });
    expect(schedules.made).toMatchObject([{ name: 'nightly', cron: '17 3 * * *', ref: 'main' }]);
    expect(await listSchedules({ dir, gitlab: schedules })).toMatchObject({
      platform: 'gitlab',
      project: 'acme/infra',
      schedules: [{ name: 'nightly' }],
    });
    expect(await removeSchedule({ name: 'nightly', dir, cwd: dir, gitlab: schedules })).toMatchObject({
      platform: 'gitlab',
      schedulesRemoved: 1,
      fileRemoved: true,
    });
    await expect(removeSchedule({ name: 'nightly', dir, cwd: dir, gitlab: schedules })).rejects.toMatchObject({
      kind: 'usage',
      message: expect.stringContaining('no schedule nightly'),
    });
  });
});
