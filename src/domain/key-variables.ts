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
