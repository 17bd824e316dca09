/**
 * Where a workspace keeps its OpenTofu state, read from its configuration
 * files, and whether a run may apply it. Without a backend block tofu writes
 * `terraform.tfstate` into the workspace folder: on a CI runner that file is
 * gone when the job ends, and the next apply creates every host again.
 */

export interface ConfigFile {
  name: string;
  text: string;
}

export interface StateBackend {
  /** `local` when no backend is configured; `cloud` for a `cloud {}` block. */
  type: string;
  /** The file that configures it; undefined for the implicit local backend. */
  file?: string;
}

const CONFIG_FILE = /\.(tf|tofu)(\.json)?$/;
const OVERRIDE_FILE = /(^|_)override\.(tf|tofu)(\.json)?$/;

export function isConfigFile(name: string): boolean {
  return CONFIG_FILE.test(name);
}

/**
 * The backend the workspace's configuration declares. Override files
 * (`override.tf`, `*_override.tf`) win over the others, as in OpenTofu.
 */
export function stateBackendOf(files: readonly ConfigFile[]): StateBackend {
  const configs = files.filter((f) => isConfigFile(f.name)).sort((a, b) => a.name.localeCompare(b.name));
  let found: StateBackend = { type: 'local' };
  for (const overrides of [false, true]) {
    for (const file of configs.filter((f) => OVERRIDE_FILE.test(f.name) === overrides)) {
      const type = file.name.endsWith('.json') ? backendInJson(file.text) : backendInHcl(file.text);
      if (type !== undefined) found = { type, file: file.name };
    }
  }
  return found;
}

function backendInJson(text: string): string | undefined {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return undefined; // tofu itself reports a broken file
  }
  let type: string | undefined;
  for (const block of asList((doc as { terraform?: unknown } | null)?.terraform)) {
    if (block === null || typeof block !== 'object') continue;
    if ('cloud' in block) type = 'cloud';
    for (const backend of asList((block as { backend?: unknown }).backend)) {
      if (backend !== null && typeof backend === 'object') type = Object.keys(backend)[0] ?? type;
    }
  }
  return type;
}

const asList = (value: unknown): unknown[] => (value === undefined ? [] : Array.isArray(value) ? value : [value]);

/** `terraform { backend "s3" { … } }` or `terraform { cloud { … } }`, comments and strings aside. */
function backendInHcl(text: string): string | undefined {
  const code = withoutComments(text);
  let type: string | undefined;
  const opener = /\bterraform\s*\{/g;
  for (let match = opener.exec(code); match; match = opener.exec(code)) {
    const body = blockBody(code, match.index + match[0].length);
    const backend = /(?:^|[\s{;])backend\s+"([A-Za-z0-9_-]+)"\s*\{/.exec(body);
    if (backend) type = backend[1];
    else if (/(?:^|[\s{;])cloud\s*\{/.test(body)) type = 'cloud';
  }
  return type;
}

/** The text up to the brace that closes the block whose body starts at `start`. */
function blockBody(code: string, start: number): string {
  let depth = 1;
  for (let i = start; i < code.length; i += 1) {
    if (code[i] === '{') depth += 1;
    else if (code[i] === '}' && --depth === 0) return code.slice(start, i);
  }
  return code.slice(start);
}

/** Drops `#`, `//` and block comments; leaves quoted strings alone. */
function withoutComments(text: string): string {
  return text.replace(/"(?:[^"\\\n]|\\.)*"|\/\*[\s\S]*?\*\/|(?:#|\/\/)[^\n]*/g, (token) =>
    token.startsWith('"') ? token : ' ',
  );
}

export type BackendVerdict =
  { verdict: 'ok' } | { verdict: 'warn'; message: string } | { verdict: 'refuse'; message: string; help: string };

/**
 * Local state is refused in CI (GitHub Actions, GitLab CI) unless the user
 * allows it; locally it is what tofu users expect.
 */
export function judgeStateBackend(
  backend: StateBackend,
  workspace: string,
  context: { ci: boolean; allowLocalState: boolean },
): BackendVerdict {
  if (backend.type !== 'local' || !context.ci) return { verdict: 'ok' };
  const where = backend.file ? `backend "local" in ${backend.file}` : 'no backend block: the local backend';
  if (context.allowLocalState) {
    return {
      verdict: 'warn',
      message: `workspace ${workspace} keeps its state on this runner (${where}); allow-local-state is set, so it is applied — the state is lost when the job ends unless your job saves it`,
    };
  }
  return {
    verdict: 'refuse',
    message: `workspace ${workspace} keeps its OpenTofu state on this runner (${where}): the state would be lost when the job ends, and the next apply would create every host again`,
    help: REMOTE_BACKEND_HELP,
  };
}

export const REMOTE_BACKEND_HELP = `give the workspace a remote backend, e.g. a backend.tf beside it:
    terraform {
      backend "s3" {
        bucket       = "my-tofu-state"
        key          = "fleet/terraform.tfstate"
        region       = "eu-west-1"
        use_lockfile = true   # state locking (or dynamodb_table = "tofu-locks")
      }
    }
  and pass its credentials to the job as CI secrets in the environment (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or OIDC).
  Others: backend "gcs" { bucket = "…" prefix = "fleet" } with GOOGLE_CREDENTIALS; backend "azurerm" { … } with ARM_CLIENT_ID/ARM_CLIENT_SECRET/ARM_TENANT_ID/ARM_SUBSCRIPTION_ID;
  GitLab-managed state: backend "http" {} with TF_HTTP_ADDRESS, TF_HTTP_LOCK_ADDRESS, TF_HTTP_UNLOCK_ADDRESS, TF_HTTP_USERNAME=gitlab-ci-token, TF_HTTP_PASSWORD=$CI_JOB_TOKEN.
  See docs/state.md. To apply with local state anyway (your job saves it elsewhere), set allow-local-state: true (CLI: --allow-local-state).`;

/**
 * Any one of the variables a CI system sets in every job says so: `CI` (GitLab, GitHub, most others, and
 * gitlab-ci-local, which sets GITLAB_CI=false), `GITLAB_CI`, `GITHUB_ACTIONS`, and the job's own id (GitLab's
 * `CI_JOB_ID`, GitHub's `GITHUB_RUN_ID`), which a job script that resets CI cannot take away. The guard it
 * feeds refuses, so a false "not CI" is the costly mistake.
 * https://docs.gitlab.com/ci/variables/predefined_variables/ ·
 * https://docs.github.com/en/actions/reference/variables-reference#default-environment-variables
 */
export function isCiEnvironment(env: NodeJS.ProcessEnv): boolean {
  const yes = (value: string | undefined) => value !== undefined && /^(true|1|yes)$/i.test(value.trim());
  return (
    yes(env.CI) ||
    yes(env.GITLAB_CI) ||
    yes(env.GITHUB_ACTIONS) ||
    Boolean(env.CI_JOB_ID?.trim()) ||
    Boolean(env.GITHUB_RUN_ID?.trim())
  );
}
