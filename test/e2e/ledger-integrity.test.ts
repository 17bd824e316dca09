/**
 * Issue 28 through the CLI: a ledger name inside another ledger's namespace is
 * refused with exit 2 and no ref changes; a record ref that is not a commit (an
 * annotated tag, a tag to a tree or a blob, an object the repository lacks) makes
 * `provision status`, `approval decide` and `host known-hosts` name the
 * corruption, never "absent", and write nothing; a pinned store with a line that is not an exact pin makes
 * `playbook run`, a scheduled converge of tf:<name> and `drift` refuse before ansible starts; `ledger check` lists damaged
 * records and exits 1.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProcess } from '../../src/adapters/process.js';
import { createChainFixture, type ChainFixture, type CliResult } from '../support/chain-fixture.js';

let fx: ChainFixture;

const git = async (args: string[], input?: string) =>
  (
    await runProcess('git', ['--git-dir', fx.ledger, ...args], {
      env: {
        ...process.env,
        GIT_AUTHOR_NAME: 't',
        GIT_AUTHOR_EMAIL: 't@t',
        GIT_COMMITTER_NAME: 't',
        GIT_COMMITTER_EMAIL: 't@t',
      },
      ...(input === undefined ? {} : { input }),
    })
  ).stdout.trim();

const allRefs = () => git(['for-each-ref', '--format=%(refname) %(objectname)']);

/** Commits `text` as the only file `path` of the record branch `path`, as a hand-made push would. */
async function plant(path: string, text: string): Promise<void> {
  const blob = await git(['hash-object', '-w', '--stdin'], text);
  const parts = path.split('/');
  let tree = await git(['mktree'], `100644 blob ${blob}\t${parts.at(-1)}\n`);
  for (const dir of parts.slice(0, -1).reverse()) tree = await git(['mktree'], `040000 tree ${tree}\t${dir}\n`);
  const commit = await git(['commit-tree', tree, '-m', 'hand-made']);
  await git(['update-ref', `refs/heads/exocomp-ledger-records/${path}`, commit]);
}

beforeAll(async () => {
  fx = await createChainFixture();
  await plant('workflows/seed.json', '{}\n');
  await plant(
    'known_hosts',
    '[127.0.0.1]:2222 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJ9pTQzUg0mCIhsVwZkOAl5yFq5vG4a4c1Eg0d2bXYvP\n',
  );
});
afterAll(async () => {
  await fx.cleanup();
});

describe('ledger names', () => {
  it('a name inside another ledger namespace is refused with exit 2 by every command that takes one; no ref changes', async () => {
    const before = await allRefs();
    for (const command of [
      ['provision', 'status'],
      ['ledger', 'migrate'],
      ['ledger', 'check'],
      ['host', 'known-hosts'],
      ['approval', 'decide', 'seed', '--approve'],
    ]) {
      const result = await fx.cli([
        ...command,
        ...fx.ledgerArgs,
        '--ledger-branch',
        'exocomp-ledger-records/workflows/seed.json',
      ]);
      expect(result.code, `${command.join(' ')}: ${result.stderr}`).toBe(2);
      expect(result.stderr).toContain('lies inside the record namespace of the ledger "exocomp-ledger"');
    }
    expect(await allRefs()).toBe(before);
  });
});

