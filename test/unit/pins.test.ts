import { describe, expect, it } from 'vitest';
import { pinHostKeys, type ScannedHostKeys } from '../../src/app/hosts/pins.js';
import type { AppContext } from '../../src/app/runtime/context.js';
import { RecordingProgress } from '../../src/app/runtime/progress.js';
import { readPins } from '../../src/ledger/records.js';
import { MemoryLedgerStore } from '../../src/ledger/memory-store.js';

// Nothing listens on port 1 of these loopback addresses: a scan of them finds no key.
const web1 = { name: 'web1', address: '127.0.0.91', port: 1 };
const web2 = { name: 'web2', address: '127.0.0.92', port: 1 };
/** An ed25519 public key blob (string "ssh-ed25519", then 32 key bytes) that differs by host. */
function key(name: string) {
  const blob = Buffer.alloc(51);
  blob.writeUInt32BE(11, 0);
  blob.write('ssh-ed25519', 4);
  blob.writeUInt32BE(32, 15);
  blob.fill(name.length + name.charCodeAt(name.length - 2), 19);
  return { name, keyType: 'ssh-ed25519', key: blob.toString('base64') };
}

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

describe('pinHostKeys with keys scanned beforehand', () => {
  it('pins exactly the hosts asked for from the keys given, scanning nothing', async () => {
    const context = app();
    const scanned: ScannedHostKeys = new Map([
      ['[127.0.0.91]:1', [key('[127.0.0.91]:1')]],
      ['[127.0.0.92]:1', [key('[127.0.0.92]:1')]],
    ]);
    const pins = await pinHostKeys(context, [web1], [], { scanned });
    expect(pins.added).toEqual(['[127.0.0.91]:1']);
    expect(readPins(await context.store.read()).map((pin) => pin.name)).toEqual(['[127.0.0.91]:1']);
  });

  it('scans for itself when a host it pins was not scanned beforehand', async () => {
    const context = app();
    const scanned: ScannedHostKeys = new Map([['[127.0.0.91]:1', [key('[127.0.0.91]:1')]]]);
    await expect(pinHostKeys(context, [web1, web2], [], { scanned })).rejects.toMatchObject({
      kind: 'host-key',
      message: 'no host key could be scanned from 2 host(s): web1 ([127.0.0.91]:1), web2 ([127.0.0.92]:1)',
    });
    expect(readPins(await context.store.read())).toEqual([]);
  });
});
