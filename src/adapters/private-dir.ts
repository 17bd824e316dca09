/**
 * Private (0700) working directories for what must not outlive a run: saved
 * plans (sensitive values in clear), key and inventory copies, agent sockets.
 * Each name carries its owner's pid and pid namespace, so a directory left by
 * a run that was killed before it could clean up (kill -9) is removed by the
 * next run — and only by a run that can see its owner: in another pid
 * namespace sharing the same /tmp (a container given the host's /tmp) the pid
 * means another process, so such directories are left alone.
 */
import { readlinkSync } from 'node:fs';
import { chmod, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isProcessAlive } from './process.js';

/** `exocomp-<purpose>-<pid>[.<pid namespace>]-XXXXXX`; names without a namespace come from older versions. */
const OWNED = /^exocomp-[a-z]+-(\d+)(?:\.([0-9a-z]+))?-/;

/**
 * This process's pid namespace, or '' where there is no /proc to say: the low
 * base-36 digits of its inode, which the kernel hands out in sequence, so they
 * tell namespaces apart while keeping socket paths below (107 bytes) short.
 */
function readPidNamespace(): string {
  try {
    const inode = /^pid:\[(\d+)\]$/.exec(readlinkSync('/proc/self/ns/pid'))?.[1];
    return inode ? (Number(inode) % 36 ** 4).toString(36) : '';
  } catch {
    return '';
  }
}

const ownNamespace = readPidNamespace();

/** The start of the name `makePrivateDir(purpose)` gives: `exocomp-<purpose>-<pid>.<pidns>-`. */
export function privateDirPrefix(purpose: string): string {
  return `exocomp-${purpose}-${ownNamespace ? `${process.pid}.${ownNamespace}` : process.pid}-`;
}

/** The full path `makePrivateDir(purpose, parent)` makes, mkdtemp's XXXXXX included, for path-length budgets. */
export function privateDirTemplate(purpose: string, parent: string): string {
  return join(parent, `${privateDirPrefix(purpose)}XXXXXX`);
}

/** Removes directories under `parent` whose owning process is gone (owners in other pid namespaces are not judged). */
export async function sweepOrphanedDirs(parent: string = tmpdir()): Promise<void> {
  for (const name of await readdir(parent).catch(() => [] as string[])) {
    const owner = OWNED.exec(name);
    if (!owner) continue;
    const pid = Number(owner[1]);
    const namespace = owner[2] ?? '';
    if (namespace && namespace !== ownNamespace) continue;
    if (pid === process.pid || isProcessAlive(pid)) continue;
    await rm(join(parent, name), { recursive: true, force: true }).catch(() => undefined);
  }
}

/** A fresh 0700 directory `exocomp-<purpose>-<pid>.<pidns>-XXXXXX` under `parent`; the caller removes it. */
export async function makePrivateDir(purpose: string, parent: string = tmpdir()): Promise<string> {
  await sweepOrphanedDirs(parent);
  const dir = await mkdtemp(join(parent, privateDirPrefix(purpose)));
  await chmod(dir, 0o700);
  return dir;
}
