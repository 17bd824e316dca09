import { describe, expect, it } from 'vitest';
import { isCiEnvironment, judgeStateBackend, stateBackendOf } from '../../src/domain/state-backend.js';

const file = (name: string, text: string) => ({ name, text });

describe('stateBackendOf', () => {
  it('is the implicit local backend when nothing declares one', () => {
    expect(stateBackendOf([])).toEqual({ type: 'local' });
    expect(
      stateBackendOf([
        file('main.tf.json', JSON.stringify({ resource: { terraform_data: { a: {} } } })),
        file('README.md', 'backend "s3" {'),
      ]),
    ).toEqual({ type: 'local' });
  });

  it('reads native syntax, comments and strings aside', () => {
    const hcl = `
      # terraform { backend "gcs" {} }
      /* terraform { backend "azurerm" {} } */
      locals { note = "terraform { backend \\"consul\\" {} }" }
      terraform {
        required_version = ">= 1.6"
        required_providers { aws = { source = "hashicorp/aws" } }
        backend "s3" {
          bucket = "state"
        }
      }`;
    expect(stateBackendOf([file('backend.tf', hcl)])).toEqual({ type: 's3', file: 'backend.tf' });
    expect(stateBackendOf([file('main.tofu', 'terraform {\n  cloud {\n    organization = "acme"\n  }\n}\n')])).toEqual({
      type: 'cloud',
      file: 'main.tofu',
    });
    expect(
      stateBackendOf([file('main.tf', 'terraform {\n  backend "local" {\n    path = "x.tfstate"\n  }\n}')]),
    ).toEqual({ type: 'local', file: 'main.tf' });
  });

  it('does not take a remote-state data source for the workspace backend', () => {
    const hcl = 'data "terraform_remote_state" "net" {\n  backend = "s3"\n  config = { bucket = "x" }\n}\n';
    expect(stateBackendOf([file('main.tf', hcl)])).toEqual({ type: 'local' });
  });

  it('reads JSON syntax, objects and lists alike', () => {
    expect(
      stateBackendOf([file('backend.tf.json', JSON.stringify({ terraform: { backend: { gcs: { bucket: 'b' } } } }))]),
    ).toEqual({ type: 'gcs', file: 'backend.tf.json' });
    expect(
      stateBackendOf([
        file('b.tf.json', JSON.stringify({ terraform: [{ required_version: '>= 1' }, { backend: [{ http: {} }] }] })),
      ]),
    ).toEqual({
      type: 'http',
      file: 'b.tf.json',
    });
    expect(stateBackendOf([file('b.tf.json', '{ not json')])).toEqual({ type: 'local' });
  });

  it('lets override files win', () => {
    const files = [
      file('override.tf', 'terraform {\n backend "local" {}\n}'),
      file('backend.tf', 'terraform {\n backend "s3" {}\n}'),
    ];
    expect(stateBackendOf(files)).toEqual({ type: 'local', file: 'override.tf' });
    expect(
      stateBackendOf([
        file('a.tf', 'terraform {\n backend "local" {}\n}'),
        file('ci_override.tf.json', JSON.stringify({ terraform: { backend: { s3: {} } } })),
      ]),
    ).toEqual({
      type: 's3',
      file: 'ci_override.tf.json',
    });
  });
});

describe('judgeStateBackend', () => {
  const local = { type: 'local' };
  it('refuses local state in CI with a remote backend example and the way out', () => {
    const verdict = judgeStateBackend(local, 'infra/edge', { ci: true, allowLocalState: false });
    expect(verdict.verdict).toBe('refuse');
    if (verdict.verdict !== 'refuse') return;
    expect(verdict.message).toMatch(/infra\/edge keeps its OpenTofu state on this runner \(no backend block/);
    expect(verdict.help).toContain('backend "s3"');
    expect(verdict.help).toContain('backend "http"');
    expect(verdict.help).toContain('TF_HTTP_PASSWORD');
    expect(verdict.help).toContain('allow-local-state: true');
  });

  it('warns when local state is allowed in CI; says nothing locally or with a remote backend', () => {
    expect(
      judgeStateBackend({ type: 'local', file: 'main.tf' }, 'ws', { ci: true, allowLocalState: true }),
    ).toMatchObject({
      verdict: 'warn',
      message: expect.stringContaining('backend "local" in main.tf'),
    });
    expect(judgeStateBackend(local, 'ws', { ci: false, allowLocalState: false })).toEqual({ verdict: 'ok' });
    expect(judgeStateBackend({ type: 's3', file: 'b.tf' }, 'ws', { ci: true, allowLocalState: false })).toEqual({
      verdict: 'ok',
    });
  });

  it.each([
    ['CI=true (GitLab, GitHub, most CI systems)', { CI: 'true' }],
    ['CI=1', { CI: '1' }],
    ['CI=true with GITLAB_CI=false (gitlab-ci-local)', { CI: 'true', GITLAB_CI: 'false' }],
    ['GITLAB_CI=true alone', { GITLAB_CI: 'true' }],
    ['GITHUB_ACTIONS=true alone', { GITHUB_ACTIONS: 'true' }],
    ['a GitLab job id, CI reset by the script', { CI: 'false', CI_JOB_ID: '805' }],
    ['a GitHub run id, CI reset by the script', { CI: '', GITHUB_RUN_ID: '12345' }],
  ])('knows CI by %s', (_way, env) => {
    expect(isCiEnvironment(env)).toBe(true);
  });

  it('knows a workstation: none of them set, or set to false/empty', () => {
    expect(isCiEnvironment({})).toBe(false);
    expect(isCiEnvironment({ CI: 'false', GITLAB_CI: 'false', GITHUB_ACTIONS: '', CI_JOB_ID: ' ' })).toBe(false);
  });
});
