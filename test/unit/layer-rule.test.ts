/**
 * The layer table of docs/architecture.md is a lint rule (eslint.config.mjs):
 * ESLint's own API lints a snippet in place of a file of a layer, so a rule
 * that silently stopped matching (a renamed folder, a changed pattern) fails here.
 */
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../support/action-runner.js';

// Only the layer rule runs, so no type information is needed: building the typed program for one snippet cost ~15 s.
const eslint = new ESLint({
  cwd: repoRoot,
  ruleFilter: ({ ruleId }) => ruleId === 'no-restricted-imports',
  overrideConfig: { languageOptions: { parserOptions: { projectService: false, project: null } } },
});

async function layerProblems(filePath: string, code: string): Promise<string[]> {
  // The path of a file of the layer (the rule's `files` blocks match it); the text is the snippet.
  const [result] = await eslint.lintText(code, { filePath });
  expect(result?.messages.filter((m) => m.fatal)).toEqual([]);
  return (result?.messages ?? []).filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
}

describe('the layer rule', () => {
  it.each([
    [
      'src/app/job/run-ci-job.ts',
      "import { gitlabPlatform } from '../../platform/gitlab/platform.js';",
      'the core is platform-neutral',
    ],
    ['src/domain/names.ts', "import { GitLedgerStore } from '../ledger/git-store.js';", 'the domain is pure'],
    [
      'src/platform/github/holder.ts',
      "import { program } from '../../cli/program.js';",
      'a CI face is reached from its entry points',
    ],
    [
      'src/actions/plan/main.ts',
      "import { ProcessGitCli } from '../../adapters/git.js';",
      'an entry point parses inputs',
    ],
    [
      'src/ledger/records.ts',
      "import { runPlaybook } from '../adapters/ansible.js';",
      'the ledger knows the domain and the git adapter only',
    ],
    [
      'src/cli/commands/gitlab.ts',
      "import { runAction } from '../../actions/plan/main.js';",
      'the CLI is an entry point of its own: it wires adapters, never the actions',
    ],
  ])('refuses an outward import in %s', async (file, code, why) => {
    const problems = await layerProblems(file, `${code}\nexport const used = [${code.match(/\{ (\w+) \}/)![1]}];\n`);
    expect(problems).toEqual([expect.stringContaining(why)]);
    expect(problems[0]).toContain('docs/architecture.md, "Layers"');
  });

  it.each([
    ['src/app/job/run-ci-job.ts', "import { parseWorkflowId } from '../../domain/names.js';"],
    // The ledger is a store over git: the git adapter is its plumbing.
    ['src/ledger/records.ts', "import { ProcessGitCli } from '../adapters/git.js';"],
    // GitLab jobs enter through `exocomp gitlab …`.
    ['src/cli/commands/gitlab.ts', "import { readGitLabJob } from '../../platform/gitlab/job.js';"],
  ])('lets an inward import through in %s', async (file, code) => {
    expect(await layerProblems(file, `${code}\nexport const used = [${code.match(/\{ (\w+) \}/)![1]}];\n`)).toEqual([]);
  });
});
