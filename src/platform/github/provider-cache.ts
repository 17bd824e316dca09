/**
 * OpenTofu's provider plugin cache kept between runs with @actions/cache,
 * keyed by the workspace's dependency lock file: the same lock file means the
 * same provider binaries. Without a lock file there is nothing stable to key
 * by, and nothing is cached.
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Workflow } from '../../domain/workflow.js';
import type { AppContext } from '../../app/runtime/context.js';
import type { ToolCache } from '../../app/provision/continue-workflow.js';
import type { ActionName } from './inputs.js';
import type { Session } from './session.js';

export const LOCK_FILE = '.terraform.lock.hcl';

export function providerCacheKey(
  lockFileText: string,
  platform: string = process.platform,
  arch: string = process.arch,
): string {
  return `exocomp-tofu-providers-${platform}-${arch}-${createHash('sha256').update(lockFileText).digest('hex')}`;
}

/** Saving and restoring a directory under a key; @actions/cache on a runner. */
export interface CachePort {
  available(): Promise<boolean>;
  restore(dir: string, key: string): Promise<boolean>;
  /** False when the service kept nothing (e.g. another job saved the key first); never fails the job. */
  save(dir: string, key: string): Promise<boolean>;
}

export function actionsCache(): CachePort {
  const load = () => import('@actions/cache');
  return {
    // Only the runner's cache service variables make it available; without them the module is never loaded.
    available: async () =>
      Boolean(process.env.ACTIONS_CACHE_URL || process.env.ACTIONS_RESULTS_URL) && (await load()).isFeatureAvailable(),
    async restore(dir, key) {
      return (await (await load()).restoreCache([dir], key)) !== undefined;
    },
    async save(dir, key) {
      // saveCache reports its own failures as warnings and returns -1.
      return (await (await load()).saveCache([dir], key)) !== -1;
    },
  };
}

export interface ProviderCache {
  /** TF_PLUGIN_CACHE_DIR for tofu. */
  dir: string;
  /** Saves the cache unless it was restored under the same key. */
  save(): Promise<void>;
}

/** Restores the plugin cache for a workspace; undefined when the workspace has no lock file or no cache service. */
export async function restoreProviderCache(
  port: CachePort,
  workspaceDir: string,
  cacheDir: string,
  info: (message: string) => void,
): Promise<ProviderCache | undefined> {
  if (!(await port.available())) return undefined;
  const lock = await readFile(join(workspaceDir, LOCK_FILE), 'utf8').catch(() => undefined);
  if (lock === undefined) return undefined;
  const key = providerCacheKey(lock);
  await mkdir(cacheDir, { recursive: true });
  const hit = await port.restore(cacheDir, key).catch(() => false);
  info(hit ? `provider cache restored (${key})` : `provider cache miss (${key})`);
  return {
    dir: cacheDir,
    save: async () => {
      if (hit) return;
      const saved = await port.save(cacheDir, key).catch((error: unknown) => {
        info(`provider cache not saved: ${(error as Error).message}`);
        return undefined;
      });
      if (saved !== undefined) info(saved ? `provider cache saved (${key})` : `provider cache not saved (${key})`);
    },
  };
}

/** The provider plugin cache around the apply (@actions/cache), keyed by the workspace's lock file. */
export function providerCache(
  session: Session<ActionName>,
  app: AppContext,
): (workflow: Workflow) => Promise<ToolCache | undefined> {
  return async (workflow) => {
    const workspaceDir = resolve(app.cwd, workflow.workspace.path);
    const cache = await restoreProviderCache(
      actionsCache(),
      workspaceDir,
      join(session.run.runnerTemp, 'exocomp-tofu-plugins'),
      (message) => session.platform.log.info(message),
    );
    return cache && { env: { TF_PLUGIN_CACHE_DIR: cache.dir }, save: () => cache.save() };
  };
}
