/**
 * A ledger writer process for the concurrency tests and the benchmark:
 *   node <writer bundled by helpers.ts writerScript()> <remote> <cacheDir> <writerId> <updates> [retryForMs|default] [shared|own] [goFile]
 * Each update rewrites the writer's own file writers/<writerId>.json and, in
 * `shared` mode, appends "<writerId>-<n>" to the array in workflows/shared.json. With a goFile, the
 * writer prints "ready" once started and waits for that file to exist, so all
 * writers start together. Finally prints one JSON line {writer, updates, attempts}
 * (attempts counts every run of the mutation).
 */
import { existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { describeError } from '../../src/domain/errors.js';
import { GitLedgerStore } from '../../src/ledger/git-store.js';
import { ownFile, SHARED_FILE } from './helpers.js';

const [remote, cacheDir, writer, countText, retryText, mode = 'shared', goFile] = process.argv.slice(2);
if (!remote || !cacheDir || !writer || !countText) {
  process.stderr.write(
    'usage: writer.ts <remote> <cacheDir> <writerId> <updates> [retryForMs] [shared|own] [goFile]\n',
  );
  process.exit(2);
}

const store = new GitLedgerStore({
  remote,
  cacheDir,
  writer: `writer ${writer}`,
  ...(retryText && retryText !== 'default' ? { retryForMs: Number(retryText) } : {}),
});
if (goFile) {
  process.stdout.write('ready\n');
  while (!existsSync(goFile)) await sleep(10);
}
let attempts = 0;
try {
  for (let n = 1; n <= Number(countText); n++) {
    await store.update((snapshot) => {
      attempts++;
      const writes = new Map([[ownFile(writer), `${JSON.stringify({ writer, updates: n })}\n`]]);
      if (mode === 'shared') {
        const shared = JSON.parse(snapshot.read(SHARED_FILE) ?? '[]') as string[];
        writes.set(SHARED_FILE, `${JSON.stringify([...shared, `${writer}-${n}`])}\n`);
      }
      return {
        writes,
        message: `writer ${writer}: update ${n}`,
        result: undefined,
      };
    });
  }
  process.stdout.write(`${JSON.stringify({ writer, updates: Number(countText), attempts })}\n`);
} catch (error) {
  process.stderr.write(`${describeError(error)}\n`);
  process.exit(1);
}
