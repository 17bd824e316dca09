/**
 * Ledger write cost against a local bare remote (npm run bench:ledger):
 *  1. GitLedgerStore.update(): median and p90 ms per transition over sequential
 *     updates of a workflow-record-sized JSON file;
 *  2. the same write as a plain git sequence run by a shell (fetch, reset,
 *     write, add, commit, push in a work tree) — the baseline, and the ratio;
 *  3. wall time of 16 writer processes × 20 updates (test/ledger/writer.ts).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runProcess } from '../src/adapters/process.js';
import { GitLedgerStore } from '../src/ledger/git-store.js';
import { git, runWriterFleet } from '../test/ledger/helpers.js';

const UPDATES = 100;
const WRITERS = 16;
const WRITER_UPDATES = 20;

/** A workflow record of realistic size (~2.5 KB): four steps with leases and details. */
function workflowRecord(transition: number): string {
  const steps = ['apply', 'ssh-wait', 'onboard', 'configure'].map((name, index) => ({
    name,
    state: index < transition % 5 ? 'succeeded' : 'pending',
    attempts: 1,
    startedAt: new Date(1_700_000_000_000 + transition * 1000).toISOString(),
    finishedAt: null,
    lease: {
      holder: `github:owner/repo/actions/runs/${9_000_000_000 + transition}/attempts/1`,
      heartbeatAt: new Date().toISOString(),
    },
    runUrl: `https://github.com/owner/repo/actions/runs/${9_000_000_000 + transition}`,
    detail: `captured 3 output(s) to inventory tf:prod naming 3 host(s); transition ${transition}`.padEnd(240, '.'),
  }));
  const record = {
    schemaVersion: 1,
    id: 'wf-20260101-abcdef',
    workspace: { name: 'prod', path: 'infra/prod' },
    playbook: 'site.yml',
    requester: 'octocat',
    trigger: { runId: 9_000_000_000, attempt: 1, sha: 'a'.repeat(40), pr: 42 },
    approval: { required: true, state: 'approved', by: 'reviewer', at: new Date().toISOString(), via: 'environment' },
    state: 'provisioning',
    steps,
    failure: null,
  };
  return `${JSON.stringify(record, null, 2)}\n`;
}

function percentile(sorted: readonly number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] ?? Number.NaN;
}

function summarize(samples: readonly number[]): { median: number; p90: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  return { median: percentile(sorted, 0.5), p90: percentile(sorted, 0.9) };
}

const ms = (value: number) => `${value.toFixed(1)} ms`;

async function benchStore(dir: string): Promise<{ median: number; p90: number }> {
  const remote = join(dir, 'store-remote.git');
  await git(['init', '--quiet', '--bare', remote]);
  const store = new GitLedgerStore({ remote, cacheDir: join(dir, 'cache') });
  // Seed the ledger with a few other records so reads are not trivially empty.
  await store.update(() => ({
    writes: new Map(
      Array.from({ length: 20 }, (_, index) => [`workflows/other-${index}.json`, workflowRecord(index)] as const),
    ),
    message: 'seed',
    result: undefined,
  }));
  const samples: number[] = [];
  for (let transition = 1; transition <= UPDATES; transition++) {
    const started = performance.now();
    await store.update((snapshot) => {
      snapshot.read('workflows/wf.json');
      return {
        writes: new Map([['workflows/wf.json', workflowRecord(transition)]]),
        message: `workflow wf: transition ${transition}`,
        result: undefined,
      };
    });
    samples.push(performance.now() - started);
  }
  return summarize(samples);
}

