/**
 * Issue 8: the chain tried with hostile and malformed input, as an attacker and
 * as a careless user would. Every case exits non-zero with a message naming the
 * problem, no stack trace, and the ledger branch unchanged; injected commands
 * never run (their canary files never appear). One fixture for all cases; only
 * the injection cases start ansible and a loopback host.
 */
import { existsSync } from 'node:fs';
import { copyFile, mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProcess } from '../../src/adapters/process.js';
import { createChainFixture, sshHostVars, type ChainFixture, type CliResult } from '../support/chain-fixture.js';
import { createLoopbackHost, generateKeyPair, type LoopbackHost } from '../support/loopback-host.js';

let fx: ChainFixture;
let host: LoopbackHost;

const file = (name: string) => join(fx.dir, name);
const canary = (name: string) => file(`canary-${name}`);
const CANARIES = ['ssh-executable', 'local-command', 'proxy-common', 'proxy-extra', 'jinja-var', 'jinja-host'] as const;

/** Every ref of the ledger repository with its commit: equal before and after means nothing was written. */
async function ledgerRefs(): Promise<string> {
  return (await runProcess('git', ['--git-dir', fx.ledger, 'for-each-ref', '--format=%(refname) %(objectname)']))
    .stdout;
}

/** The hostile connection variables of issue 8: [canary, variable, value], each creating its canary if it ever ran. */
const INJECTIONS: Array<[(typeof CANARIES)[number], string, () => string]> = [
  ['ssh-executable', 'ansible_ssh_executable', () => file('evil-ssh.sh')],
  [
    'local-command',
    'ansible_ssh_common_args',
    () => `-o PermitLocalCommand=yes -o LocalCommand="touch ${canary('local-command')}"`,
  ],
  ['proxy-common', 'ansible_ssh_common_args', () => `-o ProxyCommand="touch ${canary('proxy-common')}"`],
  ['proxy-extra', 'ansible_ssh_extra_args', () => `-o ProxyCommand="touch ${canary('proxy-extra')}"`],
];

const jinja = (name: string) => `{{ lookup('ansible.builtin.pipe', 'touch ${canary(name)}') }}`;

/** The standing inventory tf:edge: a real host, and the runner itself (local) carrying a template from "cloud metadata". */
function goodInventory() {
  return {
    all: {
      hosts: {
        web: sshHostVars(host),
        control: {
          ansible_connection: 'local',
          ansible_python_interpreter: '/usr/bin/python3',
          motd: jinja('jinja-var'),
        },
      },
    },
  };
}

const apply = (inventory: () => unknown) => async () => {
  await fx.setInventory(inventory());
  return ['workspace', 'apply', fx.workspace, ...fx.common, '--workspace-name', 'edge'];
};
const run =
  (...extra: string[]) =>
  async () => ['provision', 'run', fx.workspace, 'site.yml', ...fx.keys, ...extra];
const keyRun = (option: string, key: string) => async () => [
  'provision',
  'run',
  fx.workspace,
  'site.yml',
  ...fx.common,
  option,
  file(key),
];
const playbookRun = (book: string) => async () => ['provision', 'run', fx.workspace, book, ...fx.keys];
const schedule = (cron: string) => async () => [
  'schedule',
  'add',
  'nightly',
  '--cron',
  cron,
  '--kind',
  'play',
  '--target',
  'tf:edge',
  '--concurrency-key',
  'k',
  '--dir',
  file('workflows'),
  '--',
  'site.yml',
];
const secretsRun = (name: string) => async () => [...(await run()()), '--run-secrets', file(name)];

function nested(levels: number): unknown {
  let group: Record<string, unknown> = { hosts: { deep: { ansible_connection: 'local' } } };
  for (let i = levels; i > 0; i -= 1) group = { children: { [`g${i}`]: group } };
  return { all: group };
}

