/**
 * The CI-platform port on GitHub Actions: @actions/core for inputs, masking,
 * log groups, outputs and the summary; the REST API (GitHubPort) for the
 * sticky comment, environment approvals, permissions, dispatch and run
 * liveness.
 */
import * as core from '@actions/core';
import type { ArtifactPort, CiPlatform } from '../../app/ports/ci-platform.js';
import {
  continuationTarget,
  dispatchContinuation,
  mayDecide,
  requireEnvironmentApproval,
  runCompleted,
} from './approval.js';
import { upsertStickyComment } from './comment.js';
import { ciHolder, ciHolderProbe } from './holder.js';
import type { GitHubPort } from './port.js';
import { githubTrigger, type RunContext } from './run-context.js';

export function githubPlatform(options: {
  run: RunContext;
  github: GitHubPort;
  commentAuthor?: string;
  artifacts?: ArtifactPort;
}): CiPlatform {
  const { run, github } = options;
  return {
    name: 'github',
    run: {
      id: run.runId,
      attempt: run.runAttempt,
      url: run.runUrl,
      actor: run.triggeringActor,
      changeRequest: run.pullRequest,
      trigger: githubTrigger(run),
      decisionVia: `workflow_dispatch run ${run.runId}`,
    },
    log: {
      info: (message) => core.info(message),
      notice: (message) => core.notice(message),
      warning: (message) => core.warning(message),
      error: (message) => core.error(message),
      startGroup: (title) => core.startGroup(title),
      endGroup: () => core.endGroup(),
    },
    input: (name) => core.getInput(name),
    maskSecret: (value) => core.setSecret(value),
    setOutput: (name, value) => core.setOutput(name, value),
    writeSummary: async (markdown) => {
      await core.summary.addRaw(markdown, true).write();
    },
    upsertStatusComment: (changeRequest, key, body) =>
      upsertStickyComment(github, {
        repo: run.repository,
        issue: changeRequest,
        workflowId: key,
        author: options.commentAuthor ?? 'github-actions[bot]',
        body,
      }),
    // On a push, the sticky comment follows the pushed commit's pull request.
    ...(run.eventName === 'push' ? { findChangeRequest: () => pullRequestOfCommit(github, run) } : {}),
    grants: {
      'status-comment': 'the job `pull-requests: write` (pull requests from forks get a read-only token)',
      'change-request-lookup': 'the job `pull-requests: read`',
    },
    ...(options.artifacts ? { artifacts: options.artifacts } : {}),
    gatedJobApproval: (environment) => requireEnvironmentApproval(github, run, environment),
    mayDecide: (actor) => mayDecide(github, run, actor),
    continuationTarget: (workflow, target) => continuationTarget(run, workflow, target),
    dispatchContinuation: (workflow, target) => dispatchContinuation(github, run, workflow, target),
    continuationRunEnded: (runId) => runCompleted(github, run, runId),
    holder: () => ciHolder(run),
    probeHolder: ciHolderProbe(github, run),
  };
}

/** The pull request the commit belongs to (an open one first, else the merged one); none is a notice. */
async function pullRequestOfCommit(github: GitHubPort, run: RunContext): Promise<number | undefined> {
  const pulls = await github.pullRequestsOfCommit(run.repository, run.sha);
  const pull = pulls.find((p) => p.open) ?? pulls[0];
  if (!pull)
    core.notice(`commit ${run.sha.slice(0, 12)} belongs to no pull request: the status is in the job summary only`);
  return pull?.number;
}
