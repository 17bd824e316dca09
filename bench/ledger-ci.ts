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
 *  (d) processes: N creator processes (each writes a record of its own), then N
 *      decider processes (each reads its record and writes one transition),
 *      sharing one cache and then each with its own, while `busy` processes
 *      (default 20) keep the CPU loaded; each busy process stops by itself
 *      after at most 20 minutes, and the bench ends them when it is done.
 *      Printed per phase: how many commands exited 0 and how many failed (with
 *      the first failures), whether every record is there, and the wall time;
 *      the ratio shared / separate should stay within 1.5.
 *  (e) commands: case (d) with the CLI itself, as issue 37 measured it: N
 *      `exocomp provision run --require-approval` (each its own workspace name,
 *      planned by the tofu stand-in: the ledger is what is measured), then N
 *      `exocomp approval decide <id> --approve` of those workflows, sharing one
 *      cache ($XDG_CACHE_HOME) and then each with its own, under `busy` processes.
 * Every case prints how many of its writers failed.
 * Usage: npm run bench:ledger-ci [-- 8,32 [own,cache]]
 *        npm run bench:ledger-ci [-- 64 processes|commands [busy]]
 */
import { spawn } from 'node:child_process';
import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { runProcess } from '../src/adapters/process.js';
import { describeError } from '../src/domain/errors.js';
import { GitLedgerStore } from '../src/ledger/git-store.js';
import { git, ownFile, runWriterFleet } from '../test/ledger/helpers.js';
import { createChainFixture, workflowIdFrom, type CliResult } from '../test/support/chain-fixture.js';
import { ledgerFile } from '../test/support/ledger-git.js';

