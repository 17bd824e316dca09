/**
 * The ledger branch on GitLab (docs/architecture.md, "The ledger"). Which credential pushes, in
 * order: a deploy key (EXOCOMP_LEDGER_DEPLOY_KEY, a File variable) over SSH; a
 * project/personal access token (EXOCOMP_LEDGER_TOKEN, `write_repository`); else
 * the job token, which GitLab lets push only to the job's own project and only
 * when the project turned on "Allow Git push requests to the repository" (17.2+).
 * A dry-run push runs first; a refusal names the setting or scope to add, before
 * anything was written anywhere. Tokens travel only in GIT_CONFIG_* variables.
 */
import { join } from 'node:path';
import { httpAuthConfig, probePushAccess, type GitConfigEntry } from '../../adapters/git.js';
import { ExocompError, UsageError } from '../../domain/errors.js';
import { quoteValue } from '../../domain/names.js';
import { GitLedgerStore } from '../../ledger/git-store.js';
import type { SecretRegistry } from '../../app/runtime/secrets.js';
import type { GitLabJob } from './job.js';

export const LEDGER_TOKEN_VARIABLE = 'EXOCOMP_LEDGER_TOKEN';
export const LEDGER_DEPLOY_KEY_VARIABLE = 'EXOCOMP_LEDGER_DEPLOY_KEY';
const JOB_TOKEN_PUSH_SETTING =
  'Settings → CI/CD → Job token permissions → "Allow Git push requests to the repository" (GitLab 17.2 or later)';

export type LedgerCredential = 'deploy-key' | 'access-token' | 'job-token';

export interface GitLabLedgerOptions {
  job: GitLabJob;
  branch: string;
  /** `group/project` holding the ledger branch; default: the job's project. */
  ledgerProject: string | undefined;
  env: NodeJS.ProcessEnv;
  secrets: SecretRegistry;
  /** The job's clock: it stamps the ledger's commits. Default: the machine's. */
  now?: () => Date;
}

export interface GitLabLedger {
  store: GitLedgerStore;
  credential: LedgerCredential;
  project: string;
  /** How git reaches the ledger, for another process (the CLI in a later script line): remote, config and environment. */
  access: { remote: string; gitConfig: readonly GitConfigEntry[]; extraEnv: Readonly<Record<string, string>> };
  /** Fails, before anything was written anywhere, when the credential may not push to the ledger project. */
  preflight(): Promise<void>;
}

const PROJECT_PATH = /^[A-Za-z0-9_.-]+(\/[A-Za-z0-9_.-]+)+$/;

export function openGitLabLedger(options: GitLabLedgerOptions): GitLabLedger {
  const { job, env, secrets } = options;
  const project = options.ledgerProject ?? job.projectPath;
  if (!PROJECT_PATH.test(project)) {
    throw new UsageError(
      `ledger-project ${quoteValue(project)} is not a GitLab project path`,
      'name the project that holds the ledger branch, e.g. my-group/infra-ledger',
    );
  }
  const deployKey = env[LEDGER_DEPLOY_KEY_VARIABLE] || undefined;
  const accessToken = env[LEDGER_TOKEN_VARIABLE] || undefined;
  let remote: string;
  let config: GitConfigEntry[] = [];
  let extraEnv: Record<string, string> = {};
  let credential: LedgerCredential;
  if (deployKey) {
    credential = 'deploy-key';
    const host = new URL(job.serverUrl).hostname;
    remote = `git@${host}:${project}.git`;
    // A File variable is a path; the key never leaves that file. The host key comes from the runner's known_hosts.
    extraEnv = {
      GIT_SSH_COMMAND: `ssh -o BatchMode=yes -o IdentitiesOnly=yes -i '${deployKey.replace(/'/g, `'\\''`)}'`,
    };
  } else {
    credential = accessToken ? 'access-token' : 'job-token';
    remote = `${job.serverUrl}/${project}.git`;
    const auth = accessToken
      ? httpAuthConfig(accessToken, `${job.serverUrl}/`, 'oauth2')
      : httpAuthConfig(job.jobToken, `${job.serverUrl}/`, 'gitlab-ci-token');
    secrets.add(...auth.secrets);
    config = auth.config;
  }
  if (credential === 'job-token' && project !== job.projectPath) {
    throw new ExocompError(
      'permission',
      `the job token cannot push to ${project}: GitLab lets a job token push only to the job's own project`,
      {
        help: `set ${LEDGER_TOKEN_VARIABLE} to a project access token of ${project} with the write_repository scope, or ${LEDGER_DEPLOY_KEY_VARIABLE} (a File variable) to a deploy key with write access`,
      },
    );
  }
  const store = new GitLedgerStore({
    remote,
    branch: options.branch,
    cacheDir: join(job.tempDir, 'exocomp-ledgers'),
    gitConfig: config,
    extraEnv,
    secrets: secrets.list(),
    ...(options.now ? { now: options.now } : {}),
  });
  const preflight = async () => {
    const probe = await probePushAccess({
      remote,
      scratchRoot: job.tempDir,
      config,
      extraEnv,
      secrets: secrets.list(),
    });
    if (!probe.ok) throw pushRefused(credential, project, probe.said);
  };
  return { store, credential, project, access: { remote, gitConfig: config, extraEnv }, preflight };
}

function pushRefused(credential: LedgerCredential, project: string, said: string): ExocompError {
  if (/\b401\b|\b403\b|not allowed|denied|authentication failed|permission/i.test(said)) {
    const fix: Record<LedgerCredential, string> = {
      'job-token': `turn on ${JOB_TOKEN_PUSH_SETTING} in ${project}, or set ${LEDGER_TOKEN_VARIABLE} to a project access token with the write_repository scope`,
      'access-token': `give the token in ${LEDGER_TOKEN_VARIABLE} the write_repository scope and at least the Developer role in ${project} (and let that role push to the ledger branch if it is protected)`,
      'deploy-key': `add the deploy key to ${project} with "Grant write permissions to this key" checked`,
    };
    return new ExocompError(
      'permission',
      `the ${credential.replace('-', ' ')} may not push to ${project}, where the ledger branch lives`,
      { help: fix[credential] },
    );
  }
  if (/\b404\b|not found|could not be found/i.test(said)) {
    return new ExocompError(
      'ledger-unreachable',
      `the ledger project ${project} was not found, or the ${credential.replace('-', ' ')} may not see it`,
      {
        help: 'check ledger-project and that the credential belongs to that project',
      },
    );
  }
  return new ExocompError(
    'ledger-unreachable',
    `cannot reach the ledger project ${project}: ${said.trim().split('\n').slice(-3).join(' | ')}`,
    {
      help: 'check the network and the credential, then re-run the job',
    },
  );
}
