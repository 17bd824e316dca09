/**
 * Issue 3, acceptance 7, 9 (no seal key) and 12: inventories that name nobody,
 * or cannot be trusted, run no play; bad input gets a clear error, a non-zero
 * exit and an untouched ledger.
 */
import { chmod, cp, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChainFixture, type ChainFixture } from '../support/chain-fixture.js';
import { standinPath } from '../support/tofu-standin.js';
import { commitToLedger, ledgerRefs } from '../support/ledger-git.js';

const sitePlaybook = new URL('../fixtures/playbooks/site.yml', import.meta.url).pathname;

/** Replaces (or deletes, with null) one ledger file behind exocomp's back, as a separate commit. */
const tamper = (ledger: string, path: string, content: string | null) =>
  commitToLedger(ledger, { [path]: content }, `tamper ${path}`);

const ledgerHead = (fx: ChainFixture) => ledgerRefs(fx.ledger);

describe('standing inventories fail closed', () => {
  let fx: ChainFixture;
  let shim: Awaited<ReturnType<ChainFixture['ansibleShim']>>;

  beforeAll(async () => {
    fx = await createChainFixture('no-inventory');
    await cp(sitePlaybook, join(fx.dir, 'site.yml'));
    shim = await fx.ansibleShim();
  });
  afterAll(() => fx?.cleanup());

  const play = (name: string) =>
    fx.cli(
      [
        'playbook',
        'run',
        'site.yml',
        '--inventory',
        `tf:${name}`,
        ...fx.ledgerArgs,
        '--fleet-key',
        fx.fleet.privateKeyPath,
      ],
      { env: shim.env },
    );

  it('an unregistered name', async () => {
    const result = await play('nobody');
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/inventory tf:nobody is not registered/);
  });

  it('no ansible_inventory output: the apply says naming 0 host(s), sensitive outputs are dropped with a warning, and a play refuses', async () => {
    const apply = await fx.cli(['workspace', 'apply', fx.workspace, ...fx.common, '--workspace-name', 'bare']);
    expect(apply.code, apply.stderr).toBe(0);
    expect(apply.stdout + apply.stderr).toMatch(/captured \d+ output\(s\) to inventory .* naming 0 host\(s\)/);
    expect(apply.stderr).toMatch(/sensitive output\(s\) dropped: no seal key/);
    expect(apply.stdout + apply.stderr).not.toContain('loopback-only-db-password');
    expect(await fx.ledgerFile('sealed/bare.json')).toBeUndefined();
    const result = await play('bare');
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/inventory tf:bare names no hosts/);
  });

  it('a registered but never materialized inventory', async () => {
    await tamper(
      fx.ledger,
      'inventories/pending.json',
      JSON.stringify({ schemaVersion: 1, name: 'pending', registeredAt: new Date().toISOString() }),
    );
    const result = await play('pending');
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/inventory tf:pending is registered but not materialized/);
  });

  it('a lost materialized file', async () => {
    await fx.cli(['workspace', 'apply', fx.workspace, ...fx.common, '--workspace-name', 'lost']);
    await tamper(fx.ledger, 'inventories/lost.inventory.json', null);
    const result = await play('lost');
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/inventory tf:lost has lost its file/);
  });

  it('a corrupt materialized file', async () => {
    await fx.cli(['workspace', 'apply', fx.workspace, ...fx.common, '--workspace-name', 'corrupt']);
    await tamper(
      fx.ledger,
      'inventories/corrupt.inventory.json',
      '{"all": {"hosts": {"evil": {"ansible_host": "127.0.0.9"}}}}\n',
    );
    const result = await play('corrupt');
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/inventory tf:corrupt is corrupt/);
  });

  it('started no ansible-playbook process in any of those cases', async () => {
    expect(await shim.invocations()).toEqual([]);
  });
});