describe('a record ref that is not a commit', () => {
  const ref = 'refs/heads/exocomp-ledger-records/workflows/seed.json';
  const pinsRef = 'refs/heads/exocomp-ledger-records/known_hosts';
  /** A tag object (no ref) pointing at `object` of `type`. */
  const tagOf = (object: string, type: string) =>
    git(['mktag'], `object ${object}\ntype ${type}\ntag seed-${type}\ntagger t <t@t> 0 +0000\n\nhand-made\n`);
  const targets: Record<string, (commit: string, file?: string) => Promise<string>> = {
    'an annotated tag': (commit) => tagOf(commit, 'commit'),
    'a tag to a tree': async (commit) => tagOf(await git(['rev-parse', `${commit}^{tree}`]), 'tree'),
    'a tag to a blob': async (commit, file = 'workflows/seed.json') =>
      tagOf(await git(['rev-parse', `${commit}:${file}`]), 'blob'),
    'an object the repository lacks': async (commit) => 'e'.repeat(commit.length),
  };

  for (const [what, target] of Object.entries(targets)) {
    it(`${what}: status, approval decide and host known-hosts name the corruption and the ref, never "absent"; nothing is written`, async () => {
      const refFile = join(fx.ledger, ref);
      const commit = (await readFile(refFile, 'utf8')).trim();
      const pinsRefFile = join(fx.ledger, pinsRef);
      const pinsCommit = (await readFile(pinsRefFile, 'utf8')).trim();
      // git update-ref refuses a non-commit on a branch; a tampered remote (or a push of one) holds it all the same.
      await writeFile(refFile, `${await target(commit)}\n`);
      await writeFile(pinsRefFile, `${await target(pinsCommit, 'known_hosts')}\n`);
      try {
        const before = await allRefs();
        for (const command of [
          ['provision', 'status', 'seed'],
          ['approval', 'decide', 'seed', '--approve'],
        ]) {
          const result = await fx.cli([...command, ...fx.ledgerArgs]);
          expect(result.code, `${command.join(' ')}: ${result.stderr}`).toBe(1);
          expect(result.stderr).toContain('corrupt ledger record workflows/seed.json: its ref points at');
          expect(result.stderr).toContain(`(ref ${ref})`);
          expect(result.stderr).not.toMatch(/no workflow|credentials|permissions/);
        }
        const pins = await fx.cli(['host', 'known-hosts', ...fx.ledgerArgs]);
        expect(pins.code, pins.stderr).toBe(1);
        expect(pins.stderr).toContain('corrupt ledger record known_hosts: its ref points at');
        expect(pins.stderr).toContain(`(ref ${pinsRef})`);
        expect(pins.stdout).not.toContain('no host key pinned');
        expect(await allRefs()).toBe(before);
      } finally {
        await writeFile(refFile, `${commit}\n`);
        await writeFile(pinsRefFile, `${pinsCommit}\n`);
      }
    });
  }
});

