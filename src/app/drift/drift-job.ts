/**
 * A drift check as a job, for every face (the drift action, `exocomp drift`,
 * a GitLab job through the CLI): which standing inventory it checks and which
 * schedule tick it records (checked before the ledger is opened), then the
 * check, its verdict and exit status, when the job fails, and the workspace's
 * sticky drift issue through the face's issue tracker.
 */
import { driftExitCode, driftHeadline, driftVerdict, type DriftReport, type DriftVerdict } from '../../domain/drift.js';
import { ExocompError, UsageError } from '../../domain/errors.js';
import { defaultWorkspaceName, parseInventoryRef, parseWorkspaceName } from '../../domain/names.js';
import type { ScheduleTick } from '../../domain/schedule-fires.js';
import type { AppContext } from '../runtime/context.js';
import { checkDrift, type DriftRequest } from './drift.js';
import { publishDriftIssueTo, type DriftIssueResult, type DriftIssueTarget } from './drift-issue.js';

export interface DriftTargetInputs {
  workspacePath: string;
  workspaceName?: string | undefined;
  /** `tf:<name>`: the inventory to check, when it is not named after the workspace. */
  target?: string | undefined;
  /** A scheduled run: the schedule it answers (parseScheduleTick), recorded with the check. */
  schedule?: ScheduleTick | undefined;
  /** The face's name of the target input, for messages: `--inventory`, `target`. */
  targetName: string;
}

export interface DriftTarget {
  /** The standing inventory tf:<name> the check reads. */
  name: string;
  schedule?: ScheduleTick;
}

export function driftTarget(inputs: DriftTargetInputs): DriftTarget {
  let name =
    inputs.workspaceName === undefined
      ? defaultWorkspaceName(inputs.workspacePath)
      : parseWorkspaceName(inputs.workspaceName);
  if (inputs.target !== undefined) {
    const ref = parseInventoryRef(inputs.target);
    if (ref.kind !== 'standing') {
      throw new UsageError(
        `${inputs.targetName} ${JSON.stringify(inputs.target)} is not a standing inventory`,
        'drift checks tf:<name>, the inventory the workspace materializes',
      );
    }
    name = ref.name;
  }
  return { name, ...(inputs.schedule ? { schedule: inputs.schedule } : {}) };
}

export interface DriftJobResult {
  report: DriftReport;
  verdict: DriftVerdict;
  /** 0 clean, 1 the check failed, 3 drift found. */
  exitCode: 0 | 1 | 3;
  headline: string;
  /** Why the job fails: the check itself failed, or drift was found and `failOnDrift` asked for a failure. Redacted. */
  failure: ExocompError | undefined;
  /** The sticky drift issue, when the job keeps one. */
  issue?: DriftIssueResult;
}

export type DriftJobRequest = Omit<DriftRequest, 'name' | 'schedule'> & {
  failOnDrift?: boolean;
  /** Keep the workspace's sticky drift issue there: opened or updated while drift exists, closed once clean. */
  issue?: DriftIssueTarget | undefined;
};

export async function runDriftCheck(
  app: AppContext,
  target: DriftTarget,
  request: DriftJobRequest,
): Promise<DriftJobResult> {
  const report = await checkDrift(app, {
    ...request,
    name: target.name,
    ...(target.schedule ? { schedule: target.schedule } : {}),
  });
  const verdict = driftVerdict(report);
  const headline = request.secrets.redact(driftHeadline(report));
  const failure =
    verdict === 'failed'
      ? new ExocompError('tool-failed', `the drift check failed: ${headline}`, {
          help: 'the report above says which half failed and why',
        })
      : verdict === 'drift' && request.failOnDrift
        ? new ExocompError('play-failed', `drift found: ${headline}`, { help: 'converge (and apply) to remove it' })
        : undefined;
  const redact = (text: string) => request.secrets.redact(text);
  const issue = request.issue && (await publishDriftIssueTo(request.issue, report, redact));
  return { report, verdict, exitCode: driftExitCode(report), headline, failure, ...(issue ? { issue } : {}) };
}
