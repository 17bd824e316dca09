/**
 * Issue 5 acceptance: the standing inventory at work. Every command runs the CLI
 * bundle (dist/cli.js, what users install) as a real process against a
 * bare-repository ledger, the OpenTofu stand-in, real ansible-playbook, and
 * loopback sshd hosts.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProcess, type RunResult } from '../../src/adapters/process.js';
import { cliPath } from '../support/chain-fixture.js';
import { createLoopbackHost, generateKeyPair, type KeyPair, type LoopbackHost } from '../support/loopback-host.js';
import { fixtureWorkspacesDir, standinPath } from '../support/tofu-standin.js';
import { scaled } from '../support/time.js';
import {
  commitToLedger as commitFilesToLedger,
  ledgerFile as ledgerFileOf,
  ledgerMessages,
} from '../support/ledger-git.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const onboardPlaybook = path.join(repoRoot, 'playbooks/onboard.yml');
const SEAL_KEY = 'loopback-only-seal-key-0123456789abcdef';

let root: string;
let project: string;
let ledger: string;
let baseEnv: NodeJS.ProcessEnv;
const hosts: LoopbackHost[] = [];

const unique = (prefix: string) => `${prefix}-${randomBytes(4).toString('hex')}`;

function exocomp(args: string[], options: { env?: NodeJS.ProcessEnv } = {}): Promise<RunResult> {
  return runProcess(process.execPath, [cliPath, ...args], {
    cwd: project,
    env: { ...baseEnv, ...options.env },
    timeoutMs: scaled(180_000),
  });
}

/** The CLI result, failing the test with its output when the exit code is not the expected one. */
async function expectExit(result: Promise<RunResult>, code: number): Promise<RunResult> {
  const r = await result;
  if (r.code !== code)
    throw new Error(`expected exit ${code}, got ${r.code}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`);
  return r;
}

const ledgerArgs = () => ['--ledger', ledger];

const ledgerFile = (file: string) => ledgerFileOf(ledger, file);
const commitToLedger = (files: Record<string, string | null>, message: string) =>
  commitFilesToLedger(ledger, files, message);

type InventoryHosts = Record<string, Record<string, unknown>>;

/** `exocomp workspace apply` of a fixture copy whose ansible_inventory names `inventoryHosts`. */
async function apply(
  fixture: string,
  name: string,
  inventoryHosts?: InventoryHosts,
  extra: string[] = [],
): Promise<RunResult> {
  const dir = path.join(root, 'workspaces', name);
  if (!existsSync(dir)) await cp(path.join(fixtureWorkspacesDir, fixture), dir, { recursive: true });
  const args = [
    'workspace',
    'apply',
    dir,
    '--workspace-name',
    name,
    '--tofu-binary',
    standinPath,
    ...ledgerArgs(),
    ...extra,
  ];
  if (inventoryHosts) {
    const vars = path.join(root, `${name}-vars.json`);
    await writeFile(vars, JSON.stringify({ ansible_inventory: { all: { hosts: inventoryHosts } } }));
    args.push('--vars-file', vars);
  }
  return expectExit(exocomp(args), 0);
}

const localHost = { ansible_connection: 'local', ansible_python_interpreter: '/usr/bin/python3' };
const sshHost = (host: LoopbackHost) => ({ ansible_host: host.address, ansible_port: host.port });

