import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/domain/errors.js';
import { scrubEnvironment, validateEnvName } from '../../src/domain/run-environment.js';

const runnerEnvironment: NodeJS.ProcessEnv = {
  PATH: '/usr/bin:/bin',
  HOME: '/home/runner',
  USER: 'runner',
  LOGNAME: 'runner',
  SHELL: '/bin/bash',
  LANG: 'C.UTF-8',
  LC_ALL: 'C.UTF-8',
  TZ: 'UTC',
  TERM: 'xterm',
  TMPDIR: '/tmp/work',
  ANSIBLE_ROLES_PATH: '/repo/roles',
  ANSIBLE_CONFIG: '/tmp/evil.cfg',
  ANSIBLE_VAULT_PASSWORD_FILE: '/tmp/vault-pass',
  ANSIBLE_BECOME_PASSWORD_FILE: '/tmp/become-pass',
  ANSIBLE_GALAXY_TOKEN: 'galaxy-token',
  EXOCOMP_SEAL_KEY: 'seal-key-value',
  GITHUB_TOKEN: 'ghs_token',
  GH_TOKEN: 'gh_token',
  ACTIONS_RUNTIME_TOKEN: 'runtime',
  ACTIONS_ID_TOKEN_REQUEST_URL: 'https://token.example',
  RUNNER_TEMP: '/runner/tmp',
  CI_JOB_TOKEN: 'ci-job',
  NPM_TOKEN: 'npm',
  DATABASE_PASSWORD: 'db',
  MY_API_SECRET_KEY: 'api',
  TF_VAR_db_password: 'tfvar',
  TF_TOKEN_app_terraform_io: 'tfc',
  AWS_ACCESS_KEY_ID: 'AKIA',
  AWS_SECRET_ACCESS_KEY: 'aws-secret',
  GOOGLE_APPLICATION_CREDENTIALS: '/gcp.json',
  GCLOUD_PROJECT: 'p',
  AZURE_CLIENT_SECRET: 'az',
  ARM_CLIENT_ID: 'arm',
  HCLOUD_TOKEN: 'hc',
  DIGITALOCEAN_ACCESS_TOKEN: 'do',
  OS_PASSWORD: 'openstack',
  SSH_AUTH_SOCK: '/tmp/runner-agent.sock',
  HTTPS_PROXY: 'http://user:pass@proxy:3128',
  LD_PRELOAD: '/tmp/hook.so',
  PYTHONPATH: '/tmp/inject',
  NODE_OPTIONS: '--require /tmp/hook.js',
  SOMETHING_HARMLESS_LOOKING: 'x',
};

describe('scrubEnvironment', () => {
  const scrubbed = scrubEnvironment(runnerEnvironment, {});

  it('keeps exactly the allowlisted names and harmless ANSIBLE_* settings', () => {
    expect(Object.keys(scrubbed).sort()).toEqual(
      [
        'ANSIBLE_ROLES_PATH',
        'HOME',
        'LANG',
        'LC_ALL',
        'LOGNAME',
        'PATH',
        'SHELL',
        'TERM',
        'TMPDIR',
        'TZ',
        'USER',
      ].sort(),
    );
    expect(scrubbed.PATH).toBe('/usr/bin:/bin');
    expect(scrubbed.ANSIBLE_ROLES_PATH).toBe('/repo/roles');
  });

  it('never lets a credential-looking ANSIBLE_* name or ANSIBLE_CONFIG through', () => {
    for (const name of [
      'ANSIBLE_CONFIG',
      'ANSIBLE_VAULT_PASSWORD_FILE',
      'ANSIBLE_BECOME_PASSWORD_FILE',
      'ANSIBLE_GALAXY_TOKEN',
    ]) {
      expect(scrubbed).not.toHaveProperty(name);
    }
  });

  it('leaves out no secret value of the parent anywhere', () => {
    const values = Object.values(scrubbed).join('\n');
    for (const secret of [
      'seal-key-value',
      'ghs_token',
      'aws-secret',
      'tfvar',
      'user:pass',
      'openstack',
      'runner-agent',
    ]) {
      expect(values).not.toContain(secret);
    }
  });

  it('adds run-secrets and outputs after scrubbing, even names the parent could not pass', () => {
    const env = scrubEnvironment(runnerEnvironment, { DB_PASSWORD: 'from-run-secrets', API_TOKEN: 't0k3n' });
    expect(env.DB_PASSWORD).toBe('from-run-secrets');
    expect(env.API_TOKEN).toBe('t0k3n');
    expect(env).not.toHaveProperty('DATABASE_PASSWORD');
  });

  it('does not modify the parent object', () => {
    const parent = { PATH: '/bin', GITHUB_TOKEN: 'x' };
    scrubEnvironment(parent, { A: 'b' });
    expect(parent).toEqual({ PATH: '/bin', GITHUB_TOKEN: 'x' });
  });

  it('drops undefined values', () => {
    expect(scrubEnvironment({ PATH: undefined, HOME: '/h' }, {})).toEqual({ HOME: '/h' });
  });

  it('rejects an addition with a bad or reserved name', () => {
    expect(() => scrubEnvironment({}, { 'BAD-NAME': 'x' })).toThrow(UsageError);
    expect(() => scrubEnvironment({}, { ANSIBLE_SSH_ARGS: '-o StrictHostKeyChecking=no' })).toThrow(/reserved/);
  });
});

describe('validateEnvName', () => {
  it.each(['DB_PASSWORD', '_x', 'a1', 'HTTPS_PROXY', 'api_token'])('accepts %s', (name) => {
    expect(() => validateEnvName(name)).not.toThrow();
  });

  it.each(['', '1ABC', 'A-B', 'A B', 'A=B', 'Ä', 'A\nB'])('rejects the malformed name %j', (name) => {
    expect(() => validateEnvName(name)).toThrow(/not a valid environment variable name/);
  });

  it.each([
    'PATH',
    'HOME',
    'path',
    'SSH_AUTH_SOCK',
    'ANSIBLE_CONFIG',
    'ansible_ssh_args',
    'EXOCOMP_SEAL_KEY',
    'LD_PRELOAD',
    'PYTHONPATH',
  ])('rejects the reserved name %s with help', (name) => {
    try {
      validateEnvName(name);
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(UsageError);
      expect((error as UsageError).message).toMatch(/reserved/);
      expect((error as UsageError).help).toMatch(/rename/);
    }
  });
});
