/**
 * Issue 28: the ledger refuses what it does not understand, on real git. Ledger
 * names that would collide, a configured branch that is not a ledger, record
 * refs that are not commits, records that are not UTF-8 or do not match their
 * schema, and a pinned store with lines that are not exact pins: each is
 * refused or reported naming the record and its ref, only the bad record is
 * unreadable, and nothing is written (every ref of the repository unchanged).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ExocompError } from '../../src/domain/errors.js';
import { ledgerNameProblem, parseLedgerName } from '../../src/domain/names.js';
import { GitLedgerStore } from '../../src/ledger/git-store.js';
import { checkRecords, readPinnedKnownHosts, readPins, readWorkflow } from '../../src/ledger/records.js';
import { LedgerRecordError } from '../../src/ledger/record-error.js';
import type { LedgerChange } from '../../src/ledger/store.js';
import { git, makeBareRemote, makeTempDir } from './helpers.js';

let temp: { path: string; remove: () => Promise<void> };
let remote: string;
let caches = 0;

beforeEach(async () => {
  temp = await makeTempDir();
  remote = await makeBareRemote(temp.path);
});
afterEach(async () => {
  await temp.remove();
});

const store = (branch?: string) =>
  new GitLedgerStore({ remote, cacheDir: join(temp.path, `cache-${++caches}`), ...(branch ? { branch } : {}) });

function change(files: Record<string, string>): LedgerChange<undefined> {
  return { writes: new Map(Object.entries(files)), message: 'test change', result: undefined };
}

/** Every ref of the remote with what it points at: equal before and after means nothing was written. */
async function allRefs(): Promise<string> {
  return (await git(['--git-dir', remote, 'for-each-ref', '--format=%(refname) %(objectname)'])).stdout;
}

async function rejection(promise: Promise<unknown>): Promise<ExocompError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ExocompError);
  return error as ExocompError;
}

const workflowText = (id: string) => `${JSON.stringify({ schemaVersion: 1, id, broken: 'not a workflow' })}\n`;

describe('ledger names', () => {
  it('one rule: a name equal to or inside a record namespace is refused, with the owning ledger named', () => {
    expect(ledgerNameProblem('exocomp-ledger')).toBeUndefined();
    expect(ledgerNameProblem('team/exocomp-ledger')).toBeUndefined();
    expect(ledgerNameProblem('records')).toBeUndefined();
    expect(ledgerNameProblem('exocomp-ledger-records')).toMatch(
      /is the record namespace of the ledger "exocomp-ledger"/,
    );
    expect(ledgerNameProblem('exocomp-ledger-records/workflows/w1.json')).toMatch(
      /lies inside the record namespace of the ledger "exocomp-ledger"/,
    );
    expect(ledgerNameProblem('a/b-records/c')).toMatch(/ledger "a\/b"/);
    for (const bad of ['', '../x', 'a..b', '-x', 'a/.b', 'a.lock', 'a b', 'x.'])
      expect(ledgerNameProblem(bad)).toBeDefined();
    const error = (() => {
      try {
        parseLedgerName('exocomp-ledger-records/known_hosts');
      } catch (caught) {
        return caught as ExocompError;
      }
      return undefined;
    })();
    expect(error?.exitCode).toBe(2);
  });

  it('the store refuses such a name before it touches git, and every ref stays as it was', async () => {
    await store().update(() => change({ known_hosts: '', 'workflows/w1.json': 'w1\n' }));
    const before = await allRefs();
    for (const branch of ['exocomp-ledger-records', 'exocomp-ledger-records/workflows/w1.json']) {
      expect(() => store(branch)).toThrow(/invalid ledger name/);
    }
    expect(await allRefs()).toBe(before);
  });

  it('a ledger name that is an existing branch other than an old-layout ledger is refused by reads, writes and migrate', async () => {
    const work = join(temp.path, 'code');
    await git(['init', '--quiet', work]);
    await writeFile(join(work, 'README.md'), 'code\n');
    await mkdir(join(work, 'workflows'));
    await writeFile(join(work, 'workflows', 'ci.json'), '{}\n');
    await git(['add', '-A'], { cwd: work });
    await git(['commit', '--quiet', '-m', 'code'], { cwd: work });
    await git(['push', '--quiet', remote, 'HEAD:refs/heads/main'], { cwd: work });
    const before = await allRefs();
    for (const operation of [
      (s: GitLedgerStore) => s.read(),
      (s: GitLedgerStore) => s.migrate(),
      (s: GitLedgerStore) => s.update(() => change({ 'workflows/x.json': 'x\n' })),
    ]) {
      const error = await rejection(operation(store('main')));
      expect(error.exitCode).toBe(2);
      expect(error.message).toMatch(/refs\/heads\/main of .* is not an exocomp ledger: it holds "README\.md"/);
    }
    expect(await allRefs()).toBe(before);
  });
});