async function newDir(prefix: string): Promise<string> {
  return mkdtemp(path.join(root, `${prefix}-`));
}

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'exocomp-converge-'));
  project = path.join(root, 'project');
  ledger = path.join(root, 'ledger.git');
  await mkdir(project);
  const home = path.join(root, 'home');
  await mkdir(home);
  // The CLI's ledger cache and anything ssh/ansible keep per user stay inside the test's directory.
  baseEnv = { PATH: process.env.PATH, HOME: home, XDG_CACHE_HOME: path.join(root, 'cache'), LANG: 'C.UTF-8' };
  await runProcess('git', ['init', '--quiet', '--bare', ledger], { env: baseEnv });
  await writeFile(
    path.join(project, 'converge.yml'),
    [
      '- name: Converge',
      '  hosts: all',
      '  become: true',
      '  gather_facts: false',
      '  tasks:',
      '    - name: Mark the host converged',
      '      ansible.builtin.copy:',
      '        dest: /etc/exocomp-converged',
      '        content: "{{ inventory_hostname }}\\n"',
      '        mode: "0644"',
      '',
    ].join('\n'),
  );
  await writeFile(
    path.join(project, 'tagged.yml'),
    [
      '- name: Tagged tasks',
      '  hosts: all',
      '  gather_facts: false',
      '  tasks:',
      '    - name: Base',
      '      ansible.builtin.copy: { dest: "{{ out }}/{{ inventory_hostname }}-base", content: "base" }',
      '      tags: [base]',
      '    - name: Extra',
      '      ansible.builtin.copy: { dest: "{{ out }}/{{ inventory_hostname }}-extra", content: "extra" }',
      '      tags: [extra]',
      '    - name: Egress ports',
      '      ansible.builtin.copy: { dest: "{{ out }}/{{ inventory_hostname }}-egress", content: "{{ exocomp_egress_ports | to_json }}" }',
      '      tags: [always]',
      '',
    ].join('\n'),
  );
  await writeFile(
    path.join(project, 'slow.yml'),
    [
      '- name: A play that takes a while and records when it ran',
      '  hosts: all',
      '  gather_facts: false',
      '  tasks:',
      '    - name: Record start and end',
      '      ansible.builtin.shell: "date +%s%N > {{ out }}/{{ run }}.start; sleep {{ pause | default(2) }}; date +%s%N > {{ out }}/{{ run }}.end"',
      '',
    ].join('\n'),
  );
  await writeFile(
    path.join(project, 'env.yml'),
    [
      '- name: Record what the play sees of a sealed output',
      '  hosts: all',
      '  gather_facts: false',
      '  tasks:',
      '    - name: DB_PASSWORD',
      '      ansible.builtin.copy: { dest: "{{ out }}/{{ label }}", content: "{{ lookup(\'env\', \'DB_PASSWORD\') }}" }',
      '',
    ].join('\n'),
  );
});

afterAll(async () => {
  await Promise.all(hosts.splice(0).map((host) => host.destroy()));
  if (root) await rm(root, { recursive: true, force: true });
});

