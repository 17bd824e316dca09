import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makePrivateDir, sweepOrphanedDirs } from '../../src/adapters/private-dir.js';

describe('private run directories', () => {
  let parent: string;
  beforeAll(async () => {
    parent = await mkdtemp(join(tmpdir(), 'private-dir-test-'));
  });
  afterAll(() => rm(parent, { recursive: true, force: true }));

  it('are 0700 and carry the owner pid', async () => {
    const dir = await makePrivateDir('plan', parent);
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    expect(dir).toContain(`exocomp-plan-${process.pid}-`);
  });

  it('a directory left by a killed run is removed; a live owner keeps its own', async () => {
    // A pid that surely ended: a child that ran and exited.
    const gone = spawnSync('sh', ['-c', 'echo $$']).stdout.toString().trim();
    const orphan = join(parent, `exocomp-plan-${gone}-abc123`);
    await mkdir(join(orphan, 'nested'), { recursive: true });
    const live = join(parent, `exocomp-run-1-xyz789`); // pid 1 is always alive
    await mkdir(live);
    const unrelated = join(parent, 'exocomp-plan-notapid');
    await mkdir(unrelated);
    await sweepOrphanedDirs(parent);
    expect(existsSync(orphan)).toBe(false);
    expect(existsSync(live)).toBe(true);
    expect(existsSync(unrelated)).toBe(true);
  });
});
