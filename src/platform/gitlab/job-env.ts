/**
 * The environment a GitLab template's script hands to the CLI it runs next:
 * the ledger's remote and the git credentials for it (after a dry-run push
 * proved they may push), and for `state: gitlab` the http backend's TF_HTTP_*
 * variables, and for a job run with `parallel: N` its shard (EXOCOMP_SHARD,
 * `i/N`, for `playbook run --shard`). Printed as shell `export` lines for `eval`, so the credentials never
 * appear on a command line or in the job log.
 */
import { formatShard, shardFromGitLabEnv } from '../../domain/shard.js';
import { gitlabStateEnv } from './tofu-state.js';
import { openGitLabLedger, type GitLabLedgerOptions } from './ledger.js';

export interface JobEnvRequest extends GitLabLedgerOptions {
  /** `gitlab`: the project's GitLab-managed OpenTofu state named `stateName`. */
  state: 'local' | 'gitlab';
  stateName: string | undefined;
}

export async function gitlabJobEnv(request: JobEnvRequest): Promise<Record<string, string>> {
  const shard = shardFromGitLabEnv(request.env);
  const ledger = openGitLabLedger(request);
  await ledger.preflight();
  const vars: Record<string, string> = { EXOCOMP_LEDGER: ledger.access.remote, EXOCOMP_LEDGER_BRANCH: request.branch };
  // Appended after any configuration the job already passes this way.
  const existing = Number.parseInt(request.env.GIT_CONFIG_COUNT ?? '0', 10);
  const offset = Number.isFinite(existing) && existing > 0 ? existing : 0;
  ledger.access.gitConfig.forEach(([key, value], index) => {
    vars[`GIT_CONFIG_KEY_${offset + index}`] = key;
    vars[`GIT_CONFIG_VALUE_${offset + index}`] = value;
  });
  if (ledger.access.gitConfig.length > 0) vars.GIT_CONFIG_COUNT = String(offset + ledger.access.gitConfig.length);
  Object.assign(vars, ledger.access.extraEnv);
  if (request.state === 'gitlab') Object.assign(vars, gitlabStateEnv(request.job, request.stateName ?? 'default'));
  if (shard) vars.EXOCOMP_SHARD = formatShard(shard);
  return vars;
}

/** `export NAME='value'` lines a POSIX shell evaluates back to exactly these values. */
export function shellExports(vars: Record<string, string>): string {
  return Object.entries(vars)
    .map(([name, value]) => `export ${name}='${value.replace(/'/g, `'\\''`)}'`)
    .join('\n');
}
