/**
 * The whole-workflow emulation (test/support/workflow-runner.ts) refuses what
 * GitHub would not give a workflow: a secret outside the documented set, an
 * undeclared input, a token permission the job does not declare, a tool no
 * step installed; and it follows needs, outputs, `if:` and status functions
 * as GitHub does. Only `run:` steps here: no host, no action bundle.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { events } from '../support/action-runner.js';
import { GitHubDouble } from '../support/github-double.js';
import { ResultsDouble } from '../support/results-double.js';
import { standinPath } from '../support/tofu-standin.js';
import { evaluate } from '../support/workflow-expressions.js';
import { runnerPathWithoutTofu, WorkflowRunner, type WorkflowRun } from '../support/workflow-runner.js';

const REPOSITORY = 'acme/infra';
const push = { event: events.push(REPOSITORY, 'alice'), actor: 'alice', runId: 1 };
const stdoutOf = (run: WorkflowRun, job: string) =>
  run.jobs
    .find((j) => j.name === job)
    ?.steps.map((s) => s.result?.stdout ?? '')
    .join('') ?? '';

describe('the workflow emulation', () => {
  let dir: string;
  let double: GitHubDouble;
  let results: ResultsDouble;
  let runner: WorkflowRunner;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'exocomp-workflow-runner-'));
    double = await GitHubDouble.start({ repository: REPOSITORY, gitRoot: dir });
    results = await ResultsDouble.start('github.localhost');
    runner = new WorkflowRunner({
      double,
      results,
      hostname: 'github.localhost',
      repository: REPOSITORY,
      repositoryDir: dir,
      secrets: { DOCUMENTED: 'documented-value' },
      path: await runnerPathWithoutTofu(join(dir, 'path')),
      tofu: standinPath,
      reviewer: 'bob',
    });
  });

  afterAll(async () => {
    await results?.close();
    await double?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('gives the documented secrets and refuses any other', async () => {
    const ok = await runner.run(
      '.github/workflows/a.yml',
      'on: push\njobs:\n  a:\n    steps:\n      - run: echo "got ${{ secrets.DOCUMENTED }}"\n',
      push,
    );
    expect(stdoutOf(ok, 'a')).toContain('got documented-value');
    await expect(
      runner.run(
        '.github/workflows/b.yml',
        'on: push\njobs:\n  a:\n    steps:\n      - run: echo "${{ secrets.UNNAMED }}"\n',
        push,
      ),
    ).rejects.toThrow(/secrets\.UNNAMED, which the docs do not name/);
  });

  it('refuses inputs a workflow does not declare; declared dispatch inputs read as empty on push', async () => {
    const text =
      'on:\n  push:\n  workflow_dispatch:\n    inputs:\n      workflow-id: { type: string }\njobs:\n  a:\n    steps:\n      - run: echo "id=[${{ inputs.workflow-id }}]"\n';
    expect(stdoutOf(await runner.run('.github/workflows/c.yml', text, push), 'a')).toContain('id=[]');
    const dispatched = await runner.run('.github/workflows/c.yml', text, {
      ...push,
      event: events.workflowDispatch(REPOSITORY, 'bob', { 'workflow-id': 'edge-1' }),
      inputs: { 'workflow-id': 'edge-1' },
    });
    expect(stdoutOf(dispatched, 'a')).toContain('id=[edge-1]');
    await expect(
      runner.run(
        '.github/workflows/d.yml',
        'on: push\njobs:\n  a:\n    steps:\n      - run: echo "${{ inputs.nope }}"\n',
        push,
      ),
    ).rejects.toThrow(/does not declare/);
  });

  it('mints each job a token with exactly its permissions', async () => {
    const text =
      'on: push\npermissions:\n  contents: read\njobs:\n  a:\n    steps:\n      - run: echo "token=$T"\n        env:\n          T: ${{ github.token }}\n';
    const token = /token=(\S+)/.exec(stdoutOf(await runner.run('.github/workflows/e.yml', text, push), 'a'))?.[1] ?? '';
    expect(double.state.tokens[token]?.permissions).toEqual({
      actions: 'none',
      contents: 'read',
      issues: 'none',
      'pull-requests': 'none',
    });
  });

  it('follows needs, job outputs, if: and the status functions', async () => {
    const text = [
      'on: push',
      'jobs:',
      '  a:',
      '    outputs: { x: "${{ steps.s.outputs.x }}" }',
      '    steps:',
      '      - id: s',
      '        run: echo "x=yes" >> "$GITHUB_OUTPUT"',
      '  b:',
      '    needs: a',
      "    if: needs.a.outputs.x == 'yes'",
      '    steps: [{ run: "echo b ran" }]',
      '  broken:',
      '    steps: [{ run: "exit 3" }, { run: "echo never" }, { if: failure(), run: "echo cleanup" }]',
      '  after-broken:',
      '    needs: broken',
      '    steps: [{ run: "echo never" }]',
      '  always:',
      '    needs: broken',
      '    if: ${{ !cancelled() }}',
      '    steps: [{ run: "echo always ran" }]',
    ].join('\n');
    const run = await runner.run('.github/workflows/f.yml', text, push);
    expect(Object.fromEntries(run.jobs.map((j) => [j.name, j.conclusion]))).toEqual({
      a: 'success',
      b: 'success',
      broken: 'failure',
      'after-broken': 'skipped',
      always: 'success',
    });
    expect(stdoutOf(run, 'broken')).toBe('cleanup\n');
    expect(run.conclusion).toBe('failure');
  });

  it('has no tofu on the runner until setup-opentofu (without its wrapper) put one there', async () => {
    const probe = '      - run: command -v tofu terraform || echo "no tofu"\n';
    expect(
      stdoutOf(await runner.run('.github/workflows/g.yml', `on: push\njobs:\n  a:\n    steps:\n${probe}`, push), 'a'),
    ).toContain('no tofu');
    const installed = await runner.run(
      '.github/workflows/g.yml',
      `on: push\njobs:\n  a:\n    steps:\n      - uses: opentofu/setup-opentofu@v1\n        with: { tofu_wrapper: false }\n${probe}`,
      push,
    );
    expect(stdoutOf(installed, 'a')).toMatch(/tofu-bin\/tofu/);
    await expect(
      runner.run(
        '.github/workflows/g.yml',
        'on: push\njobs:\n  a:\n    steps:\n      - uses: opentofu/setup-opentofu@v1\n',
        push,
      ),
    ).rejects.toThrow(/tofu_wrapper: false/);
  });

  it("names the job's own workflow file in job.workflow_*, and checks exocomp/provision out only at this checkout's commit", async () => {
    const show =
      '      - run: echo "${{ job.workflow_repository }} ${{ job.workflow_file_path }} ${{ job.workflow_sha }}"\n';
    const own = await runner.run('.github/workflows/h.yml', `on: push\njobs:\n  a:\n    steps:\n${show}`, push);
    expect(stdoutOf(own, 'a')).toMatch(/^acme\/infra \.github\/workflows\/h\.yml [0-9a-f]{40}$/m);
    const checkout = (ref: string) =>
      `on: push\njobs:\n  a:\n    steps:\n      - uses: actions/checkout@v4\n        with: { repository: exocomp/provision, ref: ${ref}, path: .p }\n      - uses: ./.p/actions/status\n        with: { comment: "false" }\n`;
    await expect(runner.run('.github/workflows/h.yml', checkout('b'.repeat(40)), push)).rejects.toThrow(
      /checks out exocomp\/provision only at this checkout's commit/,
    );
    // Without the checkout, ./.p/actions/status is nobody's action.
    await expect(
      runner.run(
        '.github/workflows/h.yml',
        'on: push\njobs:\n  a:\n    steps:\n      - uses: ./.p/actions/status\n',
        push,
      ),
    ).rejects.toThrow(/no model of \.\/\.p\/actions\/status/);
  });

  it('evaluates the expressions the documented workflows use', () => {
    const scope = {
      contexts: { inputs: { 'aws-role-to-assume': '' }, needs: { plan: { outputs: { 'workflow-id': 'edge-1' } } } },
      status: 'failure' as const,
    };
    expect(evaluate("inputs.aws-role-to-assume != ''", scope)).toBe(false);
    expect(evaluate('needs.plan.outputs.workflow-id', scope)).toBe('edge-1');
    expect(evaluate('!cancelled()', scope)).toBe(true);
    expect(evaluate("success() || 'fallback'", scope)).toBe('fallback');
  });
});
