/**
 * The provider plugin cache across runs (issue 4): the apply job's bundle
 * saves TF_PLUGIN_CACHE_DIR with the real @actions/cache client (cache
 * service v2, against the results double) under the key the workspace's
 * committed `.terraform.lock.hcl` gives, and the next run's apply job —
 * starting with an empty RUNNER_TEMP, as a runner's does — restores it
 * before tofu init, which then finds its providers there. A changed lock file
 * is a new key: a miss, and a new entry.
 */
import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCK_FILE, providerCacheKey } from '../../src/platform/github/provider-cache.js';
import { ResultsDouble } from '../support/results-double.js';
import { standinPath } from '../support/tofu-standin.js';
import { createActionFixture, describeRun, planInputs, type ActionFixture } from './helpers.js';

const HOSTNAME = 'github.localhost';

/** A committed lock file selecting one provider, as `tofu init` writes it. */
const lockFile = (version: string) =>
  [
    '# This file is maintained automatically by "tofu init".',
    '# Manual edits may be lost in future updates.',
    '',
    'provider "registry.opentofu.org/hashicorp/null" {',
    `  version     = "${version}"`,
    `  constraints = "~> 3.2"`,
    '  hashes = [',
    `    "h1:loopbackOnlyHashForNull${version.replace(/\./g, '')}=",`,
    '  ]',
    '}',
    '',
  ].join('\n');

/**
 * tofu as TF_PLUGIN_CACHE_DIR makes `init` behave: each provider the lock file
 * selects is taken from the cache when it holds it, else downloaded into the
 * cache first. Logs what it found (and the provider's bytes), then runs the stand-in.
 */
const wrapper = (log: string) => `#!/usr/bin/env node
const fs = require('node:fs');
const path = require('node:path');
const { randomUUID } = require('node:crypto');
const { spawnSync } = require('node:child_process');
const args = process.argv.slice(2);
const cacheDir = process.env.TF_PLUGIN_CACHE_DIR;
if (args.find((arg) => !arg.startsWith('-')) === 'init' && cacheDir) {
  const lock = fs.existsSync('.terraform.lock.hcl') ? fs.readFileSync('.terraform.lock.hcl', 'utf8') : '';
  for (const [, source, version] of lock.matchAll(/provider "([^"]+)" \\{\\s*version\\s*=\\s*"([^"]+)"/g)) {
    const file = path.join(cacheDir, source, version, 'linux_amd64', 'terraform-provider-' + source.split('/').pop() + '_v' + version);
    const found = fs.existsSync(file) ? 'cached' : 'downloaded';
    if (found === 'downloaded') {
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(file, 'provider ' + source + ' ' + version + ' ' + randomUUID() + '\\n', { mode: 0o755 });
    }
    fs.appendFileSync(${JSON.stringify(log)}, JSON.stringify({ source, version, found, content: fs.readFileSync(file, 'utf8') }) + '\\n');
  }
}
const run = spawnSync(${JSON.stringify(standinPath)}, args, { stdio: 'inherit' });
process.exit(run.status ?? 1);
`;

interface InitRecord {
  source: string;
  version: string;
  found: 'cached' | 'downloaded';
  content: string;
}

