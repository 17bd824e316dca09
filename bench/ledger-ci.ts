/**
 * The ledger at CI scale (npm run bench:ledger-ci): N writers, each with its
 * own cache (as jobs on separate runners), against one local bare remote, for
 * N = 8, 32 and 64.
 *  (a) own record: each writer makes one transition on its own workflow;
 *  (b) shared record: every writer makes one transition on one shared record.
 * Printed per case: success rate, median and p95 time per transition, and
 * total wall time. The baseline, side by side, is case (a) written the way the
 * single-branch layout did it — a plain git sequence per writer (fetch, commit
 * on the one branch, push without force, at most 12 attempts with jittered
 * backoff) — so the ratio shows what one branch per record buys.
 *  (c) shared cache: case (a) with every writer's store on one cache directory
 *      (many jobs of one self-hosted runner), beside case (a) with separate
 *      caches; the ratio of their wall times should stay within 1.5.
 * Usage: npm run bench:ledger-ci [-- 8,32 [own,cache]]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { runProcess } from '../src/adapters/process.js';
import { describeError } from '../src/domain/errors.js';
import { GitLedgerStore } from '../src/ledger/git-store.js';
import { git } from '../test/ledger/helpers.js';

const SIZES = (process.argv[2] ?? '8,32,64').split(',').map(Number);
/** `own,cache` runs only cases (a) and (c): the shared-cache figure without the slow baseline. */
const ONLY_CACHE = process.argv[3] === 'own,cache';

interface CaseResult {
  ok: number;
  total: number;
  times: number[];
  wallMs: number;
  failures: string[];
}

function percentile(sorted: readonly number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] ?? Number.NaN;
}

function describe(result: CaseResult): string {
  const sorted = [...result.times].sort((a, b) => a - b);
  const rate = `${result.ok}/${result.total} (${((100 * result.ok) / result.total).toFixed(0)} %)`;
  return `${rate.padEnd(16)} median ${percentile(sorted, 0.5).toFixed(0).padStart(6)} ms  p95 ${percentile(sorted, 0.95).toFixed(0).padStart(6)} ms  wall ${(result.wallMs / 1000).toFixed(1).padStart(6)} s`;
}

const record = (writer: string, n: number) =>
  `${JSON.stringify({ schemaVersion: 1, writer, transition: n, detail: 'x'.repeat(2000) }, null, 2)}\n`;

/** N stores with separate caches (or one shared cache), started together; `path(i)` is the file writer i changes. */
async function runStores(
  dir: string,
  n: number,
  path: (index: number) => string,
  { sharedCache = false } = {},
): Promise<CaseResult> {
  const remote = join(dir, 'remote.git');
  await git(['init', '--quiet', '--bare', remote]);
  const stores = Array.from(
    { length: n },
    (_, index) =>
      new GitLedgerStore({
        remote,
        cacheDir: join(dir, sharedCache ? 'shared-cache' : `cache-${index}`),
        writer: `w${index}`,
      }),
  );
  const times: number[] = [];
  const failures: string[] = [];
  const started = performance.now();
  await Promise.all(
    stores.map(async (store, index) => {
      const t0 = performance.now();
      try {
        await store.update((snapshot) => ({
          writes: new Map([[path(index), record(`w${index}`, (snapshot.read(path(index)) ?? '').length)]]),
          message: `w${index}: transition`,
          result: undefined,
        }));
        times.push(performance.now() - t0);
      } catch (error) {
        failures.push(describeError(error));
      }
    }),
  );
  return { ok: times.length, total: n, times, wallMs: performance.now() - started, failures };
}