const SIZES = (process.argv[2] ?? '8,32,64').split(',').map(Number);
/** `own,cache` runs only cases (a) and (c): the shared-cache figure without the slow baseline. */
const ONLY_CACHE = process.argv[3] === 'own,cache';
/** `processes` runs only case (d), `commands` only case (e), under `busy` added CPU-bound processes. */
const PROCESSES = process.argv[3] === 'processes';
const COMMANDS = process.argv[3] === 'commands';
const BUSY = Number(process.argv[4] ?? 20);
/** The longest a busy process runs, should the bench itself be killed. */
const BUSY_LIMIT_MS = 20 * 60_000;

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
  const rate = `${result.ok}/${result.total} ok, ${result.total - result.ok} failed`;
  return `${rate.padEnd(20)} median ${percentile(sorted, 0.5).toFixed(0).padStart(6)} ms  p95 ${percentile(sorted, 0.95).toFixed(0).padStart(6)} ms  wall ${(result.wallMs / 1000).toFixed(1).padStart(6)} s`;
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
for (const n of PROCESSES || COMMANDS ? [] : SIZES) {
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
    if (ONLY_CACHE) {
      printFailures([...own.failures, ...oneCache.failures]);
      continue;
    }
    const baseline = await runSingleBranch(dir, n);
    await rm(join(dir, 'remote.git'), { recursive: true, force: true });
    const shared = await runStores(dir, n, () => 'workflows/shared.json');
    console.log(`      single-branch baseline ${describe(baseline)}`);
    console.log(
      `      ratio (a) / baseline   success ${(own.ok / Math.max(baseline.ok, 1)).toFixed(2)}×, wall ${(own.wallMs / baseline.wallMs).toFixed(2)}`,
    );
    console.log(`  (b) one shared record     ${describe(shared)}`);
    printFailures([...own.failures, ...shared.failures, ...oneCache.failures]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function printFailures(failures: readonly string[]): void {
  for (const failure of failures.slice(0, 3)) console.log(`      failure: ${failure.split('\n')[0]}`);
}

/** `count` processes that keep one CPU busy each, stopping by themselves after `limitMs`; returns how to end them early. */
function busyProcesses(count: number, limitMs: number): () => void {
  const children = Array.from({ length: count }, () =>
    spawn(
      process.execPath,
      ['-e', 'const end = Date.now() + Number(process.argv[1]); while (Date.now() < end);', String(limitMs)],
      {
        stdio: 'ignore',
      },
    ),
  );
  return () => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  };
}

interface PhaseResult {
  ok: number;
  failed: number;
  failures: string[];
  wallMs: number;
  /** Writers whose record does not hold what their last command wrote. */
  lost: string[];
}

/** N writer processes at once, each making `updates` updates of its own record, then a check of every record. */
async function processPhase(
  dir: string,
  remote: string,
  writers: readonly string[],
  updates: number,
  cacheOf: (writer: string) => string,
): Promise<PhaseResult> {
  const started = performance.now();
  const outcomes = await runWriterFleet(
    remote,
    writers.map((writer) => ({ writer, cacheDir: cacheOf(writer), updates, mode: 'own' as const })),
    join(dir, `go-${updates}-${Math.random().toString(16).slice(2)}`),
  );
  const wallMs = performance.now() - started;
  const failed = outcomes.filter((outcome) => outcome.code !== 0);
  const snapshot = await new GitLedgerStore({ remote, cacheDir: join(dir, 'check-cache') }).read();
  const lost = writers.filter((writer) => {
    const record = JSON.parse(snapshot.read(ownFile(writer)) ?? '{}') as { updates?: number };
    return record.updates !== updates;
  });
  return {
    ok: outcomes.length - failed.length,
    failed: failed.length,
    failures: failed.map((outcome) => outcome.stderr.trim() || `exit ${outcome.code}`),
    wallMs,
    lost,
  };
}

function describePhase(result: PhaseResult): string {
  return `${`${result.ok} exit 0, ${result.failed} failed`.padEnd(22)} records ${result.lost.length === 0 ? 'all there' : `${result.lost.length} missing`}  wall ${(result.wallMs / 1000).toFixed(1).padStart(6)} s`;
}

/** Case (d): creators then deciders as processes, sharing one cache and each with its own, under added CPU load. */
async function runProcessCases(n: number): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), `exocomp-ledger-ci-processes-${n}-`));
  const endBusy = busyProcesses(BUSY, BUSY_LIMIT_MS);
  try {
    console.log(`\nN = ${n} processes per phase, ${BUSY} busy processes added (load ${load()})`);
    const writers = Array.from({ length: n }, (_, index) => `w${index + 1}`);
    const totals: Record<string, number> = {};
    for (const layout of ['shared', 'separate'] as const) {
      const remote = join(dir, `${layout}.git`);
      await git(['init', '--quiet', '--bare', remote]);
      const cacheOf = (phase: string) => (writer: string) =>
        layout === 'shared' ? join(dir, 'shared-cache') : join(dir, `${phase}-cache-${writer}`);
      const creators = await processPhase(dir, remote, writers, 1, cacheOf('create'));
      const deciders = await processPhase(dir, remote, writers, 2, cacheOf('decide'));
      totals[layout] = creators.wallMs + deciders.wallMs;
      console.log(`  ${layout.padEnd(8)} cache  creators ${describePhase(creators)}  (load ${load()})`);
      console.log(`  ${layout.padEnd(8)} cache  deciders ${describePhase(deciders)}  (load ${load()})`);
      printFailures([...creators.failures, ...deciders.failures]);
    }
    console.log(`  ratio shared / separate   wall ${(totals.shared! / totals.separate!).toFixed(2)}`);
  } finally {
    endBusy();
    await rm(dir, { recursive: true, force: true });
  }
}

const sitePlaybook = new URL('../test/fixtures/playbooks/site.yml', import.meta.url).pathname;