/** [label, the arguments (after any setup), what the message must say, the exit code]. */
const CASES: Array<[string, () => Promise<string[]>, RegExp, 1 | 2]> = [
  // Workflow ids: the record pattern and at most 64 characters.
  ['id with a slash', run('--id', 'a/b'), /invalid workflow id "a\/b": it contains a path separator/, 2],
  ['id ..', run('--id', '..'), /invalid workflow id "\.\.": it contains '\.\.'/, 2],
  ['id in capitals', run('--id', 'ABC'), /invalid workflow id "ABC": it contains uppercase letters/, 2],
  ['empty id', run('--id='), /invalid workflow id "": it is empty/, 2],
  ['id -rf', run('--id=-rf'), /invalid workflow id "-rf": it does not start with a letter or digit/, 2],
  ['id with a space', run('--id', 'x y'), /invalid workflow id "x y": it contains whitespace/, 2],
  ['id .git', run('--id', '.git'), /invalid workflow id "\.git": it does not start with a letter or digit/, 2],
  [
    'id of 300 characters',
    run('--id', 'a'.repeat(300)),
    /invalid workflow id "a+\\u2026": it is 300 characters long \(at most 64\)/,
    2,
  ],
  ['status of ../x', async () => ['provision', 'status', '../x', ...fx.ledgerArgs], /invalid workflow id "\.\.\/x"/, 2],
  ['resume of a/b', async () => ['provision', 'resume', 'a/b', ...fx.ledgerArgs], /invalid workflow id "a\/b"/, 2],
  [
    'approval of ..',
    async () => ['approval', 'decide', '..', '--approve', ...fx.ledgerArgs],
    /invalid workflow id "\.\."/,
    2,
  ],
  // Names.
  [
    'workspace name ../evil',
    run('--workspace-name', '../evil'),
    /invalid workspace name "\.\.\/evil": it contains a path separator/,
    2,
  ],
  [
    'workspace name in capitals',
    run('--workspace-name', 'Edge'),
    /invalid workspace name "Edge": it contains uppercase letters/,
    2,
  ],
  [
    'inventory tf:../x',
    async () => ['playbook', 'run', 'site.yml', '--inventory', 'tf:../x', ...fx.ledgerArgs],
    /invalid inventory reference "tf:\.\.\/x"/,
    2,
  ],
  [
    'onboard user root;id',
    run('--onboard-user', 'root;id'),
    /invalid --onboard-user "root;id": it contains characters other than/,
    2,
  ],
  [
    'remote user -oProxyCommand=x',
    run('--remote-user=-oProxyCommand=x'),
    /invalid --remote-user "-oProxyCommand=x": it starts with '-'/,
    2,
  ],
  ['empty onboard user', run('--onboard-user='), /invalid --onboard-user "": it is empty/, 2],
  [
    'playbook run as -oX',
    async () => ['playbook', 'run', 'site.yml', '--inventory', 'tf:edge', '--remote-user=-oX', ...fx.ledgerArgs],
    /invalid --remote-user "-oX"/,
    2,
  ],
  // Durations.
  ['ssh-wait forever', run('--ssh-wait', 'forever'), /invalid duration "forever"/, 2],
  ['ssh-wait -5m', run('--ssh-wait=-5m'), /invalid duration "-5m"/, 2],
  ['ssh-wait 5 m', run('--ssh-wait', '5 m'), /invalid duration "5 m"/, 2],
  // Schedules.
  ['cron on 31 February', schedule('0 0 3 31 2 *'), /it never fires: day 31 does not exist in FEB/, 2],
  ['cron with seconds', schedule('30 0 3 * * *'), /the seconds field is "30"/, 2],
  ['cron every minute', schedule('0 * * * * *'), /fires as often as every 1 minute/, 2],
  ['five-field cron', schedule('0 3 * * *'), /expected six fields, got 5/, 2],
  // Run-secrets.
  [
    'run-secret named like a path',
    secretsRun('secrets-badname.yml'),
    /"lower-case" is not a valid environment variable name/,
    2,
  ],
  ['run-secret PATH', secretsRun('secrets-path.yml'), /PATH/, 2],
  ['run-secrets as a list', secretsRun('secrets-list.yml'), /must be a mapping of name → value/, 2],
  ['run-secrets not YAML', secretsRun('secrets-broken.yml'), /is not valid YAML\/JSON \(line \d+\)/, 2],
  // Key files.
  [
    'fleet key that is a public key',
    keyRun('--fleet-key', 'keys/good.pub'),
    /--fleet-key .*good\.pub is a public key/,
    2,
  ],
  ['empty fleet key', keyRun('--fleet-key', 'keys/empty'), /--fleet-key .*empty is not an SSH private key/, 2],
  [
    'bootstrap key with a passphrase',
    keyRun('--bootstrap-key', 'keys/protected'),
    /--bootstrap-key .*protected is protected by a passphrase, and a run cannot type it[\s\S]*ssh-keygen -p/,
    2,
  ],
  [
    'missing bootstrap key',
    keyRun('--bootstrap-key', 'keys/missing'),
    /--bootstrap-key ".*keys\/missing" is neither an SSH private key nor the path of a readable file/,
    2,
  ],
  ['key that is a directory', keyRun('--fleet-key', 'keys'), /--fleet-key ".*keys" is not a file/, 2],
  // Playbooks.
  ['missing playbook', playbookRun('nope.yml'), /playbook "nope\.yml" does not exist/, 2],
  ['playbook that is a directory', playbookRun('plays'), /playbook "plays" is a directory, not a playbook file/, 2],
  ['playbook that is not YAML', playbookRun('broken.yml'), /playbook "broken\.yml": it is not valid YAML/, 2],
  ['playbook that is a mapping', playbookRun('mapping.yml'), /playbook "mapping\.yml": it is not a list of plays/, 2],
  [
    'onboard playbook missing',
    run('--onboard-playbook', 'gone.yml'),
    /--onboard-playbook "gone\.yml" does not exist/,
    2,
  ],
  // Inventories from tofu outputs: refused at capture, naming host and variable, before any play.
  ...INJECTIONS.map(([name, variable, value]): [string, () => Promise<string[]>, RegExp, 1] => [
    `inventory setting ${variable} (${name})`,
    apply(() => ({ all: { hosts: { web: { ...sshHostVars(host), [variable]: value() } } } })),
    new RegExp(`host "web": sets ${variable}, which is not allowed from an inventory`),
    1,
  ]),
  [
    'inventory with a template as address',
    apply(() => ({ all: { hosts: { web: { ansible_host: jinja('jinja-host') } } } })),
    /host "web": address ".*" is not a host name or IP address/,
    1,
  ],
  [
    'inventory with connection paramiko',
    apply(() => ({ all: { hosts: { web: { ansible_host: '127.0.0.1', ansible_connection: 'paramiko' } } } })),
    /ansible_connection "paramiko" is not allowed: only ssh and local are/,
    1,
  ],
  [
    'inventory with a local host running its own python',
    apply(() => ({
      all: { hosts: { box: { ansible_connection: 'local', ansible_python_interpreter: '/tmp/evil' } } },
    })),
    /not allowed for a local host: a local host's interpreter runs on the runner/,
    1,
  ],
  // 200, not 1,000: the OpenTofu stand-in's own recursion ends there (the unit tests refuse 1,000 and 100,000 levels).
  [
    'inventory nested 200 levels',
    apply(() => nested(200)),
    /the ansible_inventory output nests groups \(children within children\) more than 64 levels deep/,
    1,
  ],
  [
    'inventory in the --list format',
    apply(() => ({ _meta: { hostvars: {} }, all: { children: ['web'] } })),
    /the ansible_inventory output is in the `ansible-inventory --list` format/,
    1,
  ],
  [
    'inventory with a list of hosts',
    apply(() => ({ all: { hosts: ['web'] } })),
    /all\.hosts: expected a mapping, got a list/,
    1,
  ],
  [
    'inventory with a templated host name',
    apply(() => ({ all: { hosts: { "{{lookup('pipe','id')}}": null } } })),
    /contains a template marker/,
    1,
  ],
];

