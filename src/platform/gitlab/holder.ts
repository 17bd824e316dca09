/**
 * Lease holders for GitLab jobs (docs/architecture.md, "Leases"): a step armed by a job is held
 * by `gitlab:<project>:<pipeline>:<job>`; it is gone once the Jobs API says the
 * job finished (success, failed, canceled, skipped). Without an access token the
 * job cannot be looked up (the job token reaches only its own job), and the lease
 * is judged by its heartbeat alone.
 */
import { LEASE_TTL_MS, probeLocalHolder, type Holder, type HolderProbe } from '../../app/runtime/lease.js';
import type { GitLabApi } from './api.js';
import { gitlabHolderId, type GitLabJob } from './job.js';

const UNFINISHED = new Set([
  'created',
  'waiting_for_resource',
  'preparing',
  'pending',
  'running',
  'manual',
  'scheduled',
  'waiting_for_callback',
]);

export function gitlabHolder(job: GitLabJob): Holder {
  const id = gitlabHolderId(job);
  return {
    id,
    lease: (now) => ({
      holder: id,
      origin: { kind: 'gitlab', project: job.projectPath, pipelineId: job.pipelineId, jobId: job.jobId },
      acquiredAt: now.toISOString(),
      heartbeatAt: now.toISOString(),
      ttlMs: LEASE_TTL_MS,
    }),
  };
}

/** True when the holder's job has finished; undefined when that cannot be told from here. */
export function gitlabHolderProbe(api: GitLabApi): HolderProbe {
  return async (lease) => {
    if (lease.origin.kind !== 'gitlab') return probeLocalHolder(lease);
    const status = await api.jobStatus(lease.origin.project, lease.origin.jobId);
    if (status === undefined) return undefined;
    return !UNFINISHED.has(status);
  };
}
