import { chmod, cp, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TofuDriver, locateTofu, type TofuDriverOptions } from '../../src/adapters/tofu.js';
import { ExocompError } from '../../src/domain/errors.js';
import { planFingerprint, planHasChanges } from '../../src/domain/plan.js';
import type { TofuDiagnostic } from '../../src/domain/tofu-diagnostics.js';
import { fixtureWorkspacesDir, invocationsOf, readStandinLog, standinPath } from '../support/tofu-standin.js';

let tmp: string;

beforeEach(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'exocomp-tofu-test-'));
});

afterEach(async () => {
  await rm(tmp, { recursive: true, force: true });
});

async function executable(path: string, script: string): Promise<string> {
  await mkdir(join(path, '..'), { recursive: true });
  await writeFile(path, script);
  await chmod(path, 0o755);
  return path;
}

async function rejection(promise: Promise<unknown>): Promise<ExocompError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof ExocompError) return error;
    throw error;
  }
  throw new Error('expected an ExocompError');
}

describe('locateTofu', () => {
  it('prefers tofu, then terraform, on PATH', async () => {
    const first = join(tmp, 'first');
    const second = join(tmp, 'second');
    const terraform = await executable(join(first, 'terraform'), '#!/bin/sh\n');
    const tofu = await executable(join(second, 'tofu'), '#!/bin/sh\n');
    expect(await locateTofu({ env: { PATH: `${first}:${second}` } })).toBe(tofu);
    await rm(tofu);
    expect(await locateTofu({ env: { PATH: `${first}:${second}` } })).toBe(terraform);
  });

  it('skips a tofu that is not executable', async () => {
    await writeFile(join(tmp, 'tofu'), '#!/bin/sh\n', { mode: 0o644 });
    const terraform = await executable(join(tmp, 'terraform'), '#!/bin/sh\n');
    expect(await locateTofu({ env: { PATH: tmp } })).toBe(terraform);
  });

  it('is tool-missing with install help when neither is on PATH', async () => {
    const error = await rejection(locateTofu({ env: { PATH: `${tmp}:/nonexistent` } }));
    expect(error.kind).toBe('tool-missing');
    expect(error.message).toBe('no tofu or terraform on PATH');
    expect(error.help).toContain('--tofu-binary');
    expect(error.help).toContain('https://opentofu.org/docs/intro/install/');
  });

  it('uses --tofu-binary, ignoring PATH', async () => {
    const custom = await executable(join(tmp, 'bin', 'my-tofu'), '#!/bin/sh\n');
    await executable(join(tmp, 'path', 'tofu'), '#!/bin/sh\n');
    expect(await locateTofu({ tofuBinary: custom, env: { PATH: join(tmp, 'path') } })).toBe(custom);
  });

  it('refuses a --tofu-binary that is missing, not executable or a directory', async () => {
    await writeFile(join(tmp, 'plain'), 'x', { mode: 0o644 });
    for (const path of [join(tmp, 'missing'), join(tmp, 'plain'), tmp]) {
      const error = await rejection(locateTofu({ tofuBinary: path, env: { PATH: '' } }));
      expect(error.kind).toBe('tool-missing');
      expect(error.message).toContain(path);
    }
  });
});