beforeAll(async () => {
  fx = await createChainFixture('edge');
  host = await createLoopbackHost({ rootAuthorizedKey: fx.bootstrap.publicKey });
  await host.start();
  await writeFile(file('evil-ssh.sh'), `#!/bin/sh\ntouch '${canary('ssh-executable')}'\nexec ssh "$@"\n`, {
    mode: 0o755,
  });
  await copyFile(new URL('../fixtures/playbooks/site.yml', import.meta.url), file('site.yml'));
  await writeFile(
    file('motd.yml'),
    '- hosts: control\n  gather_facts: false\n  tasks:\n    - ansible.builtin.debug:\n        msg: "motd is {{ motd }}"\n',
  );
  await mkdir(file('plays'));
  await writeFile(file('broken.yml'), '- hosts: [all\n  tasks: {{ nope\n');
  await writeFile(file('mapping.yml'), 'hosts: all\ntasks: []\n');
  await writeFile(file('secrets-badname.yml'), 'lower-case: x\n');
  await writeFile(file('secrets-path.yml'), 'PATH: /tmp/evil\n');
  await writeFile(file('secrets-list.yml'), '- a\n- b\n');
  await writeFile(file('secrets-broken.yml'), 'A: "unterminated\n');
  await mkdir(file('keys'));
  const good = await generateKeyPair(file('keys'), 'good');
  await copyFile(`${good.privateKeyPath}.pub`, file('keys/good.pub'));
  await writeFile(file('keys/empty'), '', { mode: 0o600 });
  await runProcess('ssh-keygen', [
    '-q',
    '-t',
    'ed25519',
    '-N',
    'a passphrase',
    '-C',
    'protected',
    '-f',
    file('keys/protected'),
  ]);
  // The standing inventory tf:edge exists before the cases, so "unchanged" compares a real branch.
  await fx.setInventory(goodInventory());
  const seeded = await fx.cli(['workspace', 'apply', fx.workspace, ...fx.common, '--workspace-name', 'edge']);
  expect(seeded.code, seeded.stderr).toBe(0);
});

