/** Workflow records and leases for unit tests. */
import { createWorkflow, type Lease, type Workflow } from '../../src/domain/workflow.js';

export const T0 = new Date('2026-11-30T00:00:00.000Z');

export function sampleWorkflow(id = 'edge-1', options: { requireApproval?: boolean; now?: Date } = {}): Workflow {
  return createWorkflow({
    id,
    workspace: { path: 'infra/edge', name: 'edge' },
    playbook: 'site.yml',
    requester: 'alice',
    trigger: { kind: 'local' },
    options: { sshWaitMs: 1000, onboardUser: 'exocomp', check: false },
    requireApproval: options.requireApproval ?? false,
    now: options.now ?? T0,
  });
}

export function localLease(holder: string, now = T0, ttlMs = 60_000): Lease {
  return {
    holder,
    origin: { kind: 'local', hostname: 'laptop', pid: 4242 },
    acquiredAt: now.toISOString(),
    heartbeatAt: now.toISOString(),
    ttlMs,
  };
}
