import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveLedgerLocation } from '../../src/ledger/location.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'exo-location-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('an explicit --ledger path', () => {
  it('must be a git repository, and the error says how to make one', async () => {
    await expect(resolveLedgerLocation({ ledger: 'missing.git', cwd: dir })).rejects.toMatchObject({
      kind: 'usage',
      message: '--ledger missing.git is not a git repository',
      help: expect.stringContaining('git init --bare missing.git (or pass --ledger-init)'),
    });
    expect(existsSync(join(dir, 'missing.git'))).toBe(false);
  });

  it('is created as a bare repository with --ledger-init, and used as it is afterwards', async () => {
    const made = await resolveLedgerLocation({ ledger: 'ledger.git', cwd: dir, init: true });
    expect(made.remote).toBe(join(dir, 'ledger.git'));
    expect(existsSync(join(dir, 'ledger.git', 'HEAD'))).toBe(true);
    await expect(resolveLedgerLocation({ ledger: 'ledger.git', cwd: dir })).resolves.toEqual(made);
  });

  it('leaves git URLs to git', async () => {
    await expect(
      resolveLedgerLocation({ ledger: 'https://example.invalid/acme/infra.git', cwd: dir }),
    ).resolves.toMatchObject({
      remote: 'https://example.invalid/acme/infra.git',
    });
  });
});