describe('a scheduled play converging a host a later apply added', () => {
  let bootstrap: KeyPair;
  let fleet: KeyPair;
  let fleetVars: string;

  beforeAll(async () => {
    const keys = await newDir('keys');
    bootstrap = await generateKeyPair(keys, 'bootstrap');
    fleet = await generateKeyPair(keys, 'fleet');
    fleetVars = path.join(keys, 'fleet-vars.json');
    await writeFile(fleetVars, JSON.stringify({ exocomp_fleet_pubkey: fleet.publicKey }));
  });

  async function startHost(): Promise<LoopbackHost> {
    const host = await createLoopbackHost({ rootAuthorizedKey: bootstrap.publicKey });
    hosts.push(host);
    await host.start();
    return host;
  }

  /**
   * What the chain's onboard step does for a new host, done by hand: pin its key,
   * then run the seeded onboarding playbook as root with the bootstrap key granted
   * by --ssh-identity. The converge afterwards connects as the fleet user.
   */
  async function onboard(hostName: string): Promise<void> {
    await expectExit(exocomp(['host', 'onboard', hostName, '--inventory', 'tf:edge', ...ledgerArgs()]), 0);
    await expectExit(
      exocomp([
        'playbook',
        'run',
        onboardPlaybook,
        '--inventory',
        'tf:edge',
        '--limit',
        hostName,
        '--remote-user',
        'root',
        '--ssh-identity',
        bootstrap.privateKeyPath,
        ...ledgerArgs(),
        '--',
        '-e',
        `@${fleetVars}`,
      ]),
      0,
    );
  }

  const converge = () =>
    expectExit(
      exocomp([
        'playbook',
        'run',
        'converge.yml',
        '--inventory',
        'tf:edge',
        '--fleet-key',
        fleet.privateKeyPath,
        '--concurrency-key',
        'edge-converge',
        ...ledgerArgs(),
      ]),
      0,
    );

  it('the next converge configures the new host, and the schedule file does not change', async () => {
    const host1 = await startHost();
    const applied = await apply('edge', 'edge', { host1: sshHost(host1) });
    expect(applied.stdout).toMatch(/naming 1 host\(s\)/);

    const scheduleArgs = [
      'schedule',
      'add',
      'edge-converge',
      '--cron',
      '0 17 3 * * *',
      '--kind',
      'play',
      '--target',
      'tf:edge',
      '--concurrency-key',
      'edge-converge',
      '--',
      'converge.yml',
    ];
    const added = await expectExit(exocomp(scheduleArgs), 0);
    expect(added.stdout).toContain('.github/workflows/exocomp-edge-converge.yml: created');
    const scheduleFile = path.join(project, '.github/workflows/exocomp-edge-converge.yml');
    const before = await readFile(scheduleFile);

    await onboard('host1');
    await converge();
    expect(await host1.readFile('/etc/exocomp-converged')).toBe('host1\n');

    const host2 = await startHost();
    const reapplied = await apply('edge', 'edge', { host1: sshHost(host1), host2: sshHost(host2) });
    expect(reapplied.stdout).toMatch(/naming 2 host\(s\)/);
    await onboard('host2');
    expect(await host2.readFile('/etc/exocomp-converged')).toBeUndefined();
    await converge();
    expect(await host2.readFile('/etc/exocomp-converged')).toBe('host2\n');

    // The same schedule, added again after the hosts changed, is the same bytes.
    const again = await expectExit(exocomp(scheduleArgs), 0);
    expect(again.stdout).toContain('exocomp-edge-converge.yml: unchanged');
    expect((await readFile(scheduleFile)).equals(before)).toBe(true);
    expect(before.toString()).toContain("target: 'tf:edge'");
  }, 600_000);
});

