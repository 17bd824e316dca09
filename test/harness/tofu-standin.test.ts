import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProcess, type RunResult } from '../../src/adapters/process.js';
import { HttpStateServer } from '../support/http-state.js';
import { fixtureWorkspacesDir, invocationsOf, readStandinLog, standinPath } from '../support/tofu-standin.js';
import { scaled } from '../support/time.js';

let root: string;
let counter = 0;

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'exocomp-tofu-standin-'));
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

interface Workspace {
  dir: string;
  log: string;
  tofu(args: string[], env?: Record<string, string>): Promise<RunResult>;
}

async function workspace(fixture: string, vars?: unknown): Promise<Workspace> {
  counter += 1;
  const dir = path.join(root, `${fixture}-${counter}`);
  await cp(path.join(fixtureWorkspacesDir, fixture), dir, { recursive: true });
  if (vars !== undefined) await writeFile(path.join(dir, 'exocomp.auto.tfvars.json'), JSON.stringify(vars));
  const log = path.join(dir, '..', `${fixture}-${counter}.log.jsonl`);
  return {
    dir,
    log,
    tofu: (args, env = {}) =>
      runProcess(standinPath, args, {
        cwd: dir,
        env: { ...process.env, EXOCOMP_TOFU_STANDIN_LOG: log, ...env },
        timeoutMs: scaled(60_000),
      }),
  };
}

const inventory = (hosts: Record<string, { ansible_host: string; ansible_port: number }>) => ({
  ansible_inventory: { all: { hosts } },
});

async function initPlanApply(ws: Workspace): Promise<void> {
  expect((await ws.tofu(['init', '-input=false', '-no-color'])).code).toBe(0);
  const plan = await ws.tofu(['plan', '-input=false', '-out=tfplan', '-no-color']);
  expect(plan.stderr).toBe('');
  expect(plan.code).toBe(0);
  const apply = await ws.tofu(['apply', '-input=false', '-auto-approve', '-no-color', 'tfplan']);
  expect(apply.stderr).toBe('');
  expect(apply.code).toBe(0);
}

