/**
 * Rules the workflow and action files keep, read from the YAML as written (issue 25): every third-party action is
 * pinned to a full commit SHA with its version in a comment (a tag can be moved under jobs that hold secrets), CI
 * runs on both Node versions the code must work on, and the root action.yml meets the Marketplace's metadata rules.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { describe, expect, it } from 'vitest';
import {
  CHECKOUT_ACTION,
  renderGitHubSchedule,
  SETUP_OPENTOFU_ACTION,
  type ScheduleSpec,
} from '../../src/domain/schedule.js';
import { repoRoot } from '../support/action-runner.js';

/** Every file whose `uses:` a user runs or copies: this repository's workflows, the examples, the composite actions. */
async function filesWithUses(): Promise<string[]> {
  const inDir = async (dir: string) =>
    (await readdir(join(repoRoot, dir))).filter((f) => f.endsWith('.yml')).map((f) => join(dir, f));
  const actions = (await readdir(join(repoRoot, 'actions'))).map((name) => join('actions', name, 'action.yml'));
  // The docs' snippets are copied as they are, so they are pinned as strictly.
  const docs = (await readdir(join(repoRoot, 'docs'))).filter((f) => f.endsWith('.md')).map((f) => join('docs', f));
  return [
    ...(await inDir('.github/workflows')),
    ...(await inDir('examples/github')),
    'action.yml',
    ...actions,
    'README.md',
    ...docs,
  ];
}

/**
 * The first release of each third-party action we pin whose action.yml says `using: node24` (read from each
 * repository's tags): an older one runs on Node 20, which GitHub's runners deprecate with a warning on every run.
 */
const FIRST_NODE24_MAJOR: Record<string, number> = {
  'actions/checkout': 5,
  'actions/setup-node': 5,
  'actions/create-github-app-token': 3,
  'opentofu/setup-opentofu': 2,
  'aws-actions/configure-aws-credentials': 6,
  'google-github-actions/auth': 3,
};