describe('TofuDriver against a failing executable', () => {
  const SECRET = 'ghp_plantedSecretValue123';
  const DB_PASSWORD = 'sensitive-output-value-42';

  /**
   * A stand-in for a tofu that fails: it records its argv and environment,
   * answers `output -json` with a sensitive output, and fails everything else
   * with exit 3, printing the secrets to stderr.
   */
  async function failingTofu(): Promise<string> {
    return executable(
      join(tmp, 'bin', 'tofu'),
      [
        '#!/bin/sh',
        `printf '%s\\n' "$*" >> "${tmp}/argv.log"`,
        `env > "${tmp}/env.log"`,
        'if [ "$1" = output ]; then',
        `  printf '{"db_password":{"sensitive":true,"type":"string","value":"${DB_PASSWORD}"}}\\n'`,
        '  exit 0',
        'fi',
        'echo "progress line with $TOKEN"',
        'echo "Error: provider said $TOKEN" >&2',
        `echo "and the password ${DB_PASSWORD}" >&2`,
        'exit 3',
        '',
      ].join('\n'),
    );
  }

  function driver(binary: string, options: Partial<TofuDriverOptions> = {}): TofuDriver {
    return new TofuDriver({
      binary,
      workspaceDir: tmp,
      env: { PATH: process.env.PATH, TOKEN: SECRET, TF_INPUT: '1' },
      secrets: [SECRET],
      ...options,
    });
  }

  it('names the command and exit code and redacts secrets in the error and in progress lines', async () => {
    const lines: string[] = [];
    const tofu = driver(await failingTofu(), { onOutput: (line) => lines.push(line) });
    const error = await rejection(tofu.plan(join(tmp, 'plan.tfplan')));
    expect(error.kind).toBe('tool-failed');
    expect(error.message).toMatch(/^tofu plan failed with exit code 3/);
    expect(error.message).toContain('Error: provider said ***');
    expect(error.message).not.toContain(SECRET);
    expect(lines).toContain('progress line with ***');
    expect(lines.join('\n')).not.toContain(SECRET);
  });

  it('redacts sensitive output values it has seen', async () => {
    const tofu = driver(await failingTofu());
    const before = await rejection(tofu.apply('plan.tfplan'));
    expect(before.message).toContain(DB_PASSWORD); // not known to be secret yet
    const outputs = await tofu.outputs();
    expect(outputs.db_password).toEqual({ sensitive: true, type: 'string', value: DB_PASSWORD });
    const after = await rejection(tofu.apply('plan.tfplan'));
    expect(after.message).toMatch(/^tofu apply failed with exit code 3/);
    expect(after.message).toContain('and the password ***');
    expect(after.message).not.toContain(DB_PASSWORD);
  });

  it('runs with the real CLI flags and TF_IN_AUTOMATION=1, TF_INPUT=0', async () => {
    const tofu = driver(await failingTofu());
    await rejection(tofu.init());
    await rejection(tofu.validate());
    await rejection(tofu.plan('saved.tfplan'));
    await rejection(tofu.apply('saved.tfplan'));
    await rejection(tofu.showPlan('saved.tfplan'));
    const argv = (await readFile(join(tmp, 'argv.log'), 'utf8')).trim().split('\n');
    expect(argv).toEqual([
      'init -input=false -no-color',
      'validate -json -no-color',
      'plan -input=false -no-color -json -out=saved.tfplan',
      'apply -input=false -no-color -json saved.tfplan',
      'show -json saved.tfplan',
    ]);
    const env = await readFile(join(tmp, 'env.log'), 'utf8');
    expect(env).toMatch(/^TF_IN_AUTOMATION=1$/m);
    expect(env).toMatch(/^TF_INPUT=0$/m);
  });

  it('reports a binary that cannot be started as tool-missing', async () => {
    const error = await rejection(driver(join(tmp, 'no-such-tofu')).init());
    expect(error.kind).toBe('tool-missing');
    expect(error.message).toContain('no-such-tofu init');
  });

  it('refuses output -json of the wrong shape', async () => {
    const bad = await executable(join(tmp, 'bin', 'tofu'), '#!/bin/sh\necho \'{"x":{"value":1}}\'\n');
    const error = await rejection(driver(bad).outputs());
    expect(error.kind).toBe('tool-failed');
    expect(error.message).toContain('unexpected shape');
  });
});

describe('TofuDriver.writeVars', () => {
  it('writes exocomp.auto.tfvars.json readable by the owner only, and nothing for no vars', async () => {
    const tofu = new TofuDriver({ binary: 'tofu', workspaceDir: tmp, env: {} });
    await tofu.writeVars({});
    await expect(readFile(join(tmp, 'exocomp.auto.tfvars.json'))).rejects.toThrow(/ENOENT/);
    await tofu.writeVars({ host_count: 2, greeting: 'hello world', tags: { env: 'test' } });
    const path = join(tmp, 'exocomp.auto.tfvars.json');
    expect(JSON.parse(await readFile(path, 'utf8'))).toEqual({
      host_count: 2,
      greeting: 'hello world',
      tags: { env: 'test' },
    });
    expect((await stat(path)).mode & 0o777).toBe(0o600);
  });
});

