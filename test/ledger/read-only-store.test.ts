/** A preview's ledger: read through, and no write reaches the store underneath. */
import { describe, expect, it } from 'vitest';
import { ExocompError } from '../../src/domain/errors.js';
import { MemoryLedgerStore } from '../../src/ledger/memory-store.js';
import { readOnlyStore } from '../../src/ledger/read-only-store.js';

describe('readOnlyStore', () => {
  it('reads the store underneath, answers a change without writes, and refuses one with writes, writing nothing', async () => {
    const store = new MemoryLedgerStore({ files: { known_hosts: 'pins\n' } });
    const preview = readOnlyStore(store, 'a plan preview');
    expect((await preview.read()).read('known_hosts')).toBe('pins\n');
    expect(await preview.update(() => ({ writes: new Map(), message: 'nothing', result: 42 }))).toBe(42);
    const refused = await preview
      .update(() => ({ writes: new Map([['locks/x.json', '{}']]), message: 'lock x', result: undefined }))
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ExocompError);
    expect((refused as ExocompError).message).toMatch(
      /a plan preview records nothing, yet it tried to write locks\/x\.json/,
    );
    expect(store.history()).toHaveLength(1);
    expect(preview.description).toContain('read-only');
  });
});
