import { describe, expect, it } from 'vitest';
import { ExocompError } from '../../src/domain/errors.js';
import { MemoryLedgerStore } from '../../src/ledger/memory-store.js';
import type { LedgerChange } from '../../src/ledger/store.js';

function change<T>(writes: Record<string, string | null>, message: string, result: T): LedgerChange<T> {
  return { writes: new Map(Object.entries(writes)), message, result };
}

describe('MemoryLedgerStore', () => {
  it('starts empty, then commits each change with writes as one revision', async () => {
    const store = new MemoryLedgerStore();
    const empty = await store.read();
    expect(empty.revision).toBeNull();
    expect(empty.list('')).toEqual([]);

    expect(
      await store.update(() =>
        change({ 'workflows/b.json': 'b', 'workflows/a.json': 'a', known_hosts: 'k' }, 'first', 1),
      ),
    ).toBe(1);
    await store.update(() => change({ 'workflows/a.json': null }, 'delete a', 2));
    const snapshot = await store.read();
    expect(snapshot.list('workflows/')).toEqual(['workflows/b.json']);
    expect(snapshot.read('known_hosts')).toBe('k');
    expect(store.history().map((commit) => commit.message)).toEqual(['first', 'delete a']);
    expect(store.history()[1]?.parent).toBe(store.history()[0]?.revision);
    expect(snapshot.revision).toBe(store.history()[1]?.revision);
    // Snapshots are immutable: an old one still shows its revision's files.
    expect(empty.read('known_hosts')).toBeUndefined();
  });

  it('commits nothing for no writes, no-op writes, or a throwing mutate', async () => {
    const store = new MemoryLedgerStore({ files: { 'a.json': 'a' } });
    const before = (await store.read()).revision;
    expect(await store.update(() => change({}, 'nothing', 'r'))).toBe('r');
    await store.update(() => change({ 'a.json': 'a', 'gone.json': null }, 'same', undefined));
    await expect(
      store.update(() => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect((await store.read()).revision).toBe(before);
    expect(store.history()).toHaveLength(1);
  });

  it('rejects paths a git tree cannot hold, and files that clash with folders', async () => {
    const store = new MemoryLedgerStore({ files: { 'dir/a.json': 'a' } });
    for (const path of ['', '/abs', 'a//b', '../x', 'a/./b', '.git/config', 'a\nb']) {
      await expect(store.update(() => change({ [path]: 'x' }, 'bad', 0))).rejects.toBeInstanceOf(ExocompError);
    }
    await expect(store.update(() => change({ dir: 'x' }, 'clash', 0))).rejects.toThrow(/both a file and the folder/);
    await expect(store.update(() => change({ 'dir/a.json/b': 'x' }, 'clash', 0))).rejects.toThrow(
      /both a file and the folder/,
    );
    expect(store.history()).toHaveLength(1);
  });
});
