/**
 * Lease holders for CI jobs (docs/architecture.md, "Leases"): a step armed by a job is held by
 * that run attempt; it is gone once GitHub says the run completed, or once a
 * newer attempt of the same run exists (a re-run replaces the old attempt).
 */
import { LEASE_TTL_MS, probeLocalHolder, type Holder, type HolderProbe } from '../../app/runtime/lease.js';
import type { GitHubPort } from './port.js';
import type { RunContext } from './run-context.js';

export function ciHolder(run: RunContext): Holder {
  const id = `github:${run.slug}:${run.runId}:${run.runAttempt}:${run.jobId}`;
  return {
    id,
    lease: (now) => ({
      holder: id,
      origin: { kind: 'ci', platform: 'github', repository: run.slug, runId: run.runId, runAttempt: run.runAttempt },
      acquiredAt: now.toISOString(),
      heartbeatAt: now.toISOString(),
      ttlMs: LEASE_TTL_MS,
    }),
  };
}

/** True when the holder's run attempt is over; undefined when that cannot be told from here. */
export function ciHolderProbe(github: GitHubPort, run: RunContext): HolderProbe {
  return async (lease) => {
    if (lease.origin.kind !== 'ci') return probeLocalHolder(lease);
    const origin = lease.origin;
    if (origin.repository === run.slug && origin.runId === run.runId && origin.runAttempt < run.runAttempt) return true;
    const [owner = '', repo = ''] = origin.repository.split('/');
    const info = await github.getWorkflowRun({ owner, repo }, origin.runId);
    if (info === undefined) return undefined;
    return info.status === 'completed' || info.runAttempt > origin.runAttempt;
  };
}