/** The same write done the ordinary way, each transition one `sh -c` running plain git commands. */
async function benchShellBaseline(dir: string): Promise<{ median: number; p90: number }> {
  const remote = join(dir, 'shell-remote.git');
  const work = join(dir, 'work');
  await git(['init', '--quiet', '--bare', remote]);
  await git(['init', '--quiet', work]);
  await git(['checkout', '--quiet', '--orphan', 'exocomp-ledger'], { cwd: work });
  await git(['commit', '--quiet', '--allow-empty', '-m', 'seed'], { cwd: work });
  await git(['push', '--quiet', remote, 'exocomp-ledger'], { cwd: work });
  await git(['remote', 'add', 'origin', remote], { cwd: work });
  const script = [
    'set -e',
    'git fetch --quiet origin exocomp-ledger',
    'git reset --quiet --hard FETCH_HEAD',
    'mkdir -p workflows',
    'cp "$1" workflows/wf.json',
    'git add workflows/wf.json',
    'git commit --quiet -m "workflow wf: transition $2"',
    'git push --quiet origin HEAD:refs/heads/exocomp-ledger',
  ].join('\n');
  const env = {
    ...process.env,
    GIT_AUTHOR_NAME: 'bench',
    GIT_AUTHOR_EMAIL: 'bench@example.invalid',
    GIT_COMMITTER_NAME: 'bench',
    GIT_COMMITTER_EMAIL: 'bench@example.invalid',
  };
  const recordFile = join(dir, 'record.json');
  const samples: number[] = [];
  for (let transition = 1; transition <= UPDATES; transition++) {
    await writeFile(recordFile, workflowRecord(transition));
    const started = performance.now();
    const result = await runProcess('sh', ['-c', script, 'baseline', recordFile, String(transition)], {
      cwd: work,
      env,
    });
    samples.push(performance.now() - started);
    if (result.code !== 0) throw new Error(`baseline failed: ${result.stderr}`);
  }
  return summarize(samples);
}

async function benchWriters(dir: string): Promise<number> {
  const remote = join(dir, 'writers-remote.git');
  await git(['init', '--quiet', '--bare', remote]);
  const started = performance.now();
  const outcomes = await runWriterFleet(
    remote,
    Array.from({ length: WRITERS }, (_, index) => ({
      writer: `w${index + 1}`,
      cacheDir: join(dir, 'writers-cache'),
      updates: WRITER_UPDATES,
    })),
    join(dir, 'writers.go'),
  );
  const elapsed = performance.now() - started;
  const failed = outcomes.filter((outcome) => outcome.code !== 0);
  if (failed.length > 0)
    throw new Error(`writers failed: ${failed.map((outcome) => `${outcome.writer}: ${outcome.stderr}`).join('; ')}`);
  const commits = (
    await git(['--git-dir', remote, 'rev-list', '--count', 'exocomp-ledger-records/workflows/shared.json'])
  ).stdout.trim();
  if (commits !== String(WRITERS * WRITER_UPDATES))
    throw new Error(`expected ${WRITERS * WRITER_UPDATES} commits, found ${commits}`);
  return elapsed;
}

const dir = await mkdtemp(join(tmpdir(), 'exocomp-ledger-bench-'));
try {
  console.log(
    `ledger benchmark (local bare remote, git ${(await git(['--version'])).stdout.trim().replace('git version ', '')})`,
  );
  const store = await benchStore(dir);
  console.log(
    `GitLedgerStore.update, ${UPDATES} sequential transitions:  median ${ms(store.median)}   p90 ${ms(store.p90)}`,
  );
  const shell = await benchShellBaseline(dir);
  console.log(`plain git in a shell (fetch/reset/add/commit/push):  median ${ms(shell.median)}   p90 ${ms(shell.p90)}`);
  console.log(`ratio store / shell baseline (median):                ${(store.median / shell.median).toFixed(2)}×`);
  const wall = await benchWriters(dir);
  console.log(
    `${WRITERS} writer processes × ${WRITER_UPDATES} updates (one shared cache): wall ${(wall / 1000).toFixed(1)} s ` +
      `(${ms(wall / (WRITERS * WRITER_UPDATES))} per update, process start-up included)`,
  );
} finally {
  await rm(dir, { recursive: true, force: true });
}
