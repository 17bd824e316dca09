/**
 * The setup port on GitLab: protected branches (wildcards as defined; GitLab's `*` spans `/`), the protected
 * environment's required approvals, the project's "Allow Git push requests to the repository"
 * (`ci_push_repository_for_job_token_allowed`, GitLab 17.2+), CI/CD variables (names and flags; the values are
 * dropped by the adapter) and the exocomp pipeline schedules with their last pipeline. Every route needs an
 * access token (EXOCOMP_GITLAB_TOKEN): the job token reaches none of them. A refused read is `unreadable`.
 */
import type { GitLabSetupFacts, Read } from '../../domain/setup-check.js';
import { sampleRecordBranch } from '../../ledger/layout.js';
import type { SetupReader } from '../../app/ports/setup-reader.js';
import { warnAboutGateSetup } from '../../app/setup/setup-check.js';
import type { CiLog } from '../../app/ports/ci-platform.js';
import type { SecretRegistry } from '../../app/runtime/secrets.js';
import { apiStatus, GITLAB_TOKEN_VARIABLE, type GitLabApi } from './api.js';
import { listExocompSchedules } from './schedules.js';

export interface GitLabSetupTarget {
  project: string;
  approvalMode: 'manual' | 'environment';
  environment: string;
  /** The ledger name (`exocomp-ledger` by default). */
  ledgerBranch: string;
  /** The project holding the ledger, when not `project` (the ledger-project input). */
  ledgerProject?: string;
}

const READ_GRANT = `set ${GITLAB_TOKEN_VARIABLE} to a token with the read_api scope of a Maintainer of the project`;

export function gitlabSetupReader(api: GitLabApi, target: GitLabSetupTarget): SetupReader {
  const project = target.project;
  return {
    async read(scope) {
      const [settings, protectedBranches, approvals] = await Promise.all([
        readable(() => api.projectSettings(project)),
        readable(() => api.protectedBranches(project)),
        target.approvalMode === 'environment'
          ? readable(async () => {
              const required = await api.protectedEnvironmentApprovals(project, target.environment);
              return required === undefined ? undefined : { requiredApprovals: required };
            })
          : Promise.resolve({ value: undefined }),
      ]);
      const ledgerProject = target.ledgerProject;
      const ledger =
        ledgerProject && ledgerProject !== project
          ? await Promise.all([
              readable(() => api.protectedBranches(ledgerProject)),
              readable(() => api.projectSettings(ledgerProject)),
            ])
          : undefined;
      const facts: GitLabSetupFacts = {
        platform: 'gitlab',
        project,
        approvalMode: target.approvalMode,
        environment: { name: target.environment, approvals },
        defaultBranch: 'value' in settings ? settings.value.defaultBranch : 'main',
        ledgerRecordBranch: sampleRecordBranch(target.ledgerBranch),
        protectedBranches,
        jobTokenPush: jobTokenPushOf(settings),
        ...(ledgerProject && ledger
          ? {
              ledger: { project: ledgerProject, protectedBranches: ledger[0], jobTokenPush: jobTokenPushOf(ledger[1]) },
            }
          : {}),
      };
      if (scope === 'gate') return facts;
      const [variables, schedules] = await Promise.all([
        readable(() => api.variableFlags(project)),
        readable(async () =>
          Promise.all(
            (await listExocompSchedules(api, project)).map(async (schedule) => ({
              name: schedule.name,
              active: schedule.active,
              lastPipelineAt: await api.lastScheduledPipeline(project, schedule.id),
            })),
          ),
        ),
      ]);
      return { ...facts, variables, schedules };
    },
  };
}

/**
 * The warnings of the plan and apply jobs (issue 27, Deliver 4), as GitHub's plan and approve jobs print them: the
 * gate's rows that are not ok, read with EXOCOMP_GITLAB_TOKEN. Without that token, or with one GitLab refuses, each
 * row is a notice naming the grant; an unreachable API is one notice. Nothing here fails the job.
 */
export async function warnAboutGitLabGate(
  api: GitLabApi,
  target: GitLabSetupTarget,
  job: { log: Pick<CiLog, 'notice' | 'warning'>; secrets: SecretRegistry; now: Date },
): Promise<void> {
  await warnAboutGateSetup(gitlabSetupReader(api, target), job.log, job.secrets, job.now);
}

function jobTokenPushOf(settings: Read<{ jobTokenPush: boolean }>): Read<boolean> {
  return 'value' in settings ? { value: settings.value.jobTokenPush } : settings;
}

/** The value, or what to grant when GitLab refused (401/403) or the token is missing; other failures throw. */
async function readable<T>(read: () => Promise<T>): Promise<Read<T>> {
  try {
    return { value: await read() };
  } catch (error) {
    const status = apiStatus(error);
    const noToken = error instanceof Error && 'kind' in error && error.kind === 'permission';
    if (status === 401 || status === 403 || noToken) return { unreadable: READ_GRANT };
    throw error;
  }
}
