/**
 * `state: gitlab`: the OpenTofu `http` backend pointed at the project's
 * GitLab-managed state, configured the way GitLab's own OpenTofu component
 * does (TF_HTTP_* variables from CI_API_V4_URL, CI_PROJECT_ID and the job
 * token), so a user of that component can switch without moving state. The
 * workspace must declare `backend "http" {}`.
 */
import { UsageError } from '../../domain/errors.js';
import { quoteValue } from '../../domain/names.js';
import type { GitLabJob } from './job.js';

const STATE_NAME = /^[A-Za-z0-9._-]{1,255}$/;

export function gitlabStateEnv(
  job: Pick<GitLabJob, 'apiUrl' | 'projectId' | 'jobToken'>,
  stateName: string,
): Record<string, string> {
  if (!STATE_NAME.test(stateName)) {
    throw new UsageError(
      `state name ${quoteValue(stateName)} is not valid`,
      'use letters, digits, ".", "_" and "-" (GitLab\'s component defaults to the workspace name)',
    );
  }
  const address = `${job.apiUrl}/projects/${job.projectId}/terraform/state/${encodeURIComponent(stateName)}`;
  return {
    TF_HTTP_ADDRESS: address,
    TF_HTTP_LOCK_ADDRESS: `${address}/lock`,
    TF_HTTP_LOCK_METHOD: 'POST',
    TF_HTTP_UNLOCK_ADDRESS: `${address}/lock`,
    TF_HTTP_UNLOCK_METHOD: 'DELETE',
    TF_HTTP_USERNAME: 'gitlab-ci-token',
    TF_HTTP_PASSWORD: job.jobToken,
    TF_HTTP_RETRY_WAIT_MIN: '5',
  };
}