describe('OpenTofu stand-in', () => {
  it('reports its version in the three forms', async () => {
    const ws = await workspace('edge');
    const plain = await ws.tofu(['version']);
    expect(plain.code).toBe(0);
    expect(plain.stdout).toMatch(/^OpenTofu v\d+\.\d+\.\d+\non linux_/);
    expect((await ws.tofu(['-version'])).stdout).toBe(plain.stdout);
    const json = JSON.parse((await ws.tofu(['version', '-json'])).stdout) as Record<string, unknown>;
    expect(json).toMatchObject({
      terraform_version: expect.stringMatching(/^\d+\.\d+\.\d+$/),
      provider_selections: {},
    });
  });

  it('refuses every command but version and init before init', async () => {
    const ws = await workspace('edge', inventory({}));
    for (const args of [
      ['validate', '-no-color'],
      ['plan', '-input=false', '-out=p', '-no-color'],
      ['apply', '-auto-approve', '-no-color', 'p'],
      ['output', '-json', '-no-color'],
      ['show', '-json', '-no-color', 'p'],
    ]) {
      const result = await ws.tofu(args);
      expect(result.code, args.join(' ')).toBe(1);
      expect(result.stderr).toContain('Error: Inconsistent dependency lock file');
      expect(result.stderr).toContain('tofu init');
    }
    expect(existsSync(path.join(ws.dir, 'terraform.tfstate'))).toBe(false);
    const init = await ws.tofu(['init', '-input=false', '-no-color']);
    expect(init.code).toBe(0);
    expect(init.stdout).toContain('OpenTofu has been successfully initialized!');
    expect(existsSync(path.join(ws.dir, '.terraform'))).toBe(true);
    expect(existsSync(path.join(ws.dir, '.terraform.lock.hcl'))).toBe(true);
  });

  it('plans, shows, applies and outputs the edge workspace like OpenTofu', async () => {
    const ws = await workspace('edge', inventory({ web1: { ansible_host: '127.100.0.1', ansible_port: 22 } }));
    expect((await ws.tofu(['init', '-input=false', '-no-color'])).code).toBe(0);

    const validate = await ws.tofu(['validate', '-no-color']);
    expect(validate.code).toBe(0);
    expect(validate.stdout).toContain('Success! The configuration is valid.');

    const plan = await ws.tofu(['plan', '-input=false', '-out=tfplan', '-no-color']);
    expect(plan.code).toBe(0);
    expect(plan.stdout).toContain('Plan: 1 to add, 0 to change, 0 to destroy.');
    expect(plan.stdout).toContain('Saved the plan to: tfplan');

    const show = await ws.tofu(['show', '-json', 'tfplan']);
    expect(show.code).toBe(0);
    const planJson = JSON.parse(show.stdout);
    expect(planJson.format_version).toMatch(/^1\./);
    expect(planJson.resource_changes).toEqual([
      expect.objectContaining({
        address: 'terraform_data.hosts',
        type: 'terraform_data',
        name: 'hosts',
        change: expect.objectContaining({
          actions: ['create'],
          before: null,
          after: {
            input: { all: { hosts: { web1: { ansible_host: '127.100.0.1', ansible_port: 22 } } } },
            triggers_replace: null,
          },
          // Known objects mirrored (their non-false parts), as OpenTofu's unknownAsBool and SensitiveAsBool print them.
          after_unknown: { id: true, input: { all: { hosts: { web1: {} } } }, output: true },
          before_sensitive: false,
          after_sensitive: { input: { all: { hosts: { web1: {} } } }, output: {} },
        }),
      }),
    ]);
    expect(planJson.output_changes.ansible_inventory).toMatchObject({
      actions: ['create'],
      after_unknown: true,
      after_sensitive: false,
    });
    expect(planJson.output_changes.environment).toMatchObject({
      actions: ['create'],
      after: 'loopback',
      after_unknown: false,
    });

    const apply = await ws.tofu(['apply', '-input=false', '-auto-approve', '-no-color', 'tfplan']);
    expect(apply.code).toBe(0);
    expect(apply.stdout).toContain('Apply complete! Resources: 1 added, 0 changed, 0 destroyed.');

    const output = await ws.tofu(['output', '-json']);
    expect(output.code).toBe(0);
    expect(JSON.parse(output.stdout)).toEqual({
      ansible_inventory: {
        sensitive: false,
        type: [
          'object',
          {
            all: [
              'object',
              { hosts: ['object', { web1: ['object', { ansible_host: 'string', ansible_port: 'number' }] }] },
            ],
          },
        ],
        value: { all: { hosts: { web1: { ansible_host: '127.100.0.1', ansible_port: 22 } } } },
      },
      environment: { sensitive: false, type: 'string', value: 'loopback' },
    });

    const state = JSON.parse(await readFile(path.join(ws.dir, 'terraform.tfstate'), 'utf8'));
    expect(state).toMatchObject({ version: 4, serial: 1, lineage: expect.any(String) });
    expect(state.outputs.environment).toEqual({ value: 'loopback', type: 'string' });
    expect(state.resources[0]).toMatchObject({ mode: 'managed', type: 'terraform_data', name: 'hosts' });

    const again = await ws.tofu(['plan', '-input=false', '-out=tfplan2', '-no-color']);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('No changes.');
    expect(again.stdout).not.toContain('Plan:');
  });

  it('refuses a stale plan and applies an in-place update from a new one', async () => {
    const ws = await workspace('edge', inventory({ web1: { ansible_host: '127.100.0.1', ansible_port: 22 } }));
    expect((await ws.tofu(['init', '-input=false'])).code).toBe(0);
    expect((await ws.tofu(['plan', '-input=false', '-out=first'])).code).toBe(0);
    expect((await ws.tofu(['plan', '-input=false', '-out=second'])).code).toBe(0);
    expect((await ws.tofu(['apply', '-input=false', '-auto-approve', 'first'])).code).toBe(0);

    const stale = await ws.tofu(['apply', '-input=false', '-auto-approve', '-no-color', 'second']);
    expect(stale.code).toBe(1);
    expect(stale.stderr).toContain('Error: Saved plan is stale');
    const replay = await ws.tofu(['apply', '-input=false', '-auto-approve', '-no-color', 'first']);
    expect(replay.code).toBe(1);
    expect(replay.stderr).toContain('Saved plan is stale');

    await writeFile(
      path.join(ws.dir, 'exocomp.auto.tfvars.json'),
      JSON.stringify(
        inventory({
          web1: { ansible_host: '127.100.0.1', ansible_port: 22 },
          web2: { ansible_host: '127.100.0.2', ansible_port: 2222 },
        }),
      ),
    );
    const plan = await ws.tofu(['plan', '-input=false', '-out=third', '-no-color']);
    expect(plan.stdout).toContain('Plan: 0 to add, 1 to change, 0 to destroy.');
    const apply = await ws.tofu(['apply', '-input=false', '-auto-approve', '-no-color', 'third']);
    expect(apply.stdout).toContain('Apply complete! Resources: 0 added, 1 changed, 0 destroyed.');
    const outputs = JSON.parse((await ws.tofu(['output', '-json'])).stdout);
    expect(Object.keys(outputs.ansible_inventory.value.all.hosts)).toEqual(['web1', 'web2']);
    const state = JSON.parse(await readFile(path.join(ws.dir, 'terraform.tfstate'), 'utf8'));
    expect(state.serial).toBe(2);
    expect(existsSync(path.join(ws.dir, 'terraform.tfstate.backup'))).toBe(true);
  });

  it('marks sensitive outputs and, like OpenTofu, prints their values in clear only in output -json', async () => {
    const ws = await workspace('no-inventory');
    await initPlanApply(ws);
    const applyLog = await ws.tofu(['output', '-no-color']);
    expect(applyLog.stdout).toContain('db_password = <sensitive>');
    expect(applyLog.stdout).not.toContain('loopback-only-db-password');

    const outputs = JSON.parse((await ws.tofu(['output', '-json'])).stdout);
    expect(outputs).toEqual({
      app: {
        sensitive: false,
        type: ['object', { name: 'string', replicas: 'number' }],
        value: { name: 'demo', replicas: 3 },
      },
      app_url: { sensitive: false, type: 'string', value: 'https://demo.example.test' },
      db_password: { sensitive: true, type: 'string', value: 'loopback-only-db-password' },
      replicas: { sensitive: false, type: 'number', value: 3 },
    });
    expect(outputs).not.toHaveProperty('ansible_inventory');
    const state = JSON.parse(await readFile(path.join(ws.dir, 'terraform.tfstate'), 'utf8'));
    expect(state.outputs.db_password).toEqual({ value: 'loopback-only-db-password', type: 'string', sensitive: true });
  });

  it('flags sensitive values in the plan JSON and hides them in the human plan', async () => {
    const ws = await workspace('sealed', inventory({ db1: { ansible_host: '127.100.0.9', ansible_port: 22 } }));
    expect((await ws.tofu(['init', '-input=false'])).code).toBe(0);
    const plan = await ws.tofu(['plan', '-input=false', '-out=tfplan', '-no-color']);
    expect(plan.code).toBe(0);
    expect(plan.stdout).toContain('db_password = (sensitive value)');
    expect(plan.stdout).not.toContain('loopback-only-sealed-password');
    // Real plan files carry sensitive values in clear; so does the stand-in's.
    expect(await readFile(path.join(ws.dir, 'tfplan'), 'utf8')).toContain('loopback-only-sealed-password');

    const planJson = JSON.parse((await ws.tofu(['show', '-json', 'tfplan'])).stdout);
    expect(planJson.output_changes.db_password).toMatchObject({
      after: 'loopback-only-sealed-password',
      after_sensitive: true,
    });
    expect(planJson.output_changes.api_token).toMatchObject({ after_sensitive: true });
    expect(planJson.output_changes.app_port).toMatchObject({ after: 8080, after_sensitive: false });

    expect((await ws.tofu(['apply', '-input=false', '-auto-approve', 'tfplan'])).code).toBe(0);
    const outputs = JSON.parse((await ws.tofu(['output', '-json'])).stdout);
    expect(outputs.api_token).toEqual({ sensitive: true, type: 'string', value: 'loopback-only-api-token' });
    expect(outputs.app_port).toEqual({ sensitive: false, type: 'number', value: 8080 });
    expect(outputs.ansible_inventory.value).toEqual({
      all: { hosts: { db1: { ansible_host: '127.100.0.9', ansible_port: 22 } } },
    });
  });

  it('requires sensitive outputs to be declared sensitive', async () => {
    const ws = await workspace('sealed', inventory({}));
    const file = path.join(ws.dir, 'main.tf.json');
    const config = JSON.parse(await readFile(file, 'utf8'));
    delete config.output.db_password.sensitive;
    await writeFile(file, JSON.stringify(config));
    expect((await ws.tofu(['init', '-input=false'])).code).toBe(0);
    const plan = await ws.tofu(['plan', '-input=false', '-out=tfplan', '-no-color']);
    expect(plan.code).toBe(1);
    expect(plan.stderr).toContain('Error: Output refers to sensitive values');
    expect(existsSync(path.join(ws.dir, 'tfplan'))).toBe(false);
  });

  it('validate fails on malformed JSON and on unknown references', async () => {
    const broken = await workspace('edge', inventory({}));
    expect((await broken.tofu(['init', '-input=false'])).code).toBe(0);
    await writeFile(path.join(broken.dir, 'extra.tf.json'), '{ "output": { "x": ');
    const syntax = await broken.tofu(['validate', '-no-color']);
    expect(syntax.code).toBe(1);
    expect(syntax.stderr).toContain('Error: Invalid JSON syntax');
    expect(syntax.stderr).toContain('extra.tf.json');

    const unknown = await workspace('edge', inventory({}));
    expect((await unknown.tofu(['init', '-input=false'])).code).toBe(0);
    await writeFile(
      path.join(unknown.dir, 'extra.tf.json'),
      JSON.stringify({ output: { a: { value: '${var.nope}' }, b: { value: 'x-${terraform_data.missing.output}' } } }),
    );
    const human = await unknown.tofu(['validate', '-no-color']);
    expect(human.code).toBe(1);
    expect(human.stderr).toContain('Error: Reference to undeclared input variable');
    expect(human.stderr).toContain('Error: Reference to undeclared resource');
    const json = await unknown.tofu(['validate', '-json']);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({
      valid: false,
      error_count: 2,
      diagnostics: [{ severity: 'error' }, { severity: 'error' }],
    });
  });

  it('fails a plan without a value for a required variable, and with a value of the wrong type', async () => {
    const ws = await workspace('edge');
    expect((await ws.tofu(['init', '-input=false'])).code).toBe(0);
    const missing = await ws.tofu(['plan', '-input=false', '-out=tfplan', '-no-color']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('Error: No value for required variable');
    expect(missing.stderr).toContain('"ansible_inventory"');

    const typed = await workspace('sealed', { ...inventory({}), app_port: 'not-a-number' });
    expect((await typed.tofu(['init', '-input=false'])).code).toBe(0);
    const wrong = await typed.tofu(['plan', '-input=false', '-out=tfplan', '-no-color']);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain('Error: Invalid value for input variable');
  });

  it('lets -var-file override auto tfvars', async () => {
    const ws = await workspace('no-inventory', { app_name: 'from-auto' });
    await writeFile(path.join(ws.dir, 'override.tfvars.json'), JSON.stringify({ app_name: 'from-var-file' }));
    expect((await ws.tofu(['init', '-input=false'])).code).toBe(0);
    expect((await ws.tofu(['plan', '-input=false', '-out=tfplan', '-var-file=override.tfvars.json'])).code).toBe(0);
    expect((await ws.tofu(['apply', '-input=false', '-auto-approve', 'tfplan'])).code).toBe(0);
    const outputs = JSON.parse((await ws.tofu(['output', '-json'])).stdout);
    expect(outputs.app_url.value).toBe('https://from-var-file.example.test');
  });

  it('prints {} for output -json before any apply', async () => {
    const ws = await workspace('edge', inventory({}));
    expect((await ws.tofu(['init', '-input=false'])).code).toBe(0);
    const output = await ws.tofu(['output', '-json']);
    expect(output.code).toBe(0);
    expect(JSON.parse(output.stdout)).toEqual({});
  });

  it('logs every invocation as one JSON line', async () => {
    const ws = await workspace('edge', inventory({}));
    await initPlanApply(ws);
    await ws.tofu(['output', '-json']);
    const log = await readStandinLog(ws.log);
    expect(log.map((entry) => entry.argv)).toEqual([
      ['init', '-input=false', '-no-color'],
      ['plan', '-input=false', '-out=tfplan', '-no-color'],
      ['apply', '-input=false', '-auto-approve', '-no-color', 'tfplan'],
      ['output', '-json'],
    ]);
    expect(invocationsOf(log, 'apply')).toHaveLength(1);
    for (const entry of log) {
      expect(entry.cwd).toBe(ws.dir);
      expect(Number.isInteger(entry.pid)).toBe(true);
      expect(Number.isNaN(Date.parse(entry.at))).toBe(false);
    }
    expect(await readStandinLog(path.join(root, 'never-written.jsonl'))).toEqual([]);
  });

  it('fails the subcommand named by EXOCOMP_TOFU_STANDIN_FAIL and only that one', async () => {
    const ws = await workspace('edge', inventory({}));
    const env = { EXOCOMP_TOFU_STANDIN_FAIL: 'plan' };
    expect((await ws.tofu(['init', '-input=false'], env)).code).toBe(0);
    const plan = await ws.tofu(['plan', '-input=false', '-out=tfplan', '-no-color'], env);
    expect(plan.code).toBe(1);
    expect(plan.stderr).toContain('Error: Simulated failure');
    expect(existsSync(path.join(ws.dir, 'tfplan'))).toBe(false);
    expect((await ws.tofu(['output', '-json'], env)).code).toBe(0);
  });

  it('can be killed mid-apply (EXOCOMP_TOFU_STANDIN_APPLY_DELAY_MS): no state written, the lock is held meanwhile and recovered after', async () => {
    const ws = await workspace('edge', inventory({ web1: { ansible_host: '127.100.0.1', ansible_port: 22 } }));
    expect((await ws.tofu(['init', '-input=false'])).code).toBe(0);
    expect((await ws.tofu(['plan', '-input=false', '-out=tfplan'])).code).toBe(0);

    const child = spawn(standinPath, ['apply', '-input=false', '-auto-approve', '-no-color', 'tfplan'], {
      cwd: ws.dir,
      env: { ...process.env, EXOCOMP_TOFU_STANDIN_LOG: ws.log, EXOCOMP_TOFU_STANDIN_APPLY_DELAY_MS: '600000' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<NodeJS.Signals | null>((resolve) =>
      child.once('exit', (_code, signal) => resolve(signal)),
    );
    await new Promise<void>((resolve) => {
      let seen = '';
      child.stdout.on('data', (chunk: Buffer) => {
        seen += chunk.toString();
        if (seen.includes('terraform_data.hosts: Creating...')) resolve();
      });
    });

    const concurrent = await ws.tofu(['plan', '-input=false', '-no-color']);
    expect(concurrent.code).toBe(1);
    expect(concurrent.stderr).toContain('Error: Error acquiring the state lock');

    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');
    expect(existsSync(path.join(ws.dir, 'terraform.tfstate'))).toBe(false);

    const retry = await ws.tofu(['apply', '-input=false', '-auto-approve', '-no-color', 'tfplan']);
    expect(retry.stderr).toBe('');
    expect(retry.stdout).toContain('Apply complete! Resources: 1 added, 0 changed, 0 destroyed.');
    expect(invocationsOf(await readStandinLog(ws.log), 'apply')).toHaveLength(2);
  });

  it('keeps the state in an http backend: nothing on disk, and a fresh copy of the workspace sees it', async () => {
    const server = await HttpStateServer.start();
    try {
      const vars = inventory({ web: { ansible_host: '127.0.0.9', ansible_port: 22 } });
      const first = await workspace('edge', vars);
      await writeFile(path.join(first.dir, 'backend.tf.json'), JSON.stringify(server.backendBlock('edge')));
      await initPlanApply(first);
      expect(existsSync(path.join(first.dir, 'terraform.tfstate'))).toBe(false);
      expect(JSON.parse(server.states.get('/state/edge') ?? '{}')).toMatchObject({ version: 4, serial: 1 });

      const second = await workspace('edge', vars);
      await writeFile(path.join(second.dir, 'backend.tf.json'), JSON.stringify(server.backendBlock('edge')));
      expect((await second.tofu(['plan', '-no-color'])).stderr).toMatch(/tofu init/);
      expect((await second.tofu(['init', '-no-color'])).stdout).toContain('Successfully configured the backend "http"');
      expect((await second.tofu(['plan', '-no-color'])).stdout).toContain('No changes.');
      expect(JSON.parse((await second.tofu(['output', '-json'])).stdout)).toHaveProperty('ansible_inventory');
    } finally {
      await server.close();
    }
  });

  it('rejects unknown flags and unknown commands like OpenTofu', async () => {
    const ws = await workspace('edge', inventory({}));
    expect((await ws.tofu(['init', '-input=false'])).code).toBe(0);
    const flag = await ws.tofu(['plan', '-bogus', '-no-color']);
    expect(flag.code).toBe(1);
    expect(flag.stderr).toContain('flag provided but not defined: -bogus');
    const command = await ws.tofu(['destroy']);
    expect(command.code).toBe(1);
    expect(command.stderr).toContain('OpenTofu has no command named "destroy"');
  });
});