describe('fail closed: no ansible-playbook process for an unusable inventory', () => {
  let fakeBin: string;
  let record: string;

  beforeAll(async () => {
    fakeBin = await newDir('fake-bin');
    record = path.join(root, 'ansible-invocations.log');
    // First on PATH: records that it was started, and how the identity was granted.
    await writeFile(
      path.join(fakeBin, 'ansible-playbook'),
      [
        '#!/usr/bin/python3',
        'import json, os, sys',
        'extra = {}',
        'for i, arg in enumerate(sys.argv):',
        '    if arg == "-e" and sys.argv[i + 1].startswith("@") and sys.argv[i + 1].endswith("extra-vars.json"):',
        '        extra = json.load(open(sys.argv[i + 1][1:]))',
        'key = extra.get("ansible_ssh_private_key_file")',
        'entry = {"argv": sys.argv[1:]}',
        'if key:',
        '    entry["key"] = {"path": key, "mode": oct(os.stat(key).st_mode & 0o777), "text": open(key).read()}',
        `with open(${JSON.stringify(record)}, "a") as f:`,
        '    f.write(json.dumps(entry) + "\\n")',
        '',
      ].join('\n'),
    );
    await chmod(path.join(fakeBin, 'ansible-playbook'), 0o755);
  });

  const withFake = () => ({ env: { PATH: `${fakeBin}:${baseEnv.PATH}` } });

  it(
    'refuses unregistered, lost, corrupt and hostless inventories with four distinct messages',
    async () => {
      await apply('edge', 'lost', { l1: localHost });
      await apply('edge', 'corrupt', { l1: localHost });
      const hostless = await apply('no-inventory', 'hostless');
      expect(hostless.stdout).toMatch(/naming 0 host\(s\)/);
      await commitToLedger({ 'inventories/lost.inventory.json': null }, 'lose a file');
      const original = (await ledgerFile('inventories/corrupt.inventory.json')) as string;
      await commitToLedger(
        { 'inventories/corrupt.inventory.json': original.replace('"l1"', '"l9"') },
        'corrupt a file',
      );

      const cases: Array<[string, RegExp]> = [
        ['unregistered', /inventory tf:unregistered is not registered/],
        ['lost', /inventory tf:lost has lost its file: inventories\/lost\.inventory\.json is missing/],
        ['corrupt', /inventory tf:corrupt is corrupt: .* does not match the hash recorded at apply/],
        ['hostless', /inventory tf:hostless names no hosts/],
      ];
      const messages: string[] = [];
      for (const [name, message] of cases) {
        const r = await exocomp(
          ['playbook', 'run', 'converge.yml', '--inventory', `tf:${name}`, ...ledgerArgs()],
          withFake(),
        );
        expect(r.code, r.stderr).toBe(1);
        expect(r.stderr).toMatch(message);
        messages.push(r.stderr.split('\n').find((line) => line.startsWith('error:')) ?? '');
      }
      expect(new Set(messages).size).toBe(4);
      expect(existsSync(record)).toBe(false);

      // The same command against a usable inventory does reach the stand-in ansible-playbook.
      await apply('edge', 'usable', { l1: localHost });
      await expectExit(
        exocomp(['playbook', 'run', 'converge.yml', '--inventory', 'tf:usable', ...ledgerArgs()], withFake()),
        0,
      );
      expect(existsSync(record)).toBe(true);
    },
    scaled(300_000),
  );

  it('--ssh-identity grants one file as a private 0600 copy, never a directory', async () => {
    await apply('edge', 'identity', { l1: localHost });
    const keys = await newDir('identity');
    const key = await generateKeyPair(keys, 'granted');
    await chmod(key.privateKeyPath, 0o640);
    await rm(record, { force: true });
    await expectExit(
      exocomp(
        [
          'playbook',
          'run',
          'converge.yml',
          '--inventory',
          'tf:identity',
          '--ssh-identity',
          key.privateKeyPath,
          ...ledgerArgs(),
        ],
        withFake(),
      ),
      0,
    );
    const [entry] = (await readFile(record, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { key?: { path: string; mode: string; text: string } });
    expect(entry?.key?.mode).toBe('0o600');
    expect(entry?.key?.text).toBe(await readFile(key.privateKeyPath, 'utf8'));
    expect(path.dirname(entry?.key?.path ?? keys)).not.toBe(keys);
    expect(existsSync(entry?.key?.path ?? keys)).toBe(false); // removed after the run

    await rm(record, { force: true });
    const refused = await expectExit(
      exocomp(
        ['playbook', 'run', 'converge.yml', '--inventory', 'tf:identity', '--ssh-identity', keys, ...ledgerArgs()],
        withFake(),
      ),
      2,
    );
    expect(refused.stderr).toMatch(
      /--ssh-identity ".*" is a directory: a run is granted one key file, never a directory/,
    );
    expect(existsSync(record)).toBe(false);
  });
});

describe('--check, --limit and --tags reach ansible-playbook', () => {
  beforeAll(async () => {
    await apply('edge', 'tagged', { l1: localHost, l2: localHost });
  });

  const run = (out: string, flags: string[]) =>
    exocomp([
      'playbook',
      'run',
      'tagged.yml',
      '--inventory',
      'tf:tagged',
      ...flags,
      ...ledgerArgs(),
      '--',
      '-e',
      `out=${out}`,
    ]);

  it('--limit and --tags select hosts and tasks; --egress reaches the play as exocomp_egress_ports', async () => {
    const out = await newDir('limit-tags');
    await expectExit(run(out, ['--limit', 'l1', '--tags', 'base', '--egress', '2222']), 0);
    expect((await readdir(out)).sort()).toEqual(['l1-base', 'l1-egress']);
    expect(JSON.parse(await readFile(path.join(out, 'l1-egress'), 'utf8'))).toEqual([22, 2222]);
  });

  it('--check changes nothing', async () => {
    const out = await newDir('check');
    const r = await expectExit(run(out, ['--check']), 0);
    expect(r.stderr).toMatch(/l1\s+: ok=\d+\s+changed=[1-9]/);
    expect(await readdir(out)).toEqual([]);
  });

  it('a --limit matching no host fails the run', async () => {
    const out = await newDir('no-match');
    const r = await expectExit(run(out, ['--limit', 'nosuchhost']), 1);
    expect(r.stderr).toMatch(/no hosts/i);
    expect(await readdir(out)).toEqual([]);
  });
});

describe('--concurrency-key', () => {
  let out: string;
  beforeAll(async () => {
    await apply('edge', 'serial', { l1: localHost });
    out = await newDir('serial');
  });

  const slowRun = (run: string, key: string, extra: string[] = [], pause = 2) =>
    exocomp([
      'playbook',
      'run',
      'slow.yml',
      '--inventory',
      'tf:serial',
      '--concurrency-key',
      key,
      ...extra,
      ...ledgerArgs(),
      '--',
      '-e',
      `out=${out}`,
      '-e',
      `run=${run}`,
      '-e',
      `pause=${pause}`,
    ]);

  async function interval(run: string): Promise<[bigint, bigint]> {
    const read = async (edge: string) => BigInt((await readFile(path.join(out, `${run}.${edge}`), 'utf8')).trim());
    return [await read('start'), await read('end')];
  }

  /** The lock record once the holder run has written it; fails when that run ends first. */
  async function waitForLock(key: string, holder: Promise<RunResult>): Promise<string> {
    let ended: RunResult | undefined;
    void holder.then((r) => (ended = r));
    for (;;) {
      const text = await ledgerFile(`locks/${key}.json`);
      if (text !== undefined) return text;
      if (ended)
        throw new Error(`the holder run ended (exit ${ended.code}) before its lock appeared:\n${ended.stderr}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  it(
    'two overlapping runs with one key never overlap',
    async () => {
      const [a, b] = await Promise.all([slowRun('a', 'serial'), slowRun('b', 'serial')]);
      expect(a.code, a.stderr).toBe(0);
      expect(b.code, b.stderr).toBe(0);
      const [aStart, aEnd] = await interval('a');
      const [bStart, bEnd] = await interval('b');
      expect(aEnd <= bStart || bEnd <= aStart).toBe(true);
      expect([a.stderr, b.stderr].some((s) => s.includes('waiting up to 10m 00s for concurrency key serial'))).toBe(
        true,
      );
      expect(await ledgerFile('locks/serial.json')).toBeUndefined();
    },
    scaled(300_000),
  );

  it(
    'a waiting run gives up after --concurrency-wait and names the holder',
    async () => {
      const holder = slowRun('holder', 'held', [], 8);
      const lock = JSON.parse(await waitForLock('held', holder)) as { lease: { origin: { pid: number } } };
      const refused = await slowRun('late', 'held', ['--concurrency-wait', '1s']);
      expect(refused.code, refused.stderr).toBe(1);
      expect(refused.stderr).toContain(`concurrency key held is held by local:${hostname()}:${lock.lease.origin.pid}:`);
      expect(refused.stderr).toMatch(/playbook run slow\.yml --inventory tf:serial; since .*; gave up after waiting/);
      expect(existsSync(path.join(out, 'late.start'))).toBe(false);
      await expectExit(holder, 0);
      expect(await ledgerFile('locks/held.json')).toBeUndefined();
    },
    scaled(300_000),
  );

  it('takes over a lease whose holder process is gone', async () => {
    const gone = await runProcess('sh', ['-c', 'echo $$']);
    const pid = Number(gone.stdout.trim());
    const now = new Date().toISOString();
    const lease = {
      holder: `local:${hostname()}:${pid}:dead`,
      origin: { kind: 'local', hostname: hostname(), pid },
      acquiredAt: now,
      heartbeatAt: now,
      ttlMs: 600_000,
    };
    await commitToLedger(
      {
        'locks/orphan.json': `${JSON.stringify({ schemaVersion: 1, key: 'orphan', lease, purpose: 'a run that crashed' })}\n`,
      },
      'an orphaned lock',
    );
    await expectExit(slowRun('taker', 'orphan', ['--concurrency-wait', '1s'], 0), 0);
    expect(existsSync(path.join(out, 'taker.end'))).toBe(true);
    expect((await ledgerMessages(ledger)).join('\n')).toContain(`taking over from local:${hostname()}:${pid}:dead`);
  });
});

describe('sealed outputs', () => {
  it('reach a run naming tf:<name>, and not a run given the same inventory as a file', async () => {
    await apply('sealed', 'vault', { l1: localHost }, ['--seal-key', SEAL_KEY]);
    const out = await newDir('sealed');
    const inventoryFile = path.join(project, 'vault-inventory.json');
    await writeFile(inventoryFile, (await ledgerFile('inventories/vault.inventory.json')) as string);
    const run = (inventory: string, label: string) =>
      expectExit(
        exocomp([
          'playbook',
          'run',
          'env.yml',
          '--inventory',
          inventory,
          '--seal-key',
          SEAL_KEY,
          ...ledgerArgs(),
          '--',
          '-e',
          `out=${out}`,
          '-e',
          `label=${label}`,
        ]),
        0,
      );

    const named = await run('tf:vault', 'named');
    expect(await readFile(path.join(out, 'named'), 'utf8')).toBe('loopback-only-sealed-password');
    expect(named.stdout + named.stderr).not.toContain('loopback-only-sealed-password');
    await run(inventoryFile, 'file');
    expect(await readFile(path.join(out, 'file'), 'utf8')).toBe('');
  });
});

describe('schedule list / remove / refusals', () => {
  const add = (name: string, extra: string[] = [], tail = ['--', 'converge.yml']) =>
    exocomp([
      'schedule',
      'add',
      name,
      '--cron',
      '0 0 4 * * *',
      '--kind',
      'play',
      '--target',
      'tf:edge',
      '--concurrency-key',
      unique('k'),
      ...extra,
      ...tail,
    ]);

  it('lists, refuses to overwrite without --force, removes', { timeout: scaled(300_000) }, async () => {
    const dir = await newDir('workflows');
    const added = await expectExit(
      add('nightly', ['--dir', dir], ['--', 'converge.yml', '--check', '--tags', 'base']),
      0,
    );
    expect(added.stderr).toContain('fires at minute 0');
    const listed = await expectExit(exocomp(['schedule', 'list', '--dir', dir, '--json']), 0);
    expect(JSON.parse(listed.stdout).result.schedules).toEqual([
      expect.objectContaining({
        name: 'nightly',
        cron: '0 4 * * *',
        target: 'tf:edge',
        playbook: 'converge.yml',
        args: ['--check', '--tags', 'base'],
      }),
    ]);
    const refused = await expectExit(add('nightly', ['--dir', dir]), 2);
    expect(refused.stderr).toMatch(/already exists with different contents/);
    await expectExit(add('nightly', ['--dir', dir, '--force']), 0);
    await expectExit(exocomp(['schedule', 'remove', 'nightly', '--dir', dir]), 0);
    expect(await readdir(dir)).toEqual([]);
    await expectExit(exocomp(['schedule', 'remove', 'nightly', '--dir', dir]), 2);
  });

  it.each<[string, string[], RegExp]>([
    ['a kind other than play', ['--kind', 'apply'], /--kind "apply" is not supported/],
    ['a cron CI cannot express', ['--cron', '0 */2 * * * *'], /at most every 5 minutes/],
    ['a file target', ['--target', 'hosts.yml'], /is not a standing inventory/],
  ])('refuses %s', async (_label, change, message) => {
    const args = [
      'schedule',
      'add',
      'x',
      '--cron',
      '0 17 3 * * *',
      '--kind',
      'play',
      '--target',
      'tf:edge',
      '--concurrency-key',
      'k',
      ...change,
      '--dir',
      await newDir('refused'),
      '--',
      'converge.yml',
    ];
    const r = await expectExit(exocomp(args), 2);
    expect(r.stderr).toMatch(message);
  });

  it('--gitlab --print prints the include and the pipeline-schedule settings without writing a file', async () => {
    const dir = await newDir('gitlab');
    const r = await expectExit(add('nightly', ['--dir', dir, '--gitlab', '--print']), 0);
    expect(r.stdout).toContain('component:');
    expect(r.stdout).toContain('Cron timezone:     UTC');
    expect(await readdir(dir)).toEqual([]);
  });
});