/** The single-branch layout as a plain git sequence: every writer's commit goes on one branch. */
const SINGLE_BRANCH_WRITER = String.raw`
set -u
remote=$1; cache=$2; writer=$3
git init -q --bare "$cache"
export GIT_DIR=$cache GIT_AUTHOR_NAME=w GIT_AUTHOR_EMAIL=w@x GIT_COMMITTER_NAME=w GIT_COMMITTER_EMAIL=w@x
for attempt in 1 2 3 4 5 6 7 8 9 10 11 12; do
  parent=
  if git fetch -q "$remote" +refs/heads/exocomp-ledger:refs/tmp/ledger 2>/dev/null; then parent=$(git rev-parse refs/tmp/ledger); fi
  export GIT_INDEX_FILE=$cache/index; rm -f "$GIT_INDEX_FILE"
  [ -n "$parent" ] && git read-tree "$parent"
  blob=$(printf '{"writer":"%s","detail":"%02000d"}\n' "$writer" 0 | git hash-object -w --stdin)
  git update-index --add --cacheinfo "100644,$blob,workflows/$writer.json"
  tree=$(git write-tree)
  commit=$(echo "$writer: transition" | git commit-tree "$tree" $([ -n "$parent" ] && echo "-p $parent"))
  if git push -q "$remote" "$commit:refs/heads/exocomp-ledger" 2>/dev/null; then exit 0; fi
  ceiling=$(( 25 * (1 << (attempt - 1)) )); [ $ceiling -gt 2000 ] && ceiling=2000
  sleep "$(awk -v c=$ceiling -v r=$RANDOM 'BEGIN { printf "%.3f", (c / 2 + (r / 32767) * c / 2) / 1000 }')"
done
echo "gave up after 12 attempts" >&2
exit 1
`;

async function runSingleBranch(dir: string, n: number): Promise<CaseResult> {
  const remote = join(dir, 'single.git');
  await git(['init', '--quiet', '--bare', remote]);
  const times: number[] = [];
  const failures: string[] = [];
  const started = performance.now();
  await Promise.all(
    Array.from({ length: n }, async (_, index) => {
      const t0 = performance.now();
      const result = await runProcess('bash', [
        '-c',
        SINGLE_BRANCH_WRITER,
        'writer',
        remote,
        join(dir, `single-cache-${index}`),
        `w${index}`,
      ]);
      if (result.code === 0) times.push(performance.now() - t0);
      else failures.push(result.stderr.trim());
    }),
  );
  return { ok: times.length, total: n, times, wallMs: performance.now() - started, failures };
}

const load = () =>
  loadavg()
    .map((value) => value.toFixed(1))
    .join(' ');
console.log(`bench:ledger-ci — writers with separate caches against one bare remote (load average before: ${load()})`);
for (const n of SIZES) {
  const dir = await mkdtemp(join(tmpdir(), `exocomp-ledger-ci-${n}-`));
  try {
    const own = await runStores(join(dir), n, (index) => `workflows/w${index}.json`);
    await rm(join(dir, 'remote.git'), { recursive: true, force: true });
    const oneCache = await runStores(dir, n, (index) => `workflows/w${index}.json`, { sharedCache: true });
    console.log(`\nN = ${n} (load ${load()})`);
    console.log(`  (a) own record            ${describe(own)}`);
    console.log(`  (c) own record, one cache ${describe(oneCache)}`);
    console.log(
      `      ratio (c) / (a)        wall ${(oneCache.wallMs / own.wallMs).toFixed(2)} (separate caches ${(own.wallMs / 1000).toFixed(1)} s)`,
    );
    if (ONLY_CACHE) continue;
    const baseline = await runSingleBranch(dir, n);
    await rm(join(dir, 'remote.git'), { recursive: true, force: true });
    const shared = await runStores(dir, n, () => 'workflows/shared.json');
    console.log(`      single-branch baseline ${describe(baseline)}`);
    console.log(
      `      ratio (a) / baseline   success ${(own.ok / Math.max(baseline.ok, 1)).toFixed(2)}×, wall ${(own.wallMs / baseline.wallMs).toFixed(2)}`,
    );
    console.log(`  (b) one shared record     ${describe(shared)}`);
    for (const failure of [...own.failures, ...shared.failures, ...oneCache.failures].slice(0, 3))
      console.log(`      failure: ${failure.split('\n')[0]}`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