describe('the provider cache, saved after an apply and restored by the next run', () => {
  let fx: ActionFixture;
  let results: ResultsDouble;
  let tofu: string;
  let initLog: string;
  let runnerTemp: string;

  const inits = async (): Promise<InitRecord[]> =>
    (await readFile(initLog, 'utf8').catch(() => ''))
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as InitRecord);

  /** Plan and apply (after the environment approval) in one run, each job starting with an empty RUNNER_TEMP at the same path. */
  const planAndApply = async (runId: number) => {
    const job = async (action: 'plan' | 'apply', inputs: Record<string, string>) => {
      await rm(runnerTemp, { recursive: true, force: true });
      await mkdir(runnerTemp, { recursive: true });
      return fx.run(action, {
        runId,
        job: action,
        loopbackHostname: HOSTNAME,
        env: {
          ACTIONS_RESULTS_URL: results.url,
          ACTIONS_RUNTIME_TOKEN: results.runtimeToken(runId, action),
          ACTIONS_CACHE_SERVICE_V2: 'True',
          RUNNER_TEMP: runnerTemp,
        },
        with: inputs,
      });
    };
    const plan = await job('plan', planInputs({ 'tofu-binary': tofu }));
    expect(plan.code, describeRun(plan)).toBe(0);
    fx.double.state.approvals[runId] = [{ state: 'approved', user: 'bob', environments: ['production'] }];
    const apply = await job('apply', {
      'workflow-id': `edge-${runId}`,
      environment: 'production',
      'tofu-binary': tofu,
      'allow-local-state': 'true',
    });
    expect(apply.code, describeRun(apply)).toBe(0);
    return apply;
  };

  beforeAll(async () => {
    fx = await createActionFixture('sealed');
    results = await ResultsDouble.start(HOSTNAME);
    fx.double.state.environments['production'] = { requiredReviewers: ['bob'] };
    await writeFile(
      join(fx.workspace, 'exocomp.auto.tfvars.json'),
      JSON.stringify({ ansible_inventory: { all: { hosts: { web: { ansible_host: '127.0.0.1' } } } } }),
    );
    await writeFile(join(fx.workspace, LOCK_FILE), lockFile('3.2.4'));
    // Where a runner keeps it: beside the checkout, the same path in every job.
    runnerTemp = join(fx.dir, 'work', '_temp');
    initLog = join(fx.dir, 'init.log');
    tofu = join(fx.dir, 'bin', 'tofu');
    await mkdir(join(fx.dir, 'bin'));
    await writeFile(tofu, wrapper(initLog));
    await chmod(tofu, 0o755);
  });
  afterAll(async () => {
    await results?.close();
    await fx?.cleanup();
  });

  it('the first run misses, tofu downloads into the plugin cache, and the apply job saves it under the lock file’s key', async () => {
    const key = providerCacheKey(lockFile('3.2.4'));
    const apply = await planAndApply(9800);
    expect(apply.stdout).toContain(`provider cache miss (${key})`);
    expect(apply.stdout).toContain(`provider cache saved (${key})`);
    expect((await inits()).map((init) => [init.found, init.version])).toEqual([['downloaded', '3.2.4']]);
    expect(results.cacheEntries.map((entry) => [entry.key, entry.finalized])).toEqual([[key, true]]);
    expect(results.cacheEntries[0]!.content.length).toBeGreaterThan(0);
    expect(results.violations).toEqual([]);
  });

  it('the next run restores it into an empty RUNNER_TEMP before init: the provider comes back byte for byte, nothing is saved again', async () => {
    const key = providerCacheKey(lockFile('3.2.4'));
    const apply = await planAndApply(9801);
    expect(apply.stdout).toContain(`provider cache restored (${key})`);
    const [first, second] = await inits();
    expect(second).toMatchObject({ found: 'cached', version: '3.2.4' });
    expect(second!.content).toBe(first!.content);
    expect(results.calls.filter((call) => call === 'CreateCacheEntry')).toHaveLength(1);
    expect(results.cacheEntries).toHaveLength(1);
    expect(results.violations).toEqual([]);
  });

  it('a changed lock file is another key: a miss, a fresh download, a second entry', async () => {
    await writeFile(join(fx.workspace, LOCK_FILE), lockFile('3.2.5'));
    const key = providerCacheKey(lockFile('3.2.5'));
    const apply = await planAndApply(9802);
    expect(apply.stdout).toContain(`provider cache miss (${key})`);
    expect(apply.stdout).toContain(`provider cache saved (${key})`);
    expect((await inits()).at(-1)).toMatchObject({ found: 'downloaded', version: '3.2.5' });
    expect(results.cacheEntries.map((entry) => entry.key)).toEqual([providerCacheKey(lockFile('3.2.4')), key]);
    expect(results.violations).toEqual([]);
  });
});
