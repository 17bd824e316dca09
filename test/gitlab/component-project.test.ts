/**
 * Issue 24: the component project's own .gitlab-ci.yml, and the includes `schedule add --gitlab` writes,
 * as gitlab-ci-local (a GitLab CI interpreter) reads them: valid, its release job (the `release` keyword,
 * what the CI/CD Catalog publishes) only in pipelines of semantic-version tags, and every input the
 * generated includes carry accepted by the templates' `spec: inputs`.
 */
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProcess, type RunResult } from '../../src/adapters/process.js';
import { renderGitLabSchedule } from '../../src/domain/schedule.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const gitlabCiLocal = path.join(repoRoot, 'node_modules/.bin/gitlab-ci-local');
let root: string;

async function project(name: string, files: Record<string, string>, withTemplates = false): Promise<string> {
  const dir = path.join(root, name);
  await mkdir(dir);
  if (withTemplates) await cp(path.join(repoRoot, 'templates'), path.join(dir, 'templates'), { recursive: true });
  for (const [file, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, file)), { recursive: true });
    await writeFile(path.join(dir, file), text);
  }
  const git = (...args: string[]) => runProcess('git', args, { cwd: dir });
  await git('init', '--quiet', '-b', 'main');
  await git('remote', 'add', 'origin', 'https://gitlab.example.com/exocomp/provision.git');
  await git('add', '-A');
  await git('-c', 'user.name=t', '-c', 'user.email=t@example.invalid', 'commit', '--quiet', '-m', 'x');
  return dir;
}

function gcl(cwd: string, args: string[]): Promise<RunResult> {
  return runProcess(gitlabCiLocal, args, {
    cwd,
    env: { PATH: process.env.PATH, HOME: path.join(root, 'home'), LANG: 'C.UTF-8' },
    timeoutMs: 120_000,
  });
}

/** The job names `--list` shows for a pipeline with these variables. */
async function listedJobs(cwd: string, variables: Record<string, string>): Promise<string[]> {
  const r = await gcl(cwd, ['--list', ...Object.entries(variables).flatMap(([k, v]) => ['--variable', `${k}=${v}`])]);
  expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
  const lines = r.stdout.split('\n');
  const header = lines.findIndex((line) => /^name\s+description\s+stage/.test(line));
  return lines
    .slice(header + 1)
    .map((line) => line.split(/\s+/)[0] ?? '')
    .filter(Boolean);
}

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'exocomp-gitlab-component-'));
  await mkdir(path.join(root, 'home'));
});

afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

describe("the component project's .gitlab-ci.yml", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await project('component', {
      '.gitlab-ci.yml': await readFile(path.join(repoRoot, '.gitlab-ci.yml'), 'utf8'),
    });
  });

  it('is valid GitLab CI (--preview), with a release job using the release keyword for the tag', async () => {
    const preview = await gcl(dir, ['--preview', '--variable', 'CI_COMMIT_TAG=1.4.0']);
    expect(preview.code, `${preview.stdout}\n${preview.stderr}`).toBe(0);
    expect(preview.stdout).toMatch(/create-release:[\s\S]*release:\s*\n\s+tag_name: \$CI_COMMIT_TAG/);
  }, 120_000);

  it.each([
    ['1.4.0', true],
    ['2.0.0-rc.1', true],
    ['v1.4.0', false],
    ['1.4', false],
    ['nightly', false],
  ])(
    'a pipeline of tag %s runs the components, and the release job only for a semantic version',
    async (tag, released) => {
      const jobs = await listedJobs(dir, { CI_COMMIT_TAG: tag });
      expect(jobs).toContain('components');
      expect(jobs.includes('create-release')).toBe(released);
    },
    120_000,
  );

  it('a branch pipeline runs the components and releases nothing', async () => {
    expect(await listedJobs(dir, {})).toEqual(['components']);
  }, 120_000);
});

describe('the includes `schedule add --gitlab` writes, read against the templates (issue 24, item 5)', () => {
  const spec = {
    name: 'nightly',
    cron: '0 17 3 * * *',
    target: 'tf:edge',
    concurrencyKey: 'edge',
    playbook: 'site.yml',
    args: [],
    ledgerBranch: 'exocomp-ledger',
  };
  const include = { image: 'registry.example.com/ops/exocomp:1.4', ledgerProject: 'ops/ledger' };

  it('a drift include carries state, image and ledger project into the job', async () => {
    const { file } = renderGitLabSchedule(
      { ...spec, kind: 'drift', workspace: 'edge' },
      { ...include, template: 'templates/drift.yml', state: 'gitlab' },
    );
    const dir = await project('drift', { '.gitlab-ci.yml': file }, true);
    const preview = await gcl(dir, ['--preview']);
    expect(preview.code, `${preview.stdout}\n${preview.stderr}`).toBe(0);
    expect(preview.stdout).toMatch(/image:\s+name: registry\.example\.com\/ops\/exocomp:1\.4/);
    expect(preview.stdout).toMatch(/EXOCOMP_STATE: gitlab/);
    expect(preview.stdout).toMatch(/EXOCOMP_LEDGER_PROJECT: ops\/ledger/);
  }, 120_000);

  it('a sharded converge include carries image and ledger project into the shard and fold jobs', async () => {
    const { file } = renderGitLabSchedule({ ...spec, shards: 3 }, { ...include, template: 'templates/converge.yml' });
    const dir = await project('converge', { '.gitlab-ci.yml': file }, true);
    const preview = await gcl(dir, ['--preview']);
    expect(preview.code, `${preview.stdout}\n${preview.stderr}`).toBe(0);
    expect(
      preview.stdout.match(/image:\s+name: registry\.example\.com\/ops\/exocomp:1\.4/g)?.length,
    ).toBeGreaterThanOrEqual(2);
    expect(preview.stdout.match(/EXOCOMP_LEDGER_PROJECT: ops\/ledger/g)?.length).toBeGreaterThanOrEqual(2);
  }, 120_000);
});

describe('the templates’ spec: inputs (issue 38, item 7)', () => {
  it('describe every input, as the CI/CD Catalog shows them', async () => {
    const { readdir } = await import('node:fs/promises');
    const { parse } = await import('yaml');
    const undescribed: string[] = [];
    for (const file of await readdir(path.join(repoRoot, 'templates'))) {
      const header = (await readFile(path.join(repoRoot, 'templates', file), 'utf8')).split(/^---$/m)[0] ?? '';
      const inputs = (parse(header) as { spec: { inputs: Record<string, { description?: string } | null> } }).spec
        .inputs;
      for (const [name, input] of Object.entries(inputs))
        if (!input?.description?.trim()) undescribed.push(`${file}: ${name}`);
    }
    expect(undescribed).toEqual([]);
  });
});
