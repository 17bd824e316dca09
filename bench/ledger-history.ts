/**
 * The ledger on a long-lived repository (npm run bench:ledger-history): the
 * history 1,000 scheduled runs leave behind, and what a fresh runner pays to
 * read the ledger afterwards, before and after (issue 10 item 7).
 *
 * A scheduled converge takes its concurrency-key lease, runs (here: 2 minutes),
 * and releases the lease. Before, a CI holder committed a heartbeat every 15 s
 * and every record lived on one branch that a fresh runner fetched whole.
 * After, a CI holder commits no heartbeat (its run's status tells whether it
 * lives) and a fresh runner fetches each record's tip only.
 * The histories are written with `git fast-import` (the same commits the store
 * would make, without spending minutes making them), next to 50 workflow
 * records and one inventory, so the ledger is not all lock.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { runProcess } from '../src/adapters/process.js';
import { GitLedgerStore } from '../src/ledger/git-store.js';
import { git } from '../test/ledger/helpers.js';

const RUNS = 1000;
const RUN_SECONDS = 120;
const HEARTBEAT_SECONDS = 15;
const WORKFLOWS = 50;
const SAMPLES = 5;

const lockRecord = (run: number, beat: number) =>
  `${JSON.stringify({ schemaVersion: 1, key: 'nightly', lease: { holder: `github:o/r:${run}:1:converge`, heartbeatAt: `beat ${beat}` }, purpose: 'converge' }, null, 2)}\n`;
const workflowRecord = (index: number) =>
  `${JSON.stringify({ schemaVersion: 1, id: `wf-${index}`, detail: 'x'.repeat(2000) }, null, 2)}\n`;

/** A fast-import stream: commits on `ref` changing `path` (null deletes), one per entry of `changes`. */
function stream(ref: string, changes: readonly [string, string | null, string][], start: number): string {
  const out: string[] = [];
  changes.forEach(([path, content, message], index) => {
    const when = start + index;
    out.push(
      `commit ${ref}`,
      `committer exocomp-ledger <ledger@exocomp.invalid> ${when} +0000`,
      `data ${Buffer.byteLength(message)}`,
      message,
    );
    if (content === null) out.push(`D ${path}`);
    else out.push(`M 100644 inline ${path}`, `data ${Buffer.byteLength(content)}`, content);
    out.push('');
  });
  return `${out.join('\n')}\n`;
}

function converges(heartbeats: boolean): [string, string | null, string][] {
  const changes: [string, string | null, string][] = [];
  for (let run = 1; run <= RUNS; run++) {
    changes.push(['locks/nightly.json', lockRecord(run, 0), `lock nightly: acquired by run ${run}`]);
    if (heartbeats)
      for (let beat = 1; beat <= RUN_SECONDS / HEARTBEAT_SECONDS; beat++)
        changes.push(['locks/nightly.json', lockRecord(run, beat), `lock nightly: heartbeat run ${run}`]);
    changes.push(['locks/nightly.json', null, `lock nightly: released by run ${run}`]);
  }
  return changes;
}

async function fastImport(remote: string, input: string): Promise<void> {
  const imported = await runProcess('git', ['--git-dir', remote, 'fast-import', '--quiet'], { input });
  if (imported.code !== 0) throw new Error(`fast-import failed: ${imported.stderr}`);
  await git(['--git-dir', remote, 'gc', '--quiet']);
}

async function beforeLedger(dir: string): Promise<string> {
  const remote = join(dir, 'before.git');
  await git(['init', '--quiet', '--bare', remote]);
  const workflows = Array.from({ length: WORKFLOWS }, (_, index): [string, string, string] => [
    `workflows/wf-${index}.json`,
    workflowRecord(index),
    `wf-${index}: created`,
  ]);
  await fastImport(remote, stream('refs/heads/exocomp-ledger', [...workflows, ...converges(true)], 1_700_000_000));
  return remote;
}

