/**
 * Issue 36 item 5 with the real `terraform` on PATH and the `http` backend locking against the loopback double
 * (test/support/http-state.ts): an apply takes and releases the lock; a lock left held (as a run killed with kill -9
 * leaves it) fails the next plan naming its ID — the backend's — and the exact force-unlock command.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TofuDriver } from '../../src/adapters/tofu.js';
import { HttpStateServer } from '../support/http-state.js';

function realTerraform(): string | undefined {
  try {
    return execFileSync('sh', ['-c', 'command -v terraform'], { encoding: 'utf8' }).trim() || undefined;
  } catch {
    return undefined;
  }
}
const binary = realTerraform();
const STATE = '/state/locking';

describe.skipIf(binary === undefined)('the state lock of a real apply, http backend', () => {
  let dir: string;
  let server: HttpStateServer;
  const driver = (signal?: AbortSignal) =>
    new TofuDriver({
      binary: binary ?? 'terraform',
      workspaceDir: dir,
      env: { ...process.env },
      signal,
    });
  const configure = () =>
    writeFile(
      join(dir, 'main.tf.json'),
      JSON.stringify({
        ...server.backendBlock('locking', { locking: true }),
        resource: { terraform_data: { web: { input: 'web' } } },
      }),
    );

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'exocomp-tflock-'));
    server = await HttpStateServer.start();
    await configure();
    const tofu = driver();
    await tofu.init();
    await tofu.plan('p.tfplan');
    await tofu.apply('p.tfplan');
  });
  afterAll(async () => {
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('an apply takes the lock and releases it: the double speaks the http backend’s LOCK/UNLOCK', () => {
    expect(server.states.get(STATE)).toContain('"terraform_data"');
    expect(server.locks.size).toBe(0);
  });

  it('a lock left held fails the next plan, naming its ID, its holder and the command that releases it', async () => {
    const held = {
      ID: 'f3b0c1d2-0000-4000-8000-000000000042',
      Path: '',
      Operation: 'OperationTypeApply',
      Who: 'runner@ci-7',
      Version: '1.11.4',
      Created: '2026-12-03T18:40:12Z',
      Info: '',
    };
    server.locks.set(STATE, JSON.stringify(held));
    const error = (await driver()
      .plan('locked.tfplan')
      .catch((e: unknown) => e)) as Error;
    // terraform's http backend shows the holder's ID only (the lock info it prints is the asking plan's).
    expect(error.message.split('\n')[0]).toBe(
      `the workspace's state is locked (lock ID ${held.ID}): once no run holds it, release it with \`terraform -chdir=${dir} force-unlock ${held.ID}\`, then resume`,
    );
  });
});