/** Case (e): N `provision run --require-approval`, then N `approval decide`, through the CLI, under added CPU load. */
async function runCommandCases(n: number): Promise<void> {
  const fx = await createChainFixture('edge');
  const endBusy = busyProcesses(BUSY, BUSY_LIMIT_MS);
  try {
    console.log(`\nN = ${n} CLI commands per phase, ${BUSY} busy processes added (load ${load()})`);
    await cp(sitePlaybook, join(fx.dir, 'site.yml'));
    const inventory = { all: { hosts: { web: { ansible_host: '127.0.0.1', ansible_port: 22 } } } };
    const workspaces = await Promise.all(
      Array.from({ length: n }, async (_, index) => {
        const workspace = join(fx.dir, `ws${index + 1}`);
        await cp(fx.workspace, workspace, { recursive: true });
        await writeFile(join(workspace, 'exocomp.auto.tfvars.json'), JSON.stringify({ ansible_inventory: inventory }));
        return workspace;
      }),
    );
    const totals: Record<string, number> = {};
    for (const layout of ['shared', 'separate'] as const) {
      const ledger = join(fx.dir, `${layout}.git`);
      await git(['init', '--quiet', '--bare', ledger]);
      const cache = (phase: string, index: number) =>
        join(fx.dir, layout === 'shared' ? 'shared-cache' : `${phase}-cache-${index}`);
      const phase = async (name: string, argsOf: (index: number) => string[]) => {
        const started = performance.now();
        const results = await Promise.all(
          workspaces.map((_, index) => fx.cli(argsOf(index), { env: { XDG_CACHE_HOME: cache(name, index) } })),
        );
        return { results, wallMs: performance.now() - started };
      };
      const keys = fx.keys.map((arg) => (arg === fx.ledger ? ledger : arg));
      const creators = await phase('create', (index) => [
        'provision',
        'run',
        workspaces[index]!,
        'site.yml',
        ...keys,
        `--workspace-name=w${index + 1}`,
        '--require-approval',
      ]);
      const ids = creators.results.map((result) => (result.code === 0 ? workflowIdFrom(result) : undefined));
      const deciders = await phase('decide', (index) =>
        ids[index] === undefined
          ? ['--version']
          : ['approval', 'decide', ids[index], '--approve', '--by', `reviewer-${index + 1}`, '--ledger', ledger],
      );
      // Every command that exited 0 has its record: each decided workflow reads approved.
      const states = await Promise.all(
        ids.map(async (id) =>
          id === undefined
            ? undefined
            : (
                JSON.parse((await ledgerFile(ledger, `workflows/${id}.json`)) ?? '{}') as {
                  approval?: { state?: string };
                }
              ).approval?.state,
        ),
      );
      totals[layout] = creators.wallMs + deciders.wallMs;
      const created = ids.filter((id) => id !== undefined).length;
      const decided = deciders.results.filter((result, index) => ids[index] !== undefined && result.code === 0).length;
      const approved = states.filter((state) => state === 'approved').length;
      console.log(
        `  ${layout.padEnd(8)} cache  provision run  ${`${created} exit 0, ${n - created} failed`.padEnd(22)} wall ${(creators.wallMs / 1000).toFixed(1).padStart(6)} s  (load ${load()})`,
      );
      console.log(
        `  ${layout.padEnd(8)} cache  approval decide ${`${decided} exit 0, ${n - decided} failed`.padEnd(21)} wall ${(deciders.wallMs / 1000).toFixed(1).padStart(6)} s  records ${approved === decided ? 'all there' : `${decided - approved} missing`}  (load ${load()})`,
      );
      const failed = (results: readonly CliResult[]) =>
        results.filter((result) => result.code !== 0).map((result) => result.stderr.trim() || `exit ${result.code}`);
      printFailures([...failed(creators.results), ...failed(deciders.results)]);
    }
    console.log(`  ratio shared / separate   wall ${(totals.shared! / totals.separate!).toFixed(2)}`);
  } finally {
    endBusy();
    await fx.cleanup();
  }
}

if (PROCESSES) for (const n of SIZES) await runProcessCases(n);
if (COMMANDS) for (const n of SIZES) await runCommandCases(n);