/** `uses:` values with the text of their line (for the version comment), from a YAML file as written. */
function usesOf(text: string): { uses: string; line: string }[] {
  return text
    .split('\n')
    .map((line) => ({ line, uses: /^\s*(?:-\s+)?uses:\s*([^\s#]+)/.exec(line)?.[1] }))
    .flatMap(({ line, uses }) => (uses === undefined ? [] : [{ uses, line }]));
}

/** This repository's own actions and workflows (pinned by the caller's ref, not here). */
const ours = (uses: string) => uses.startsWith('./') || uses.startsWith('exocomp/provision');

describe('pinned third-party actions', () => {
  it('pins every third-party action to a 40-hex commit SHA with a comment naming its version', async () => {
    const seen: string[] = [];
    for (const file of await filesWithUses()) {
      for (const { uses, line } of usesOf(await readFile(join(repoRoot, file), 'utf8'))) {
        if (ours(uses)) continue;
        seen.push(uses);
        expect(uses, `${file}: ${uses}`).toMatch(/^[\w.-]+\/[\w./-]+@[0-9a-f]{40}$/);
        expect(line, `${file}: ${uses} needs a version comment`).toMatch(/#\s*v\d+(\.\d+)*\b/);
        const action = uses.split('@')[0]!;
        const major = Number(/#\s*v(\d+)/.exec(line)?.[1]);
        expect(FIRST_NODE24_MAJOR[action], `${file}: ${action} has no known node24 release`).toBeDefined();
        expect(major, `${file}: ${uses} runs on Node 20`).toBeGreaterThanOrEqual(FIRST_NODE24_MAJOR[action]!);
      }
    }
    // The reader found the actions these files use (it cannot pass by reading nothing).
    expect(seen.some((uses) => uses.startsWith('actions/checkout@'))).toBe(true);
  });

  it('pins them in the workflows `schedule add` writes too (they hold the fleet key)', () => {
    const spec: ScheduleSpec = {
      name: 'fleet',
      cron: '0 17 3 * * *',
      target: 'tf:edge',
      concurrencyKey: 'fleet',
      playbook: 'site.yml',
      args: [],
      ledgerBranch: 'exocomp-ledger',
    };
    const shapes = [spec, { ...spec, shards: 2 }, { ...spec, kind: 'drift' as const, workspace: 'infra/edge' }];
    const seen = shapes.flatMap((shape) => usesOf(renderGitHubSchedule(shape))).filter(({ uses }) => !ours(uses));
    expect(seen.map(({ uses }) => uses)).toEqual(expect.arrayContaining([CHECKOUT_ACTION, SETUP_OPENTOFU_ACTION]));
    for (const { uses, line } of seen) {
      expect(uses).toMatch(/^[\w.-]+\/[\w./-]+@[0-9a-f]{40}$/);
      expect(line).toMatch(/#\s*v\d+(\.\d+)*\b/);
    }
  });

  it('tells a tag from a SHA (the rule above fails on a tag)', () => {
    const [tagged] = usesOf('      - uses: actions/checkout@v4\n');
    expect(tagged?.uses).toBe('actions/checkout@v4');
    expect(tagged?.uses).not.toMatch(/@[0-9a-f]{40}$/);
  });
});

describe('CI', () => {
  it('tests on Node 20 and Node 24', async () => {
    const workflow = parseYaml(await readFile(join(repoRoot, '.github/workflows/test.yml'), 'utf8'));
    expect(workflow.jobs.test.strategy.matrix.node).toEqual([20, 24]);
    const setupNode = workflow.jobs.test.steps.find((step: { uses?: string }) =>
      step.uses?.startsWith('actions/setup-node@'),
    );
    expect(setupNode.with['node-version']).toBe('${{ matrix.node }}');
  });
});

describe('the reusable workflow', () => {
  it('grants permissions per job, and an OIDC token only to the jobs that run tofu (plan, apply)', async () => {
    const workflow = parseYaml(await readFile(join(repoRoot, '.github/workflows/provision-reusable.yml'), 'utf8'));
    expect(workflow.permissions).toBeUndefined();
    const jobs = Object.entries(workflow.jobs as Record<string, { permissions?: Record<string, string> }>);
    expect(jobs.map(([name]) => name)).toEqual(['plan', 'apply', 'ssh-wait', 'onboard', 'configure']);
    for (const [name, job] of jobs) {
      const chain = { contents: 'write', 'pull-requests': 'write', actions: 'read' };
      const expected = name === 'plan' || name === 'apply' ? { ...chain, 'id-token': 'write' } : chain;
      expect(job.permissions, name).toEqual(expected);
    }
  });

  it("runs this repository's actions at the commit of its own file, whatever ref the caller named", async () => {
    const workflow = parseYaml(await readFile(join(repoRoot, '.github/workflows/provision-reusable.yml'), 'utf8'));
    type Step = { uses?: string; with?: Record<string, unknown> };
    let inner = 0;
    for (const [name, job] of Object.entries(workflow.jobs as Record<string, { steps: Step[] }>)) {
      const own = job.steps.findIndex((step) => step.with?.repository !== undefined);
      // `uses:` takes no expression: a checkout at job.workflow_sha (the called file's commit), then local paths.
      expect(job.steps[own], name).toEqual({
        uses: expect.stringMatching(/^actions\/checkout@[0-9a-f]{40}$/),
        with: {
          repository: '${{ job.workflow_repository }}',
          ref: '${{ job.workflow_sha }}',
          path: '.exocomp-provision',
          'persist-credentials': false,
        },
      });
      for (const [index, step] of job.steps.entries()) {
        expect(step.uses ?? '', `${name}: ${step.uses}`).not.toMatch(/^exocomp\/provision/);
        if (!step.uses?.startsWith('./')) continue;
        expect(step.uses, name).toMatch(/^\.\/\.exocomp-provision\/actions\/[a-z-]+$/);
        expect(index, `${name}: ${step.uses} runs before its checkout`).toBeGreaterThan(own);
        inner += 1;
      }
    }
    // plan, apply, ssh-wait, onboard and configure, and setup in onboard and configure.
    expect(inner).toBe(7);
  });

  it("links the apply environment to the plan job's status: its PR comment, else its run summary (status-url)", async () => {
    const workflow = parseYaml(await readFile(join(repoRoot, '.github/workflows/provision-reusable.yml'), 'utf8'));
    const planStep = workflow.jobs.plan.steps.find((step: { id?: string }) => step.id === 'plan');
    expect(planStep.uses).toMatch(/actions\/plan/);
    expect(workflow.jobs.plan.outputs['status-url']).toBe('${{ steps.plan.outputs.status-url }}');
    expect(workflow.jobs.apply.needs).toBe('plan');
    expect(workflow.jobs.apply.environment).toEqual({
      name: '${{ inputs.environment }}',
      url: '${{ needs.plan.outputs.status-url }}',
    });
    const plan = parseYaml(await readFile(join(repoRoot, 'actions/plan/action.yml'), 'utf8'));
    expect(Object.keys(plan.outputs)).toContain('status-url');
  });
});

describe('the release workflow', () => {
  it('moves the major tag with the release app’s token, and says what to set up when the app is missing', async () => {
    const release = parseYaml(await readFile(join(repoRoot, '.github/workflows/release.yml'), 'utf8'));
    const steps: { name?: string; uses?: string; id?: string; run?: string; env?: Record<string, string> }[] =
      release.jobs.release.steps;
    const index = (name: string) => steps.findIndex((step) => step.name === name);
    const check = steps[index('The release app is configured')];
    expect(check?.run).toContain('::error::moving $MAJOR needs a GitHub App token');
    expect(check?.run).toMatch(/EXOCOMP_RELEASE_APP_ID and EXOCOMP_RELEASE_APP_PRIVATE_KEY/);
    const mint = steps[index("Mint the release app's token")];
    expect(mint?.uses).toMatch(/^actions\/create-github-app-token@[0-9a-f]{40}$/);
    const move = steps[index('Move the major tag')];
    expect(move?.env?.TOKEN).toBe('${{ steps.app-token.outputs.token }}');
    expect(move?.run).not.toContain('github.token');
    expect(index('The release app is configured')).toBeLessThan(index('Move the major tag'));
    // The checkout's GITHUB_TOKEN would be sent with the push otherwise.
    expect(steps[0]?.uses).toMatch(/^actions\/checkout@/);
    expect((steps[0] as { with?: Record<string, unknown> }).with?.['persist-credentials']).toBe(false);
  });
});

/** The colors the Marketplace accepts for `branding.color` (docs: metadata syntax for GitHub Actions, "branding"). */
const BRANDING_COLORS = ['white', 'black', 'yellow', 'blue', 'green', 'orange', 'red', 'purple', 'gray-dark'];

describe('the root action.yml and the Marketplace', () => {
  it('has a name, a description of fewer than 125 characters, and branding with an icon and an accepted color', async () => {
    const metadata = parseYaml(await readFile(join(repoRoot, 'action.yml'), 'utf8'));
    expect(typeof metadata.name).toBe('string');
    expect(metadata.name.trim()).not.toBe('');
    expect(typeof metadata.description).toBe('string');
    // The Marketplace asks for fewer than 125 characters.
    expect(metadata.description.length).toBeLessThan(125);
    expect(metadata.branding.icon).toMatch(/^[a-z0-9-]+$/);
    expect(BRANDING_COLORS).toContain(metadata.branding.color);
  });
});