describe('the pinned store', () => {
  const key = `AAAAC3NzaC1lZDI1NTE5AAAAI${'A'.repeat(43)}`;
  let shim: Awaited<ReturnType<ChainFixture['ansibleShim']>>;
  let playbook: string;

  beforeAll(async () => {
    shim = await fx.ansibleShim();
    playbook = join(fx.dir, 'noop.yml');
    await writeFile(playbook, '- hosts: all\n  gather_facts: false\n  tasks: []\n');
    // tf:edge names one host ansible reaches without ssh: were the store passed on, a play would start at once.
    const inventory = { all: { hosts: { control: { ansible_connection: 'local' } } } };
    await writeFile(join(fx.workspace, 'exocomp.auto.tfvars.json'), JSON.stringify({ ansible_inventory: inventory }));
    const apply = await fx.cli(['workspace', 'apply', fx.workspace, ...fx.common, '--workspace-name', 'edge']);
    expect(apply.code, apply.stderr).toBe(0);
  });

  it('a wildcard line makes playbook run refuse before ansible starts, naming the record and line', async () => {
    await plant('known_hosts', `127.0.0.2 ssh-ed25519 ${key}\n* ssh-ed25519 ${key}\n`);
    const inventory = join(fx.dir, 'local.yml');
    await writeFile(inventory, 'all:\n  hosts:\n    control:\n      ansible_connection: local\n');
    const result = await fx.cli(['playbook', 'run', playbook, '--inventory', inventory, ...fx.ledgerArgs], {
      env: shim.env,
    });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('malformed ledger record known_hosts: known_hosts line 2');
    expect(result.stderr).toContain('refs/heads/exocomp-ledger-records/known_hosts');
    expect(await shim.invocations()).toEqual([]);
  });

  const scheduledConverge = () =>
    fx.cli(
      [
        'playbook',
        'run',
        playbook,
        '--inventory',
        'tf:edge',
        '--schedule-name',
        'nightly',
        '--schedule-cron',
        '0 3 * * *',
        ...fx.ledgerArgs,
        '--fleet-key',
        fx.fleet.privateKeyPath,
      ],
      { env: shim.env },
    );
  const drift = () =>
    fx.cli(['drift', fx.workspace, '--workspace-name', 'edge', '--playbook', playbook, ...fx.keys, '--json'], {
      env: shim.env,
    });
  const cases: [string, string, () => Promise<CliResult>][] = [
    ['a pattern line', `10.0.0.* ssh-ed25519 ${key}`, scheduledConverge],
    ['garbage', 'this is not a pin', scheduledConverge],
    ['a marker line', `@revoked 127.0.0.3 ssh-ed25519 ${key}`, drift],
    ['a wildcard line', `* ssh-ed25519 ${key}`, drift],
  ];
  for (const [what, line, run] of cases) {
    it(`${what} makes ${run === drift ? 'drift' : 'a scheduled converge of tf:edge'} refuse before ansible starts, naming the record and line`, async () => {
      await plant('known_hosts', `127.0.0.2 ssh-ed25519 ${key}\n${line}\n`);
      const result = await run();
      // drift reports the half it could not check and exits 1, the check itself having failed.
      expect(result.code, result.stderr).toBe(1);
      expect(result.stdout + result.stderr).toContain('malformed ledger record known_hosts: known_hosts line 2');
      expect(result.stdout + result.stderr).toContain('refs/heads/exocomp-ledger-records/known_hosts');
      expect(await shim.invocations()).toEqual([]);
    });
  }
});

describe('ledger check', () => {
  it('lists a non-UTF-8 and a schema-invalid record with their refs, exits 1, and writes nothing', async () => {
    await plant('workflows/latin1.json', '{"\u00e9"}\n');
    // Re-plant with raw latin-1 bytes: git hash-object stores exactly what it is given.
    const bytesFile = join(fx.dir, 'latin1.bin');
    await writeFile(bytesFile, Buffer.from([0x7b, 0x22, 0xe9, 0x22, 0x7d, 0x0a]));
    const blob = await git(['hash-object', '-w', bytesFile]);
    const inner = await git(['mktree'], `100644 blob ${blob}\tlatin1.json\n`);
    const tree = await git(['mktree'], `040000 tree ${inner}\tworkflows\n`);
    await git([
      'update-ref',
      'refs/heads/exocomp-ledger-records/workflows/latin1.json',
      await git(['commit-tree', tree, '-m', 'latin-1']),
    ]);
    await plant('workflows/invalid.json', `${JSON.stringify({ schemaVersion: 1, id: 'invalid' })}\n`);
    const before = await allRefs();
    const result = await fx.cli(['ledger', 'check', '--json', ...fx.ledgerArgs]);
    expect(result.code, result.stderr).toBe(1);
    const problems = (
      JSON.parse(result.stdout) as { result: { problems: { file: string; ref: string; damage: string }[] } }
    ).result.problems;
    expect(problems).toContainEqual(
      expect.objectContaining({
        file: 'workflows/latin1.json',
        damage: 'corrupt',
        ref: 'refs/heads/exocomp-ledger-records/workflows/latin1.json',
      }),
    );
    expect(problems).toContainEqual(
      expect.objectContaining({
        file: 'workflows/invalid.json',
        damage: 'malformed',
        ref: 'refs/heads/exocomp-ledger-records/workflows/invalid.json',
      }),
    );
    expect(await allRefs()).toBe(before);
  });
});