describe('bad input: clear error, non-zero exit, untouched ledger', () => {
  let fx: ChainFixture;
  let before: string;

  beforeAll(async () => {
    fx = await createChainFixture('edge');
    await cp(sitePlaybook, join(fx.dir, 'site.yml'));
    // Something on the branch, so "untouched" means the same head.
    await fx.setInventory({ all: { hosts: {} } });
    await fx.cli(['workspace', 'apply', fx.workspace, ...fx.common, '--workspace-name', 'seed']);
    before = await ledgerHead(fx);
    expect(before).toMatch(/^[0-9a-f]{40} refs\/heads\/exocomp-ledger-records\//);
  });
  afterAll(() => fx?.cleanup());

  const cases: Array<[string, () => string[], RegExp, number]> = [
    [
      'a workspace name with ../',
      () => ['provision', 'run', fx.workspace, 'site.yml', ...fx.keys, '--workspace-name', '../etc'],
      /workspace name/i,
      2,
    ],
    [
      'a workspace name with spaces',
      () => ['provision', 'run', fx.workspace, 'site.yml', ...fx.keys, '--workspace-name', 'my edge'],
      /workspace name/i,
      2,
    ],
    [
      'a workspace name with shell metacharacters',
      () => ['provision', 'run', fx.workspace, 'site.yml', ...fx.keys, '--workspace-name', 'edge;rm -rf'],
      /workspace name/i,
      2,
    ],
    [
      'a missing workspace directory',
      () => ['provision', 'run', join(fx.dir, 'nope'), 'site.yml', ...fx.keys],
      /workspace directory .* does not exist/,
      2,
    ],
  ];
  for (const [what, args, message, code] of cases) {
    it(what, async () => {
      const result = await fx.cli(args());
      expect(result.code, result.stderr).toBe(code);
      expect(result.stderr).toMatch(message);
      expect(await ledgerHead(fx)).toBe(before);
    });
  }

  it('no tofu or terraform on PATH', async () => {
    const emptyBin = join(fx.dir, 'empty-bin');
    await mkdir(emptyBin, { recursive: true });
    const result = await fx.cli(
      [
        'provision',
        'run',
        fx.workspace,
        'site.yml',
        '--ledger',
        fx.ledger,
        '--fleet-key',
        fx.fleet.privateKeyPath,
        '--bootstrap-key',
        fx.bootstrap.privateKeyPath,
      ],
      {
        env: {
          PATH: `${emptyBin}:/usr/bin:/bin`
            .split(':')
            .filter((p) => !p.includes('node_modules'))
            .join(':'),
        },
      },
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/no tofu or terraform on PATH/);
    expect(result.stderr).toMatch(/--tofu-binary/);
    expect(await ledgerHead(fx)).toBe(before);
  });

  it('ansible_inventory with a list where a mapping belongs, or a non-string host name', async () => {
    for (const [inventory, message] of [
      [{ all: { hosts: ['web1', 'web2'] } }, /all\.hosts.*mapping/],
      [{ all: { children: { web: { hosts: { 'bad host': { ansible_host: '127.0.0.5' } } } } } }, /host name|bad host/],
    ] as const) {
      await fx.setInventory(inventory);
      const result = await fx.cli(['workspace', 'apply', fx.workspace, ...fx.common, '--workspace-name', 'seed']);
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(message);
      expect(await ledgerHead(fx)).toBe(before);
    }
  });

  it('an unreachable ledger remote', async () => {
    const result = await fx.cli([
      'provision',
      'run',
      fx.workspace,
      'site.yml',
      ...fx.keys.map((a) => (a === fx.ledger ? join(fx.dir, 'no-such-ledger.git') : a)),
    ]);
    // A --ledger path that names no repository is bad usage (--ledger-init creates one).
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/ledger/i);
    expect(await ledgerHead(fx)).toBe(before);
  });

  it('a standin binary that is not executable is refused like a missing one', async () => {
    const copy = join(fx.dir, 'tofu-copy');
    await cp(standinPath, copy);
    await chmod(copy, 0o644);
    const result = await fx.cli(['workspace', 'apply', fx.workspace, '--ledger', fx.ledger, '--tofu-binary', copy]);
    expect(result.code).not.toBe(0);
    expect(await ledgerHead(fx)).toBe(before);
  });

  it('an unknown command or option exits 2 with a clear message', async () => {
    const unknown = await fx.cli(['provison', 'run']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/unknown command/);
    const decide = await fx.cli(['approval', 'decide', 'x', ...fx.ledgerArgs]);
    expect(decide.code).toBe(2);
    expect(decide.stderr).toMatch(/--approve or --reject/);
  });

  it('writes nothing on bad run-secrets', async () => {
    await writeFile(join(fx.dir, 'bad-secrets.yml'), 'PATH: /evil\n');
    const result = await fx.cli([
      'provision',
      'run',
      fx.workspace,
      'site.yml',
      ...fx.keys,
      '--run-secrets',
      'bad-secrets.yml',
    ]);
    expect(result.code).toBe(2);
    expect(await ledgerHead(fx)).toBe(before);
  });
});