describe('record refs that are not commits', () => {
  const ref = 'refs/heads/exocomp-ledger-records/workflows/w1.json';

  async function pointRecordAt(kind: 'blob' | 'tree' | 'tag' | 'missing'): Promise<string> {
    await store().update(() => change({ 'workflows/w1.json': 'w1\n', 'workflows/w2.json': 'w2\n' }));
    const commit = (await git(['--git-dir', remote, 'rev-parse', ref])).stdout.trim();
    let target: string;
    if (kind === 'missing') target = 'e'.repeat(commit.length);
    else if (kind === 'blob')
      target = (await git(['--git-dir', remote, 'rev-parse', `${commit}:workflows/w1.json`])).stdout;
    else if (kind === 'tree') target = (await git(['--git-dir', remote, 'rev-parse', `${commit}^{tree}`])).stdout;
    else {
      await git(['--git-dir', remote, 'tag', '-a', '-m', 'a tag', 'w1-tag', commit]);
      target = (await git(['--git-dir', remote, 'rev-parse', 'refs/tags/w1-tag'])).stdout;
    }
    // git update-ref refuses a non-commit on a branch; a tampered remote (or a push of one) holds it all the same.
    await writeFile(join(remote, ref), `${target.trim()}\n`);
    return target.trim();
  }

  for (const kind of ['blob', 'tree', 'tag', 'missing'] as const) {
    it(`a ref to a ${kind} object is corruption naming the ref, never absent; a write over it is refused and writes nothing`, async () => {
      // A cache that read the record while it was sound must not keep serving that copy.
      const cache = join(temp.path, 'cache-shared');
      await new GitLedgerStore({ remote, cacheDir: cache }).read();
      const object = await pointRecordAt(kind);
      const snapshot = await new GitLedgerStore({ remote, cacheDir: cache }).read();
      let thrown: unknown;
      try {
        readWorkflow(snapshot, 'w1');
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(LedgerRecordError);
      const error = thrown as LedgerRecordError;
      expect(error.message).toContain(
        kind === 'missing'
          ? `corrupt ledger record workflows/w1.json: its ref points at ${object}, an object the repository does not hold`
          : `corrupt ledger record workflows/w1.json: its ref points at a ${kind} (${object})`,
      );
      expect(error.message).toContain(ref);
      expect(error.help).toContain('git log --all');
      // Only that record: the other reads as before, and is listed.
      expect(snapshot.read('workflows/w2.json')).toBe('w2\n');
      expect(snapshot.list('workflows/')).toEqual(['workflows/w1.json', 'workflows/w2.json']);

      const before = await allRefs();
      const refused = await rejection(store().update(() => change({ 'workflows/w1.json': 'again\n' })));
      expect(refused.message).toContain(ref);
      expect(refused.message).not.toMatch(/credentials|permissions/);
      expect(await allRefs()).toBe(before);
      if (kind === 'missing') {
        // git's receive-pack then refuses every push (it checks new objects against every ref): named, not a credentials hint.
        const blocked = await rejection(store().update(() => change({ 'workflows/w2.json': 'w2 again\n' })));
        expect(blocked.message).toContain(`corrupt ledger record workflows/w1.json`);
        expect(blocked.message).toContain(ref);
        expect(blocked.help).toContain('the repository refuses every push until that ref is repaired');
        expect(await allRefs()).toBe(before);
        return;
      }
      // Other records are written as usual.
      await store().update(() => change({ 'workflows/w2.json': 'w2 again\n' }));
      expect((await store().read()).read('workflows/w2.json')).toBe('w2 again\n');
    });
  }
});

describe('corruption contained', () => {
  /** Points a record's branch at a commit holding `bytes` at `path`, as a hand-made push would. */
  async function plantRecord(path: string, bytes: Buffer): Promise<void> {
    const blobFile = join(temp.path, 'planted');
    await writeFile(blobFile, bytes);
    const blob = (await git(['--git-dir', remote, 'hash-object', '-w', blobFile])).stdout.trim();
    const [dir, name] = path.split('/') as [string, string];
    const inner = (
      await git(['--git-dir', remote, 'mktree'], { input: `100644 blob ${blob}\t${name}\n` })
    ).stdout.trim();
    const tree = (
      await git(['--git-dir', remote, 'mktree'], { input: `040000 tree ${inner}\t${dir}\n` })
    ).stdout.trim();
    const commit = (await git(['--git-dir', remote, 'commit-tree', tree, '-m', 'hand-made'])).stdout.trim();
    await git(['--git-dir', remote, 'update-ref', `refs/heads/exocomp-ledger-records/${path}`, commit]);
  }

  it('a non-UTF-8 record and a schema-invalid one: each unreadable alone, named with its ref; the rest reads and writes', async () => {
    await store().update(() => change({ 'workflows/good.json': 'good\n' }));
    await plantRecord('workflows/latin1.json', Buffer.from([0x7b, 0x22, 0xe9, 0xff, 0x22, 0x7d, 0x0a]));
    await plantRecord('workflows/invalid.json', Buffer.from(workflowText('invalid')));

    const snapshot = await store().read();
    expect(snapshot.read('workflows/good.json')).toBe('good\n');
    expect(() => snapshot.read('workflows/latin1.json')).toThrow(
      /corrupt ledger record workflows\/latin1\.json: it is not UTF-8 text \(ref refs\/heads\/exocomp-ledger-records\/workflows\/latin1\.json\)/,
    );
    expect(() => readWorkflow(snapshot, 'invalid')).toThrow(
      /malformed ledger record workflows\/invalid\.json: .*\(ref refs\/heads\/exocomp-ledger-records\/workflows\/invalid\.json\)/,
    );

    const problems = checkRecords(snapshot);
    expect(problems.map((problem) => [problem.file, problem.damage, problem.ref])).toEqual([
      ['workflows/good.json', 'malformed', 'refs/heads/exocomp-ledger-records/workflows/good.json'],
      ['workflows/invalid.json', 'malformed', 'refs/heads/exocomp-ledger-records/workflows/invalid.json'],
      ['workflows/latin1.json', 'corrupt', 'refs/heads/exocomp-ledger-records/workflows/latin1.json'],
    ]);

    const before = await allRefs();
    await rejection(store().update(() => change({ 'workflows/latin1.json': 'replaced\n' })));
    expect(await allRefs()).toBe(before);
    await store().update(() => change({ 'workflows/other.json': 'other\n' }));
    expect((await store().read()).read('workflows/other.json')).toBe('other\n');
  });
});

describe('the pinned store', () => {
  const goodKey = `AAAAC3NzaC1lZDI1NTE5AAAAI${'A'.repeat(43)}`;
  const good = `127.0.0.2 ssh-ed25519 ${goodKey}`;

  for (const [what, line] of [
    ['a wildcard', `* ssh-ed25519 ${goodKey}`],
    ['a pattern', `10.0.0.* ssh-ed25519 ${goodKey}`],
    ['a list', `127.0.0.3,127.0.0.4 ssh-ed25519 ${goodKey}`],
    ['a negation', `!127.0.0.9 ssh-ed25519 ${goodKey}`],
    ['a @cert-authority marker', `@cert-authority * ssh-ed25519 ${goodKey}`],
    ['a @revoked marker', `@revoked * ssh-ed25519 ${goodKey}`],
    ['garbage', 'this is not a pin'],
  ] as const) {
    it(`${what} is refused naming the record, its ref and the line; no text of it is ever rendered for ssh`, async () => {
      await store().update(() => change({ known_hosts: `${good}\n# a comment\n${line}\n` }));
      const snapshot = await store().read();
      expect(() => readPinnedKnownHosts(snapshot)).toThrow(LedgerRecordError);
      expect(() => readPins(snapshot)).toThrow(
        /malformed ledger record known_hosts: known_hosts line 3: .*\(ref refs\/heads\/exocomp-ledger-records\/known_hosts\)/,
      );
    });
  }

  it('exact pins are rendered from the parsed pins, not passed through as the record holds them', async () => {
    await store().update(() => change({ known_hosts: `# hand-written\n\n  ${good}  \n` }));
    expect(readPinnedKnownHosts(await store().read())).toBe(`${good}\n`);
  });
});