describe('TofuDriver against the OpenTofu stand-in', () => {
  const DB_PASSWORD = 'loopback-only-sealed-password';
  const INVENTORY = { all: { hosts: { web: { ansible_host: '127.0.0.2', ansible_port: 2222 } } } };
  let workspace: string;
  let logFile: string;

  beforeEach(async () => {
    workspace = join(tmp, 'sealed');
    logFile = join(tmp, 'standin.log');
    await cp(join(fixtureWorkspacesDir, 'sealed'), workspace, { recursive: true });
  });

  function driver(options: Partial<TofuDriverOptions> & { extraEnv?: NodeJS.ProcessEnv } = {}): TofuDriver {
    const { extraEnv, ...rest } = options;
    return new TofuDriver({
      binary: standinPath,
      workspaceDir: workspace,
      env: { PATH: process.env.PATH, HOME: tmp, EXOCOMP_TOFU_STANDIN_LOG: logFile, ...extraEnv },
      ...rest,
    });
  }

  async function planned(tofu: TofuDriver, planFile = 'exocomp.tfplan') {
    await tofu.init();
    await tofu.validate();
    return tofu.plan(planFile);
  }

  it('plan -detailed-exitcode: exit 2 is "changes", exit 0 "none", neither is a failure; nothing is applied', async () => {
    const tofu = driver();
    await tofu.writeVars({ ansible_inventory: INVENTORY });
    await tofu.init();
    const first = await tofu.planDetailed('drift.tfplan');
    expect(first.changes).toBe(true);
    expect(first.summary.add).toBe(1);
    await tofu.apply('drift.tfplan');
    const again = await tofu.planDetailed('drift2.tfplan');
    expect(again.changes).toBe(false);
    expect(planHasChanges(again.plan)).toBe(false);
    const plans = invocationsOf(await readStandinLog(logFile), 'plan');
    expect(plans.map((entry) => entry.argv.includes('-detailed-exitcode'))).toEqual([true, true]);
    const failing = driver({ extraEnv: { EXOCOMP_TOFU_STANDIN_FAIL: 'plan' } });
    expect((await rejection(failing.planDetailed('drift3.tfplan'))).kind).toBe('tool-failed');
  });

  it('inits, validates, plans, applies the saved plan once and reads the outputs', async () => {
    const lines: string[] = [];
    const tofu = driver({ onOutput: (line) => lines.push(line) });
    await tofu.writeVars({ ansible_inventory: INVENTORY });
    const { summary, fingerprint, plan } = await planned(tofu);
    expect(summary).toEqual({ add: 1, change: 0, destroy: 0, replace: 0 });
    expect(fingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect(Object.keys(plan.output_changes ?? {}).sort()).toEqual([
      'ansible_inventory',
      'api_token',
      'app_port',
      'db_password',
    ]);
    expect(planFingerprint(await tofu.showPlan('exocomp.tfplan'))).toBe(fingerprint);

    await tofu.apply('exocomp.tfplan');
    const outputs = await tofu.outputs();
    expect(outputs.db_password).toEqual({ sensitive: true, type: 'string', value: DB_PASSWORD });
    expect(outputs.app_port).toEqual({ sensitive: false, type: 'number', value: 8080 });
    expect(outputs.ansible_inventory?.value).toEqual(INVENTORY);

    const log = await readStandinLog(logFile);
    expect(log.map((entry) => entry.argv[0])).toEqual(['init', 'validate', 'plan', 'show', 'show', 'apply', 'output']);
    expect(invocationsOf(log, 'apply')).toHaveLength(1);
    expect(invocationsOf(log, 'apply')[0]?.argv).toEqual([
      'apply',
      '-input=false',
      '-no-color',
      '-json',
      'exocomp.tfplan',
    ]);
    expect(log.every((entry) => entry.cwd === workspace)).toBe(true);

    expect(lines).toContain('Plan: 1 to add, 0 to change, 0 to destroy.');
    expect(lines.some((line) => line.startsWith('Apply complete!'))).toBe(true);
    expect(lines.join('\n')).not.toContain(DB_PASSWORD);

    const again = await tofu.plan('again.tfplan');
    expect(again.summary).toEqual({ add: 0, change: 0, destroy: 0, replace: 0 });
    expect(planHasChanges(again.plan)).toBe(false);
  });

  it('reads the state identity with state pull: none before the first apply, then its lineage and serial', async () => {
    const tofu = driver();
    await tofu.writeVars({ ansible_inventory: INVENTORY });
    await planned(tofu);
    expect(await tofu.stateIdentity()).toBeUndefined();
    await tofu.apply('exocomp.tfplan');
    const state = JSON.parse(await readFile(join(workspace, 'terraform.tfstate'), 'utf8'));
    expect(await tofu.stateIdentity()).toEqual({ lineage: state.lineage, serial: state.serial });
    expect(invocationsOf(await readStandinLog(logFile), 'state').map((entry) => entry.argv)).toEqual([
      ['state', 'pull'],
      ['state', 'pull'],
    ]);
  });

  it('gives the same plan the same fingerprint and a changed input a different one', async () => {
    const tofu = driver();
    await tofu.writeVars({ ansible_inventory: INVENTORY });
    const first = await planned(tofu, 'first.tfplan');
    const second = await tofu.plan('second.tfplan');
    expect(second.fingerprint).toBe(first.fingerprint);

    await tofu.writeVars({ ansible_inventory: INVENTORY, app_port: 8081 });
    expect((await tofu.plan('third.tfplan')).fingerprint).not.toBe(first.fingerprint);

    // The documented limitation: a change of a sensitive value alone is invisible to the fingerprint.
    await tofu.writeVars({ ansible_inventory: INVENTORY, db_password: 'another-loopback-password' });
    const fourth = await tofu.plan('fourth.tfplan');
    expect(fourth.plan.output_changes?.db_password?.after).toBe('another-loopback-password');
    expect(fourth.fingerprint).toBe(first.fingerprint);
  });

  it('fails with the command, the exit code and a redacted stderr tail', async () => {
    const secret = 'ghp_plantedInStandinStderr42';
    // The stand-in echoes its fail knob on stderr, which plants the secret there.
    const tofu = driver({ secrets: [secret], extraEnv: { EXOCOMP_TOFU_STANDIN_FAIL: `plan,${secret}` } });
    await tofu.writeVars({ ansible_inventory: INVENTORY });
    await tofu.init();
    const error = await rejection(tofu.plan('exocomp.tfplan'));
    expect(error.kind).toBe('tool-failed');
    expect(error.message).toMatch(/^tofu plan failed with exit code 1:/);
    expect(error.message).toContain('Simulated failure');
    expect(error.message).toContain('***');
    expect(error.message).not.toContain(secret);
    expect(invocationsOf(await readStandinLog(logFile), 'show')).toHaveLength(0);
  });

  it('a configuration error fails with its file and line, told to onDiagnostic, shown as text', async () => {
    const lines: string[] = [];
    const diagnostics: TofuDiagnostic[] = [];
    const tofu = driver({ onOutput: (line) => lines.push(line), onDiagnostic: (d) => diagnostics.push(d) });
    await tofu.writeVars({ ansible_inventory: INVENTORY });
    await tofu.init();
    await writeFile(
      join(workspace, 'extra.tf.json'),
      '{\n  "output": {\n    "oops": { "value": "${var.nope}" }\n  }\n}\n',
    );
    const error = await rejection(tofu.validate());
    expect(error.message).toMatch(
      /^tofu validate failed with exit code 1:\nextra\.tf\.json:3: Reference to undeclared input variable/,
    );
    expect(diagnostics).toEqual([
      expect.objectContaining({ severity: 'error', file: 'extra.tf.json', line: 3, column: 27 }),
    ]);
    expect(lines).toContain('  on extra.tf.json line 3');
    // plan -json reports the same error as a JSON UI diagnostic.
    const planError = await rejection(tofu.plan('exocomp.tfplan'));
    expect(planError.message).toContain('extra.tf.json:3: Reference to undeclared input variable');
    expect(diagnostics).toHaveLength(2);
    expect(lines.some((line) => line.startsWith('{'))).toBe(false);
  });

  it('redacts a sensitive value the plan revealed from a later failure', async () => {
    const tofu = driver({ extraEnv: { EXOCOMP_TOFU_STANDIN_FAIL: `apply,${DB_PASSWORD}` } });
    await tofu.writeVars({ ansible_inventory: INVENTORY });
    await planned(tofu);
    const error = await rejection(tofu.apply('exocomp.tfplan'));
    expect(error.message).toMatch(/^tofu apply failed with exit code 1:/);
    expect(error.message).toContain('***');
    expect(error.message).not.toContain(DB_PASSWORD);
  });

  it('is found with --tofu-binary and not without it', async () => {
    expect(await locateTofu({ tofuBinary: standinPath, env: { PATH: tmp } })).toBe(standinPath);
    expect((await rejection(locateTofu({ env: { PATH: tmp } }))).kind).toBe('tool-missing');
  });
});
