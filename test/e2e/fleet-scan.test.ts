/**
 * A scan that scales (issue 29): many loopback hosts whose sshd lets one
 * unauthenticated connection in at a time (MaxStartups 1:100:1), each held
 * busy by a silent connection when the scan starts, are still all pinned: the
 * hosts that refused the first pass are retried within the scan's budget.
 * EXOCOMP_FLEET_HOSTS sets the count (default 24: a shared machine).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pinHostKeys } from '../../src/app/hosts/pins.js';
import type { AppContext } from '../../src/app/runtime/context.js';
import { RecordingProgress } from '../../src/app/runtime/progress.js';
import { MemoryLedgerStore } from '../../src/ledger/memory-store.js';
import { readPins } from '../../src/ledger/records.js';
import { silentConnection } from '../support/addresses.js';
import { createLoopbackHost, generateKeyPair, type LoopbackHost } from '../support/loopback-host.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const HOST_COUNT = Number(process.env.EXOCOMP_FLEET_HOSTS ?? 24);
/** How long each host stays full: longer than a refused first pass, shorter than the budget. */
const BUSY_MS = 2_000;

function app(): AppContext {
  return {
    store: new MemoryLedgerStore(),
    ledgerBranch: 'exocomp-ledger',
    now: () => new Date(0),
    cwd: '/nonexistent',
    env: {},
    progress: new RecordingProgress(),
  };
}

describe(`${HOST_COUNT} hosts whose sshd takes one unauthenticated connection at a time`, () => {
  let dir: string;
  const hosts: LoopbackHost[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'exocomp-fleet-scan-'));
    const bootstrap = await generateKeyPair(dir, 'bootstrap');
    for (let i = 0; i < HOST_COUNT; i += 1) {
      hosts.push(await createLoopbackHost({ rootAuthorizedKey: bootstrap.publicKey, maxStartups: '1:100:1' }));
    }
    for (let i = 0; i < hosts.length; i += 8) await Promise.all(hosts.slice(i, i + 8).map((h) => h.start()));
  });

  afterAll(async () => {
    for (const host of hosts) await host.destroy();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('are all pinned, the busy ones on a retry', async () => {
    const busy = await Promise.all(hosts.map(silentConnection));
    const release = setTimeout(() => busy.forEach((socket) => socket.destroy()), BUSY_MS);
    const context = app();
    const started = performance.now();
    try {
      const targets = hosts.map((h, i) => ({ name: `h${i}`, address: h.address, port: h.port }));
      const pins = await pinHostKeys(context, targets, []);
      expect(pins.added).toHaveLength(HOST_COUNT);
    } finally {
      clearTimeout(release);
      busy.forEach((socket) => socket.destroy());
    }
    // Every host was full for the first pass: pinned only by a retry after it freed up.
    expect(performance.now() - started).toBeGreaterThan(BUSY_MS);
    const pinned = readPins(await context.store.read());
    for (const host of hosts) {
      expect(pinned.filter((p) => p.name === host.knownHostsName).map((p) => `${p.keyType} ${p.key}`)).toEqual([
        await host.hostPublicKey(),
      ]);
    }
  });
});