async function afterLedger(dir: string): Promise<string> {
  const remote = join(dir, 'after.git');
  await git(['init', '--quiet', '--bare', remote]);
  let input = stream('refs/heads/exocomp-ledger-records/locks/nightly.json', converges(false), 1_700_000_000);
  for (let index = 0; index < WORKFLOWS; index++) {
    input += stream(
      `refs/heads/exocomp-ledger-records/workflows/wf-${index}.json`,
      [[`workflows/wf-${index}.json`, workflowRecord(index), `wf-${index}: created`]],
      1_600_000_000,
    );
  }
  await fastImport(remote, input);
  return remote;
}

const count = async (remote: string, refs: string[]) =>
  Number((await git(['--git-dir', remote, 'rev-list', '--count', ...refs])).stdout.trim());
const packKiB = async (dir: string) => Number((await runProcess('du', ['-sk', dir])).stdout.split('\t')[0]);

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

/** The previous store's read on a fresh runner: fetch the whole branch, then read every file. */
async function readBefore(remote: string, cache: string): Promise<void> {
  await git(['init', '--quiet', '--bare', cache]);
  await git([
    '--git-dir',
    cache,
    'fetch',
    '--quiet',
    '--no-tags',
    remote,
    '+refs/heads/exocomp-ledger:refs/exocomp/tmp',
  ]);
  const listing = await git(['--git-dir', cache, 'ls-tree', '-r', 'refs/exocomp/tmp']);
  const blobs = listing.stdout
    .split('\n')
    .filter(Boolean)
    .map((line) => line.split(/\s+/)[2]);
  await git(['--git-dir', cache, 'cat-file', '--batch'], { input: `${blobs.join('\n')}\n` });
}

const dir = await mkdtemp(join(tmpdir(), 'exocomp-ledger-history-'));
try {
  console.log(
    `bench:ledger-history — ${RUNS} scheduled runs of ${RUN_SECONDS} s each, ${WORKFLOWS} workflows beside them (load average: ${loadavg()
      .map((v) => v.toFixed(1))
      .join(' ')})`,
  );
  const before = await beforeLedger(dir);
  const after = await afterLedger(dir);
  const beforeCommits = await count(before, ['refs/heads/exocomp-ledger']);
  const afterCommits = await count(after, ['--all']);
  const beforeTimes: number[] = [];
  const afterTimes: number[] = [];
  let beforeKiB = 0;
  let afterKiB = 0;
  for (let sample = 0; sample < SAMPLES; sample++) {
    const oldCache = join(dir, `before-cache-${sample}`);
    let t0 = performance.now();
    await readBefore(before, oldCache);
    beforeTimes.push(performance.now() - t0);
    beforeKiB = await packKiB(oldCache);

    const newCache = join(dir, `after-cache-${sample}`);
    t0 = performance.now();
    const snapshot = await new GitLedgerStore({ remote: after, cacheDir: newCache }).read();
    afterTimes.push(performance.now() - t0);
    if (snapshot.list('workflows/').length !== WORKFLOWS) throw new Error('the fresh read missed records');
    afterKiB = await packKiB(newCache);
  }
  console.log(
    `ledger history:            before ${beforeCommits} commits on one branch   after ${afterCommits} commits over ${WORKFLOWS + 1} record branches`,
  );
  console.log(
    `fresh runner, full read:   before ${median(beforeTimes).toFixed(0)} ms, ${beforeKiB} KiB fetched   after ${median(afterTimes).toFixed(0)} ms, ${afterKiB} KiB fetched   (median of ${SAMPLES})`,
  );
  console.log(
    `ratio after/before:        time ${(median(afterTimes) / median(beforeTimes)).toFixed(2)}   bytes ${(afterKiB / beforeKiB).toFixed(2)}   commits ${(afterCommits / beforeCommits).toFixed(2)}`,
  );
} finally {
  await rm(dir, { recursive: true, force: true });
}
