/**
 * The ledger branch reached through the workflow's token (docs/architecture.md, "The ledger"):
 * the token travels only as an `http.extraheader` in GIT_CONFIG_* variables,
 * never in a URL or an argument, and both it and its base64 form are masked.
 */
import { join } from 'node:path';
import { ExocompError, UsageError } from '../../domain/errors.js';
import { httpAuthConfig, probePushAccess, type GitConfigEntry } from '../../adapters/git.js';
import { GitLedgerStore } from '../../ledger/git-store.js';
import type { SecretRegistry } from '../../app/runtime/secrets.js';
import type { RunContext } from './run-context.js';

export interface GitHubLedgerOptions {
  run: RunContext;
  token: string;
  branch: string;
  /** owner/repo of another repository holding the ledger; default: the workflow's repository. */
  ledgerRepository: string | undefined;
  /** How long a write retries while other writers change the same record. */
  retryForMs?: number;
  secrets: SecretRegistry;
  /** The session's clock: it stamps the ledger's commits. */
  now: () => Date;
}

export interface GitHubLedger {
  store: GitLedgerStore;
  /** Fails, before anything was written anywhere, when the token may not push to the ledger repository. */
  preflight(): Promise<void>;
}

export function openGitHubLedger(options: GitHubLedgerOptions): GitHubLedger {
  const slug = options.ledgerRepository ?? options.run.slug;
  if (!/^[^/\s]+\/[^/\s]+$/.test(slug)) {
    throw new UsageError(
      `ledger-repository ${JSON.stringify(slug)} is not of the form owner/repo`,
      'name the repository that holds the ledger branch, e.g. my-org/infra-ledger',
    );
  }
  const remote = `${options.run.serverUrl}/${slug}.git`;
  const auth = httpAuthConfig(options.token, `${options.run.serverUrl}/`);
  options.secrets.add(...auth.secrets);
  const store = new GitLedgerStore({
    remote,
    branch: options.branch,
    cacheDir: join(options.run.runnerTemp, 'exocomp-ledgers'),
    writer: `${options.run.slug} run ${options.run.runId} attempt ${options.run.runAttempt} job ${options.run.jobId}`,
    ...(options.retryForMs === undefined ? {} : { retryForMs: options.retryForMs }),
    gitConfig: auth.config,
    secrets: options.secrets.list(),
    now: options.now,
  });
  return {
    store,
    preflight: () => checkPushAccess(remote, slug, options.run.runnerTemp, auth.config, options.secrets),
  };
}

/** Fails, naming what to change, when the token may not push to the ledger repository. */
async function checkPushAccess(
  remote: string,
  slug: string,
  scratchRoot: string,
  config: readonly GitConfigEntry[],
  secrets: SecretRegistry,
): Promise<void> {
  const probe = await probePushAccess({ remote, scratchRoot, config, secrets: secrets.list() });
  if (probe.ok) return;
  const said = probe.said;
  if (/\b403\b|denied|not authorized|permission/i.test(said)) {
    throw new ExocompError('permission', `the token may not push to ${slug}, where the ledger branch lives`, {
      help: 'add `permissions: contents: write` to the job (naming any permission sets the others to none, so list every one the job needs), or pass a token that may push to the ledger repository',
    });
  }
  if (/\b404\b|not found/i.test(said)) {
    throw new ExocompError(
      'ledger-unreachable',
      `the ledger repository ${slug} was not found, or the token may not see it`,
      {
        help: 'check ledger-repository; a token for another repository needs `contents: write` there (the workflow’s GITHUB_TOKEN only reaches its own repository)',
      },
    );
  }
  throw new ExocompError(
    'ledger-unreachable',
    `cannot reach the ledger repository ${slug}: ${said.trim().split('\n').slice(-3).join(' | ')}`,
    {
      help: 'check the network and the token, then re-run the job',
    },
  );
}