afterAll(async () => {
  await host?.destroy();
  await fx?.cleanup();
});

function expectRefusal(result: CliResult, message: RegExp, code: number): void {
  const said = `${result.stdout}\n${result.stderr}`;
  expect(result.code, said).toBe(code);
  expect(said).toMatch(message);
  // A stack trace is a bug report, not a message.
  expect(said).not.toMatch(/^\s+at .+:\d+:\d+\)?$/m);
}

describe('hostile and malformed input', () => {
  it('has at least 40 cases', () => {
    expect(CASES.length).toBeGreaterThanOrEqual(40);
  });

  it.each(CASES)('%s: refused with the reason, ledger unchanged', async (_label, argsOf, message, code) => {
    const before = await ledgerRefs();
    const result = await fx.cli(await argsOf());
    expectRefusal(result, message, code);
    expect(await ledgerRefs()).toBe(before);
  });

  it('a schedule that can never fire writes no file', () => {
    expect(existsSync(file('workflows'))).toBe(false);
  });

  it('a ledger record whose id differs from its file name is reported, not used', async () => {
    // A real record first (planned, awaiting approval), then a copy of it under another name.
    const planned = await fx.cli([
      'provision',
      'run',
      fx.workspace,
      'site.yml',
      ...fx.keys,
      '--require-approval',
      '--id',
      'edge-real',
    ]);
    expect(planned.code, planned.stderr).toBe(0);
    // One branch per record (src/ledger/layout.ts): the copy is a branch of its own holding the same file under another name.
    const env = {
      ...process.env,
      GIT_INDEX_FILE: file('copy-index'),
      GIT_AUTHOR_NAME: 't',
      GIT_AUTHOR_EMAIL: 't@t',
      GIT_COMMITTER_NAME: 't',
      GIT_COMMITTER_EMAIL: 't@t',
    };
    const git = async (args: string[], input?: string) =>
      (
        await runProcess('git', ['--git-dir', fx.ledger, ...args], { env, ...(input === undefined ? {} : { input }) })
      ).stdout.trim();
    const record = await git(['show', 'exocomp-ledger-records/workflows/edge-real.json:workflows/edge-real.json']);
    expect(record).toContain('"id": "edge-real"');
    const blob = await git(['hash-object', '-w', '--stdin'], record);
    await git(['update-index', '--add', '--cacheinfo', `100644,${blob},workflows/edge-copy.json`]);
    const commit = await git(['commit-tree', await git(['write-tree']), '-m', 'crafted copy']);
    const copyRef = 'refs/heads/exocomp-ledger-records/workflows/edge-copy.json';
    await git(['update-ref', copyRef, commit]);
    const before = await ledgerRefs();
    expectRefusal(
      await fx.cli(['provision', 'status', 'edge-copy', ...fx.ledgerArgs]),
      /malformed ledger record workflows\/edge-copy\.json: its id "edge-real" differs from its file name/,
      1,
    );
    expect(await ledgerRefs()).toBe(before);
    // The ledger as it was, for the checks below.
    await git(['update-ref', '-d', copyRef]);
  });

  it('a template from tofu outputs reaches the play as text: the play runs and the command in it never does', async () => {
    const result = await fx.cli([
      'playbook',
      'run',
      'motd.yml',
      '--inventory',
      'tf:edge',
      '--remote-user',
      'root',
      ...fx.ledgerArgs,
    ]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout + result.stderr).toContain("motd is {{ lookup('ansible.builtin.pipe', 'touch");
  });

  it('no injected command ever ran: no canary exists', () => {
    for (const name of CANARIES) expect(existsSync(canary(name)), name).toBe(false);
  });

  it('the ledger passes git fsck --strict', async () => {
    const fsck = await runProcess('git', ['--git-dir', fx.ledger, 'fsck', '--strict', '--no-dangling']);
    expect(fsck.code, fsck.stderr + fsck.stdout).toBe(0);
    expect(fsck.stderr + fsck.stdout).not.toMatch(/error|warning/i);
  });

  /**
   * The control: the same variables handed to ansible as a plain inventory do run
   * their commands on this machine, so the canaries above would have appeared.
   */
  it('control: given to ansible directly, the same inventory creates every canary', async () => {
    const hosts: Record<string, Record<string, unknown>> = {};
    for (const [name, variable, value] of INJECTIONS)
      hosts[`h-${name}`] = { ...sshHostVars(host), [variable]: value() };
    hosts['h-jinja'] = {
      ansible_connection: 'local',
      ansible_python_interpreter: '/usr/bin/python3',
      motd: jinja('jinja-var'),
    };
    await writeFile(file('control-inventory.json'), JSON.stringify({ all: { hosts } }));
    await writeFile(
      file('control.yml'),
      '- hosts: all\n  gather_facts: false\n  tasks:\n    - ansible.builtin.ping:\n    - ansible.builtin.debug:\n        msg: "{{ motd | default(\'\') }}"\n',
    );
    const home = file('control-home');
    await mkdir(home, { recursive: true });
    const control = await runProcess(
      'ansible-playbook',
      ['-i', file('control-inventory.json'), file('control.yml'), '--private-key', fx.bootstrap.privateKeyPath],
      {
        cwd: fx.dir,
        env: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          HOME: home,
          ANSIBLE_HOME: home,
          ANSIBLE_LOCAL_TEMP: join(home, 'tmp'),
          ANSIBLE_HOST_KEY_CHECKING: 'False',
          ANSIBLE_SSH_ARGS: '-o ControlMaster=no -o UserKnownHostsFile=/dev/null',
          ANSIBLE_NOCOLOR: '1',
        },
      },
    );
    const missing = ['ssh-executable', 'local-command', 'proxy-common', 'proxy-extra', 'jinja-var'].filter(
      (name) => !existsSync(canary(name)),
    );
    expect(missing, control.stdout + control.stderr).toEqual([]);
    for (const name of CANARIES) await rm(canary(name), { force: true });
  });
});
