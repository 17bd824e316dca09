/**
 * Cold start of every action bundle (npm run bench:actions): the time from
 * process start to the first line the action prints (its first `::add-mask::`
 * once the inputs are read, or its error), median of RUNS, and the bundle size.
 * The runner environment points at a closed port, so no action gets further.
 * Target (issue 39): every action within 2× a bare `node -e 0` measured the same way, interleaved with
 * the actions so the machine's load falls on both; the ratio is the figure, the milliseconds only context.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const RUNS = 9;
const TARGET_RATIO = 2;

const root = resolve(import.meta.dirname, '..');

function firstOutput(args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((done, fail) => {
    const started = process.hrtime.bigint();
    const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let measured = false;
    const mark = () => {
      if (measured) return;
      measured = true;
      done(Number(process.hrtime.bigint() - started) / 1e6);
      child.kill('SIGKILL');
    };
    child.stdout.once('data', mark);
    child.stderr.once('data', mark);
    child.on('error', fail);
    child.on('close', mark);
  });
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? NaN;
}

const dir = await mkdtemp(join(tmpdir(), 'exocomp-bench-actions-'));
try {
  const files = {
    GITHUB_OUTPUT: join(dir, 'out'),
    GITHUB_STATE: join(dir, 'state'),
    GITHUB_STEP_SUMMARY: join(dir, 'summary'),
  };
  for (const file of Object.values(files)) await writeFile(file, '');
  await writeFile(join(dir, 'event.json'), '{}');
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: dir,
    RUNNER_TEMP: dir,
    GITHUB_ACTIONS: 'true',
    GITHUB_REPOSITORY: 'acme/infra',
    GITHUB_RUN_ID: '1',
    GITHUB_RUN_ATTEMPT: '1',
    GITHUB_ACTOR: 'bench',
    GITHUB_EVENT_NAME: 'push',
    GITHUB_EVENT_PATH: join(dir, 'event.json'),
    GITHUB_API_URL: 'http://127.0.0.1:9',
    GITHUB_SERVER_URL: 'http://127.0.0.1:9',
    INPUT_TOKEN: 'ghs_benchtoken0000000000',
    'INPUT_WORKFLOW-ID': 'bench-1',
    INPUT_TARGET: 'tf:bench',
    INPUT_PLAYBOOK: 'site.yml',
    ...files,
  };
  const names = (await readdir(join(root, 'dist'), { withFileTypes: true }))
    // An action's bundle is dist/<action>/index.js; dist/cli-chunks holds the CLI's parts.
    .filter((e) => e.isDirectory() && existsSync(join(root, 'dist', e.name, 'index.js')))
    .map((e) => e.name)
    .sort();
  console.log(`action       start (median of ${RUNS})   node -e 0   ratio   size`);
  let over = 0;
  for (const name of names) {
    const bundle = join(root, 'dist', name, 'index.js');
    await firstOutput([bundle], env); // warm the file cache
    const times: number[] = [];
    const bare: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      times.push(await firstOutput([bundle], env));
      bare.push(await firstOutput(['-e', '0'], env));
    }
    const ms = median(times);
    const floor = median(bare);
    const ratio = ms / floor;
    const size = (await stat(bundle)).size;
    const verdict = ratio <= TARGET_RATIO ? `ok (≤ ${TARGET_RATIO}×)` : `OVER ${TARGET_RATIO}×`;
    if (ratio > TARGET_RATIO) over += 1;
    console.log(
      `${name.padEnd(12)} ${`${ms.toFixed(0)} ms`.padStart(8)}               ${`${floor.toFixed(0)} ms`.padStart(7)}   ${`${ratio.toFixed(2)}×`.padStart(6)}  ${`${(size / 1024 / 1024).toFixed(2)} MiB`.padStart(9)}  ${verdict}`,
    );
  }
  if (over > 0) process.exitCode = 1;
} finally {
  await rm(dir, { recursive: true, force: true });
}
