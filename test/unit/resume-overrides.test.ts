import { describe, expect, it } from 'vitest';
import { formatDuration } from '../../src/domain/duration.js';
import { createWorkflow, overrideWorkflow, type Workflow } from '../../src/domain/workflow.js';

const t0 = new Date('2026-11-30T10:00:00Z');
const t1 = new Date('2026-11-30T11:00:00Z');
const workflow = (state: Workflow['state'] = 'provision-failed'): Workflow => ({
  ...createWorkflow({
    id: 'edge-1',
    workspace: { path: 'infra/edge', name: 'edge' },
    playbook: 'site.yml',
    requester: 'alice',
    trigger: { kind: 'local' },
    options: { sshWaitMs: 300_000, onboardUser: 'exocomp', check: false },
    requireApproval: false,
    now: t0,
  }),
  state,
});

describe('overrideWorkflow', () => {
  it('changes what differs and notes each change', () => {
    const { workflow: next, changes } = overrideWorkflow(
      workflow(),
      { sshWaitMs: 600_000, playbook: 'ops/site.yml' },
      t1,
      formatDuration,
    );
    expect(changes).toEqual(['ssh-wait 5m 00s → 10m 00s', 'playbook site.yml → ops/site.yml']);
    expect(next.options.sshWaitMs).toBe(600_000);
    expect(next.playbook).toBe('ops/site.yml');
    expect(next.overrides).toEqual([
      { at: t1.toISOString(), setting: 'ssh-wait', from: '5m 00s', to: '10m 00s' },
      { at: t1.toISOString(), setting: 'playbook', from: 'site.yml', to: 'ops/site.yml' },
    ]);
    expect(next.updatedAt).toBe(t1.toISOString());
  });

  it('leaves the record alone when nothing differs', () => {
    const before = workflow();
    expect(overrideWorkflow(before, { sshWaitMs: 300_000, playbook: 'site.yml' }, t1, formatDuration)).toEqual({
      workflow: before,
      changes: [],
    });
    expect(overrideWorkflow(before, {}, t1, formatDuration).changes).toEqual([]);
  });

  it('keeps earlier overrides and refuses to change a finished workflow', () => {
    const once = overrideWorkflow(workflow(), { sshWaitMs: 600_000 }, t1, formatDuration).workflow;
    expect(overrideWorkflow(once, { sshWaitMs: 900_000 }, t1, formatDuration).workflow.overrides).toHaveLength(2);
    expect(() => overrideWorkflow(workflow('provisioned'), { sshWaitMs: 1 }, t1, formatDuration)).toThrow(
      /provisioned; its settings cannot change/,
    );
  });
});
