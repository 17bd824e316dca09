/**
 * The names the three keys are stored under — a GitHub secret, a GitLab CI/CD
 * variable (File or masked Variable), the environment of a CLI run — one list,
 * used by `exocomp keys init`, the docs, the generated workflows and every face.
 */
export const KEY_VARIABLES = {
  fleet: 'EXOCOMP_FLEET_KEY',
  bootstrap: 'EXOCOMP_BOOTSTRAP_KEY',
  seal: 'EXOCOMP_SEAL_KEY',
} as const;

export type KeyKind = keyof typeof KEY_VARIABLES;

/** The user CA key (issue 42, docs/keys.md "User CA"): where a deployment signs each run's fleet certificate. */
export const USER_CA_KEY_VARIABLE = 'EXOCOMP_USER_CA_KEY';

/**
 * The commands that store each key file where CI reads it: GitHub secrets, and GitLab CI/CD variables as GitLab
 * can keep them. A private key is multi-line, so GitLab cannot mask it (a masked value is one line of at least 8
 * characters from the Base64 alphabet and `@:.~-`, https://docs.gitlab.com/ci/variables/#mask-a-cicd-variable):
 * it is a protected File variable, whose value never enters the job's environment. The seal key is one Base64
 * line: a masked, protected Variable, its file's newline dropped. `glab variable set` reads the value from
 * standard input (https://docs.gitlab.com/cli/variable/set/), so no key appears in a process's arguments.
 */
export function keyStoreCommands(files: ReadonlyArray<{ secret: string; path: string }>): {
  github: string[];
  gitlab: string[];
} {
  return {
    github: files.map(({ secret, path }) => `gh secret set ${secret} < ${path}`),
    gitlab: files.map(({ secret, path }) =>
      secret === KEY_VARIABLES.seal
        ? `tr -d '\\n' < ${path} | glab variable set ${secret} --masked --protected`
        : `glab variable set ${secret} --type file --protected < ${path}`,
    ),
  };
}
