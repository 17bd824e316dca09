/**
 * The tests run the same under CI as on a developer's machine: the variables that make exocomp treat a run as a CI
 * job (src/domain/state-backend.ts, isCiEnvironment) are taken from the test process, so a CI runner's own `CI=true`
 * does not turn every local-state fixture into a refusal. Tests of CI behaviour set these variables themselves, in
 * the environment they give the run (the emulated runners, gitlab-ci-local, the state-backend tests).
 */
// What CI does ask of the tests is kept: the real-binary tests fail there rather than skip (test/support/real-tofu.ts).
if (process.env.CI) process.env.EXOCOMP_TEST_REQUIRES_REAL_TOFU = '1';
for (const name of ['CI', 'GITLAB_CI', 'GITHUB_ACTIONS', 'CI_JOB_ID', 'GITHUB_RUN_ID']) delete process.env[name];
