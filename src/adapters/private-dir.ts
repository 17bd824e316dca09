/**
 * Private (0700) working directories for what must not outlive a run: saved
 * plans (sensitive values in clear), key and inventory copies, agent sockets.
 * Each name carries its owner's pid, so a directory left by a run that was
 * killed before it could clean up (kill -9) is removed by the next run.
 */
import { chmod, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isProcessAlive } from './process.js';

const OWNED = /^exocomp-[a-z]+-(\d+)-/;

/** Removes directories under `parent` whose owning process is gone. */
export async function sweepOrphanedDirs(parent: string = tmpdir()): Promise<void> {
  for (const name of await readdir(parent).catch(() => [] as string[])) {
    const pid = Number(OWNED.exec(name)?.[1]);
    if (!Number.isInteger(pid) || pid === process.pid || isProcessAlive(pid)) continue;
    await rm(join(parent, name), { recursive: true, force: true }).catch(() => undefined);
  }
}

/** A fresh 0700 directory `exocomp-<purpose>-<pid>-XXXXXX` under `parent`; the caller removes it. */
export async function makePrivateDir(purpose: string, parent: string = tmpdir()): Promise<string> {
  await sweepOrphanedDirs(parent);
  const dir = await mkdtemp(join(parent, `exocomp-${purpose}-${process.pid}-`));
  await chmod(dir, 0o700);
  return dir;
}
