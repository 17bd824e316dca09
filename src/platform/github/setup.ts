/**
 * The setup port on GitHub: the settings that make the approval gate meaningful, read through the GitHubPort
 * (docs: "Get rules for a branch" returns the active ruleset rules applying to a branch, readable with
 * metadata: read; a ruleset's `bypass_actors` are left out for tokens that may not edit it; listing secrets
 * needs the Secrets permission, which no GITHUB_TOKEN has). A refused read is `unreadable`, naming the grant.
 */
import { ExocompError } from '../../domain/errors.js';
import type { BranchRules, GitHubSetupFacts, LedgerWriter, Read } from '../../domain/setup-check.js';
import { sampleRecordBranch } from '../../ledger/layout.js';
import type { SetupReader } from '../../app/ports/setup-reader.js';
import { warnAboutGateSetup } from '../../app/setup/setup-check.js';
import type { CiLog } from '../../app/ports/ci-platform.js';
import type { SecretRegistry } from '../../app/runtime/secrets.js';
import type { GitHubPort, RepoRef } from './port.js';
import type { RunContext } from './run-context.js';

export interface GitHubSetupTarget {
  repository: RepoRef;
  /** Where the ledger's record branches are, when not in `repository` (`ledger-repository`). */
  ledgerRepository?: RepoRef;
  approvalMode: 'environment' | 'dispatch';
  /** The environment the apply job names (environment mode). */
  environment: string;
  defaultBranch: string;
  /** The ledger name (`exocomp-ledger` by default); its records are `<name>-records/…`. */
  ledgerBranch: string;
  /** Who pushes the records: the jobs' GITHUB_TOKEN unless a GitHub App's token is the `token` input. */
  ledgerWriter: LedgerWriter;
}

export function githubSetupReader(github: GitHubPort, target: GitHubSetupTarget): SetupReader {
  const repo = target.repository;
  return {
    async read(scope) {
      const rulesOf = (where: RepoRef, branch: string) => readable(() => branchRules(github, where, branch));
      const recordBranch = sampleRecordBranch(target.ledgerBranch);
      const [protection, ledgerRules, defaultRules] = await Promise.all([
        target.approvalMode === 'environment'
          ? readable(() => github.environmentProtection(repo, target.environment))
          : Promise.resolve({ value: undefined }),
        rulesOf(target.ledgerRepository ?? repo, recordBranch),
        rulesOf(repo, target.defaultBranch),
      ]);
      const facts: GitHubSetupFacts = {
        platform: 'github',
        repository: `${repo.owner}/${repo.repo}`,
        approvalMode: target.approvalMode,
        environment: { name: target.environment, protection },
        ledgerRecords: { branch: recordBranch, rules: ledgerRules, writer: target.ledgerWriter },
        defaultBranch: { branch: target.defaultBranch, rules: defaultRules },
      };
      if (scope === 'gate') return facts;
      const [secrets, lastScheduledRun] = await Promise.all([
        readable(async () => {
          const names = await github.secretNames(repo);
          // An environment that does not exist has no secrets (its own row says it is missing).
          const environmentExists = 'value' in protection && protection.value !== undefined;
          const environmentNames = environmentExists ? await github.secretNames(repo, target.environment) : [];
          return [...new Set([...names, ...environmentNames])];
        }),
        readable(() => github.lastScheduledRun(repo)),
      ]);
      return { ...facts, secrets, lastScheduledRun };
    },
  };
}

/**
 * The warnings of the approve and plan jobs (issues 25 and 27): the gate's rows that are not ok, read with the
 * job's token. What that token may not read is a notice naming the grant; nothing here fails the job.
 */
export async function warnAboutGitHubGate(
  job: { github: GitHubPort; run: RunContext; secrets: SecretRegistry; log: CiLog; now: Date },
  settings: { ledgerBranch: string; ledgerRepository: string | undefined; environment: string | undefined },
): Promise<void> {
  const [owner = '', name = ''] = settings.ledgerRepository?.split('/') ?? [];
  const reader = githubSetupReader(job.github, {
    repository: job.run.repository,
    ...(settings.ledgerRepository ? { ledgerRepository: { owner, repo: name } } : {}),
    approvalMode: settings.environment ? 'environment' : 'dispatch',
    environment: settings.environment ?? '',
    defaultBranch: job.run.defaultBranch ?? 'main',
    ledgerBranch: settings.ledgerBranch,
    // A job cannot tell whose token its `token` input is: any GitHub App in the bypass lists passes.
    ledgerWriter: { kind: 'unknown' },
  });
  await warnAboutGateSetup(reader, job.log, job.secrets, job.now);
}

async function branchRules(github: GitHubPort, repo: RepoRef, branch: string): Promise<BranchRules> {
  const rules = await github.branchRules(repo, branch);
  const rulesets = [...new Set(rules.flatMap((rule) => (rule.rulesetId === undefined ? [] : [rule.rulesetId])))];
  const approvals = rules.flatMap((rule) => (rule.requiredApprovals === undefined ? [] : [rule.requiredApprovals]));
  const bypass = await readable(async () => {
    const read = await Promise.all(rulesets.map((id) => github.rulesetBypass(repo, id)));
    return read.map(({ source, actors }) => {
      if (actors === undefined)
        throw new ExocompError('permission', 'GitHub left out the bypass list of a ruleset', {
          help: 'Use a token of a repository admin (the bypass list is shown only to those who may edit the ruleset)',
        });
      return { source, actors };
    });
  });
  return {
    rules: [...new Set(rules.map((rule) => rule.type))],
    requiredApprovals: approvals.length === 0 ? undefined : Math.max(...approvals),
    bypass,
  };
}

/** The value, or what to grant when GitHub refused to show it (other failures, e.g. an unreachable API, throw). */
async function readable<T>(read: () => Promise<T>): Promise<Read<T>> {
  try {
    return { value: await read() };
  } catch (error) {
    if (error instanceof ExocompError && error.kind === 'permission')
      return { unreadable: error.help ?? error.message };
    throw error;
  }
}
