import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseRecap, runPlaybook, type PlaybookRun } from '../../src/adapters/ansible.js';
import { runProcess } from '../../src/adapters/process.js';
import { SshAgent } from '../../src/adapters/ssh.js';
import { ExocompError } from '../../src/domain/errors.js';
import { scrubEnvironment } from '../../src/domain/run-environment.js';
import { createLoopbackHost, generateKeyPair, type KeyPair, type LoopbackHost } from '../support/loopback-host.js';
import { privateDirPrefix } from '../../src/adapters/private-dir.js';

const ONBOARD_PLAYBOOK = resolve(import.meta.dirname, '../../playbooks/onboard.yml');
/** The one task of the seeded onboarding play that reaches the host. */
const ONBOARD_SCRIPT_TASK = 'Set up the fleet user, its key and passwordless sudo';

let root: string;
/** The runs' TMPDIR: every private directory of the adapter lands here and must be gone afterwards. */
let runTmp: string;
let bootstrap: KeyPair;
let fleet: KeyPair;
const hosts: LoopbackHost[] = [];

beforeAll(async () => {
  // Short: unix socket paths (the ssh control sockets under runTmp) are limited to 107 bytes.
  root = await mkdtemp(join(tmpdir(), 'ea-'));
  runTmp = join(root, 't');
  await mkdir(runTmp, { mode: 0o700 });
  bootstrap = await generateKeyPair(root, 'bootstrap');
  fleet = await generateKeyPair(root, 'fleet@exocomp');
});

afterAll(async () => {
  await Promise.all(hosts.map((host) => host.destroy()));
  if (root) await rm(root, { recursive: true, force: true });
});

async function startHost(): Promise<LoopbackHost> {
  const host = await createLoopbackHost({ rootAuthorizedKey: bootstrap.publicKey });
  hosts.push(host);
  await host.start();
  return host;
}

let fileCounter = 0;
async function writeTestFile(name: string, content: string): Promise<string> {
  fileCounter += 1;
  const path = join(root, `${fileCounter}-${name}`);
  await writeFile(path, content, { mode: 0o600 });
  return path;
}

async function pinnedKnownHosts(host: LoopbackHost, key?: string): Promise<string> {
  return writeTestFile('known_hosts', `${host.knownHostsName} ${key ?? (await host.hostPublicKey())}\n`);
}

function inventory(hostVars: Record<string, Record<string, unknown>>): Promise<string> {
  return writeTestFile('inventory.json', JSON.stringify({ all: { hosts: hostVars } }));
}

function hostEntry(host: LoopbackHost, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { ansible_host: host.address, ansible_port: host.port, ...extra };
}

function runEnv(additions: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { ...scrubEnvironment(process.env, additions), TMPDIR: runTmp };
}

function baseRun(
  overrides: Partial<PlaybookRun> & Pick<PlaybookRun, 'playbook' | 'inventoryPath' | 'knownHostsFile'>,
): PlaybookRun {
  return { cwd: root, env: runEnv(), ...overrides };
}

function describeRun(result: { code: number; tail: string }): string {
  return `exit ${result.code}\n${result.tail}`;
}

/** Plain OpenSSH, as a user would log in, verifying against the pinned file only. */
function sshAs(user: string, host: LoopbackHost, keyPath: string, knownHosts: string, command: string) {
  return runProcess('ssh', [
    '-F',
    '/dev/null',
    '-o',
    'BatchMode=yes',
    '-o',
    'IdentitiesOnly=yes',
    '-o',
    'IdentityAgent=none',
    '-o',
    `UserKnownHostsFile=${knownHosts}`,
    '-o',
    'GlobalKnownHostsFile=/dev/null',
    '-o',
    'StrictHostKeyChecking=yes',
    '-i',
    keyPath,
    '-p',
    String(host.port),
    `${user}@${host.address}`,
    command,
  ]);
}

describe('onboarding playbook against a loopback host', () => {
  let host: LoopbackHost;
  let knownHosts: string;
  let inventoryPath: string;

  beforeAll(async () => {
    host = await startHost();
    knownHosts = await pinnedKnownHosts(host);
    inventoryPath = await inventory({ web: hostEntry(host) });
  });

  const onboard = (extraVars: Record<string, unknown>) =>
    runPlaybook(
      baseRun({
        playbook: ONBOARD_PLAYBOOK,
        inventoryPath,
        knownHostsFile: knownHosts,
        remoteUser: 'root',
        privateKeyFile: bootstrap.privateKeyPath,
        extraVars,
        secrets: [],
      }),
    );

  it('refuses a missing or malformed fleet key before touching the host', async () => {
    for (const extraVars of [
      {},
      { exocomp_fleet_pubkey: 'not a key' },
      { exocomp_fleet_pubkey: `${fleet.publicKey}\nssh-ed25519 AAAAextra` },
    ]) {
      const result = await onboard(extraVars);
      expect(result.code, describeRun(result)).not.toBe(0);
      expect(result.stdout).toContain('exocomp_fleet_pubkey must be one public key line');
      expect(result.recap.web?.failed).toBe(1);
    }
    expect((await host.exec('getent passwd exocomp')).code).not.toBe(0);
  });

  it('creates the fleet user the fleet key logs in as, with passwordless sudo, and is idempotent', async () => {
    const first = await onboard({ exocomp_fleet_pubkey: fleet.publicKey });
    expect(first.code, describeRun(first)).toBe(0);
    expect(first.recap.web).toMatchObject({ failed: 0, unreachable: 0 });
    expect(first.recap.web?.changed).toBeGreaterThan(0);

    const login = await sshAs(
      'exocomp',
      host,
      fleet.privateKeyPath,
      knownHosts,
      'id -un && sudo -n true && echo sudo-ok',
    );
    expect(login.code, `${login.stderr}\n${await host.sshdLog()}`).toBe(0);
    expect(login.stdout).toBe('exocomp\nsudo-ok\n');

    const modes = await host.exec(
      'stat -c "%U %G %a %n" /home/exocomp/.ssh /home/exocomp/.ssh/authorized_keys /etc/sudoers.d/exocomp-exocomp',
    );
    expect(modes.stdout).toBe(
      [
        'exocomp exocomp 700 /home/exocomp/.ssh',
        'exocomp exocomp 600 /home/exocomp/.ssh/authorized_keys',
        'root root 440 /etc/sudoers.d/exocomp-exocomp',
        '',
      ].join('\n'),
    );
    expect(await host.readFile('/home/exocomp/.ssh/authorized_keys')).toBe(`${fleet.publicKey}\n`);
    expect((await host.exec('getent passwd exocomp | cut -d: -f7; getent shadow exocomp | cut -d: -f2')).stdout).toBe(
      '/bin/bash\n*\n',
    );

    const second = await onboard({ exocomp_fleet_pubkey: fleet.publicKey });
    expect(second.code, describeRun(second)).toBe(0);
    expect(second.recap.web).toMatchObject({ changed: 0, failed: 0, unreachable: 0 });
  });

  it('lets a later play connect as the fleet user through a per-run ssh-agent, with become', async () => {
    const playbook = await writeTestFile(
      'whoami.yml',
      '- hosts: all\n  gather_facts: false\n  tasks:\n    - ansible.builtin.command: whoami\n      register: who\n    - ansible.builtin.copy: {dest: /root/configured-by, content: "{{ who.stdout }} via {{ ansible_user }}"}\n',
    );
    const agent = await SshAgent.start();
    try {
      await agent.add(fleet.privateKeyPath);
      const result = await runPlaybook(
        baseRun({
          playbook,
          inventoryPath,
          knownHostsFile: knownHosts,
          env: { ...runEnv(), ...agent.env() },
          remoteUser: 'exocomp',
          become: true,
        }),
      );
      expect(result.code, describeRun(result)).toBe(0);
    } finally {
      await agent.stop();
    }
    expect(await host.readFile('/root/configured-by')).toBe('root via exocomp');
  });

  it('passes an extra var with spaces, quotes, $, backslashes, newlines and braces through intact', async () => {
    const tricky = `it's a "quoted" value with $HOME, \`id\`, back\\slash \\n, a\nnew line, {{ 7 * 6 }} and 100% 'single'`;
    const keyLine = `from="10.0.0.0/8",no-pty ${fleet.publicKey} with "comment" $USER`;
    const playbook = await writeTestFile(
      'echo-vars.yml',
      [
        '- hosts: all',
        '  gather_facts: false',
        '  tasks:',
        '    - ansible.builtin.copy: {dest: /root/tricky.txt, content: "{{ tricky }}"}',
        '    - ansible.builtin.copy: {dest: /root/key-line.txt, content: "{{ key_line }}"}',
        '    - ansible.builtin.copy:',
        '        dest: /root/all.json',
        "        content: \"{{ {'tricky': tricky, 'key_line': key_line, 'count': count, 'flags': flags} | to_json }}\"",
        '',
      ].join('\n'),
    );
    const result = await runPlaybook(
      baseRun({
        playbook,
        inventoryPath,
        knownHostsFile: knownHosts,
        privateKeyFile: bootstrap.privateKeyPath,
        remoteUser: 'root',
        extraVars: { tricky, key_line: keyLine, count: 42, flags: [true, 'two words'] },
      }),
    );
    expect(result.code, describeRun(result)).toBe(0);
    expect(await host.readFile('/root/tricky.txt')).toBe(tricky);
    expect(await host.readFile('/root/key-line.txt')).toBe(keyLine);
    expect(JSON.parse((await host.readFile('/root/all.json')) ?? 'null')).toEqual({
      tricky,
      key_line: keyLine,
      count: 42,
      flags: [true, 'two words'],
    });
    expect(await readdir(runTmp)).toEqual([]);
  });

  it('refuses a hostile user name on the control machine: nothing reaches the host', async () => {
    const mark = `/tmp/exo-user-${process.pid}`;
    for (const user of [`x;touch ${mark}`, `$(touch ${mark})`, `a'b`, '-oProxyCommand=x']) {
      const result = await onboard({ exocomp_fleet_pubkey: fleet.publicKey, exocomp_onboard_user: user });
      expect(result.code, describeRun(result)).not.toBe(0);
      expect(result.stdout).toContain('exocomp_onboard_user a plain user name');
      expect(result.stdout).not.toContain(`TASK [${ONBOARD_SCRIPT_TASK}`);
    }
    expect((await host.exec(`test -e ${mark} && echo ran; getent passwd x a`)).stdout).toBe('');
  });

  it('checks every host once, up front: a hostile value set for one host stops all of them before any host task', async () => {
    const mark = `/tmp/exo-host-user-${process.pid}`;
    // Two names for the one host: the check runs once for the play, yet reads each host's own variables.
    const twoHosts = await inventory({
      // A user no other test makes, so its absence afterwards says the script never ran for web either.
      web: hostEntry(host, { exocomp_onboard_user: 'checkedonce' }),
      web2: hostEntry(host, { exocomp_onboard_user: `x;touch ${mark}` }),
    });
    const result = await runPlaybook(
      baseRun({
        playbook: ONBOARD_PLAYBOOK,
        inventoryPath: twoHosts,
        knownHostsFile: knownHosts,
        remoteUser: 'root',
        privateKeyFile: bootstrap.privateKeyPath,
        extraVars: { exocomp_fleet_pubkey: fleet.publicKey },
        secrets: [],
      }),
    );
    expect(result.code, describeRun(result)).not.toBe(0);
    expect(result.stdout).toMatch(/failed: \[web\] \(item=web2\).*a plain user name \(got \\?"x;touch/);
    expect(result.stdout).not.toContain(`TASK [${ONBOARD_SCRIPT_TASK}`);
    // The check ran on web for both; ansible stopped there, so web2 reached no later task.
    expect(result.recap.web?.failed).toBe(1);
    expect(result.recap.web2 ?? { ok: 0, changed: 0 }).toMatchObject({ ok: 0, changed: 0 });
    expect((await host.exec(`test -e ${mark} && echo ran; getent passwd checkedonce`)).stdout).toBe('');
  });

  it('hands a key comment full of shell to the host as data: it lands in authorized_keys, nothing runs', async () => {
    const mark = `/tmp/exo-key-${process.pid}`;
    const keyLine = `${fleet.publicKey} x'$(touch ${mark}a)'\`touch ${mark}b\`;touch ${mark}c "$(touch ${mark}d)" \\ %s {{ 7 * 6 }}`;
    const result = await onboard({ exocomp_fleet_pubkey: keyLine });
    expect(result.code, describeRun(result)).toBe(0);
    expect(result.recap.web).toMatchObject({ changed: 1, failed: 0 });
    expect((await host.readFile('/home/exocomp/.ssh/authorized_keys'))?.split('\n')).toContain(keyLine);
    expect((await host.exec(`ls ${mark}a ${mark}b ${mark}c ${mark}d 2>/dev/null; true`)).stdout).toBe('');
  });

  it('fails the host and installs no drop-in when visudo rejects it, and repairs modes once it passes', async () => {
    const dropIn = '/etc/sudoers.d/exocomp-exocomp';
    await host.exec(
      `rm -f ${dropIn} && chmod 0644 /home/exocomp/.ssh/authorized_keys && printf '#!/bin/sh\\necho "parse error in $2" >&2\\nexit 1\\n' >/usr/local/sbin/visudo && chmod 0755 /usr/local/sbin/visudo`,
    );
    const refused = await onboard({ exocomp_fleet_pubkey: fleet.publicKey });
    expect(refused.code, describeRun(refused)).not.toBe(0);
    expect(refused.recap.web).toMatchObject({ failed: 1 });
    expect(refused.stdout).toMatch(
      /exocomp-onboard: failed: visudo -cf rejected the sudoers drop-in for \/etc\/sudoers.d\/exocomp-exocomp: parse error in \/etc\/sudoers.d\/exocomp-exocomp\.\w+/,
    );
    expect((await host.exec('ls -A /etc/sudoers.d')).stdout).not.toContain('exocomp');

    await host.exec('rm /usr/local/sbin/visudo');
    const repaired = await onboard({ exocomp_fleet_pubkey: fleet.publicKey });
    expect(repaired.code, describeRun(repaired)).toBe(0);
    expect(repaired.recap.web).toMatchObject({ changed: 1, failed: 0 });
    expect((await host.exec(`stat -c '%U %G %a' /home/exocomp/.ssh/authorized_keys ${dropIn}`)).stdout).toBe(
      'exocomp exocomp 600\nroot root 440\n',
    );
  });
});

describe('host key verification', () => {
  let host: LoopbackHost;
  let rootKeysBefore: string | undefined;
  const raw = 'pong.yml';

  beforeAll(async () => {
    host = await startHost();
    rootKeysBefore = await host.readFile('/root/.ssh/authorized_keys');
  });

  async function runPong(knownHostsFile: string, hostVars: Record<string, unknown> = {}) {
    const playbook = await writeTestFile(
      raw,
      '- hosts: all\n  gather_facts: false\n  tasks:\n    - ansible.builtin.raw: "echo pong > /root/pong"\n',
    );
    return runPlaybook(
      baseRun({
        playbook,
        inventoryPath: await inventory({ web: hostEntry(host, hostVars) }),
        knownHostsFile,
        remoteUser: 'root',
        privateKeyFile: bootstrap.privateKeyPath,
      }),
    );
  }

  it('fails unreachable against a wrong pin, even when the inventory tries to switch checking off', async () => {
    const impostor = await generateKeyPair(root, 'impostor');
    const wrongKey = impostor.publicKey.split(' ').slice(0, 2).join(' ');
    const knownHosts = await pinnedKnownHosts(host, wrongKey);
    const pinned = await readFile(knownHosts, 'utf8');

    for (const hostile of [
      {},
      {
        ansible_host_key_checking: false,
        ansible_ssh_host_key_checking: false,
        ansible_ssh_args: '-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null',
        ansible_ssh_common_args: '-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null',
      },
    ]) {
      const result = await runPong(knownHosts, hostile);
      expect(result.code, describeRun(result)).not.toBe(0);
      expect(result.recap.web).toMatchObject({ unreachable: 1 });
      expect(result.stdout).toMatch(/REMOTE HOST IDENTIFICATION HAS CHANGED|Host key verification failed/);
    }
    expect(await host.readFile('/root/pong')).toBeUndefined();
    expect(await host.readFile('/root/.ssh/authorized_keys')).toBe(rootKeysBefore);
    expect(await readFile(knownHosts, 'utf8')).toBe(pinned);
  });

  it('does not trust a host on first use: an empty pinned store fails', async () => {
    const empty = await writeTestFile('known_hosts', '');
    const result = await runPong(empty);
    expect(result.recap.web, describeRun(result)).toMatchObject({ unreachable: 1 });
    expect(await readFile(empty, 'utf8')).toBe('');
    expect(await host.readFile('/root/pong')).toBeUndefined();
  });

  it('succeeds with the right pin (the runs above failed for the key alone)', async () => {
    const result = await runPong(await pinnedKnownHosts(host));
    expect(result.code, describeRun(result)).toBe(0);
    expect(await host.readFile('/root/pong')).toBe('pong\n');
  });

  it('gives every run its own connection: after a rekey, the old pin fails at once', async () => {
    const oldPin = await pinnedKnownHosts(host);
    const before = await runPong(oldPin);
    expect(before.code, describeRun(before)).toBe(0);
    await host.rekey();
    const after = await runPong(oldPin);
    expect(after.code, describeRun(after)).not.toBe(0);
    expect(after.recap.web).toMatchObject({ unreachable: 1 });
    const repinned = await runPong(await pinnedKnownHosts(host));
    expect(repinned.code, describeRun(repinned)).toBe(0);
  });
});

describe('control path', () => {
  let host: LoopbackHost;
  let playbook: string;
  let observed: string;

  beforeAll(async () => {
    host = await startHost();
    observed = join(root, 'observed-control-dir.json');
    playbook = await writeTestFile(
      'control.yml',
      [
        '- hosts: all',
        '  gather_facts: false',
        '  tasks:',
        '    - ansible.builtin.raw: "true"',
        "    - ansible.builtin.find: {paths: \"{{ lookup('env', 'ANSIBLE_SSH_CONTROL_PATH_DIR') }}\", file_type: any}",
        '      delegate_to: localhost',
        '      register: sockets',
        '    - ansible.builtin.copy:',
        `        dest: ${observed}`,
        "        content: \"{{ {'dir': lookup('env', 'ANSIBLE_SSH_CONTROL_PATH_DIR'), 'sockets': sockets.files | map(attribute='path') | list} | to_json }}\"",
        '      delegate_to: localhost',
        '',
      ].join('\n'),
    );
  });

  /** Runs the play with TMPDIR=runDir; returns the control dir and sockets the play saw mid-run. */
  async function observeRun(
    runDir: string,
    options: { deferClose?: (closing: Promise<void>) => void } = {},
  ): Promise<{ dir: string; sockets: string[] }> {
    const result = await runPlaybook(
      baseRun({
        playbook,
        env: { ...runEnv(), TMPDIR: runDir },
        inventoryPath: await inventory({ web: hostEntry(host) }),
        knownHostsFile: await pinnedKnownHosts(host),
        remoteUser: 'root',
        privateKeyFile: bootstrap.privateKeyPath,
        ...options,
      }),
    );
    expect(result.code, describeRun(result)).toBe(0);
    if (options.deferClose)
      await closings.splice(0).reduce((all, closing) => all.then(() => closing), Promise.resolve());
    const seen = JSON.parse(await readFile(observed, 'utf8')) as { dir: string; sockets: string[] };
    expect(seen.sockets).toHaveLength(1);
    expect(seen.sockets[0]?.startsWith(`${seen.dir}/`)).toBe(true);
    expect(await stat(seen.dir).catch((error: NodeJS.ErrnoException) => error.code)).toBe('ENOENT');
    expect(await processesMentioning(seen.dir)).toEqual([]);
    expect(await readdir(runDir)).toEqual([]);
    return seen;
  }

  it('lives in the private temp dir during the run, and its masters and the dir are gone afterwards', async () => {
    const defaultControlDir = join(process.env.HOME ?? '/root', '.ansible', 'cp');
    const listDefault = () => readdir(defaultControlDir).catch(() => 'absent');
    const defaultBefore = await listDefault();

    const seen = await observeRun(runTmp);
    // Named with its owner's pid, so a run killed with -9 leaves nothing the next run's sweep misses.
    expect(seen.dir.startsWith(join(runTmp, privateDirPrefix('cp')))).toBe(true);
    expect(await listDefault()).toEqual(defaultBefore);
  });

  const closings: Promise<void>[] = [];

  it('hands the closing of its masters and files to a caller who asks: all gone once that settles', async () => {
    let handed = 0;
    await observeRun(runTmp, { deferClose: (closing) => (handed++, closings.push(closing)) });
    expect(handed).toBe(1);
  });

  it('moves the control dir to /tmp when TMPDIR is too long for a socket path, and removes it all the same', async () => {
    const longTmp = join(runTmp, 'a-temp-directory-whose-path-is-too-long-for-unix-sockets');
    await mkdir(longTmp);
    try {
      const seen = await observeRun(longTmp);
      expect(seen.dir.startsWith('/tmp/exocomp-cp-')).toBe(true);
    } finally {
      await rm(longTmp, { recursive: true, force: true });
    }
  });
});

async function processesMentioning(text: string): Promise<string[]> {
  const found: string[] = [];
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.includes(text)) found.push(`${pid}: ${cmdline.replace(/\0/g, ' ')}`);
  }
  return found;
}

describe('local hosts and run options', () => {
  let markers: string;
  let playbook: string;
  let inventoryPath: string;
  let knownHosts: string;

  beforeAll(async () => {
    markers = join(root, 'markers');
    knownHosts = await writeTestFile('known_hosts', '');
    inventoryPath = await inventory({
      one: { ansible_connection: 'local' },
      two: { ansible_connection: 'local' },
    });
    playbook = await writeTestFile(
      'tagged.yml',
      [
        '- hosts: all',
        '  gather_facts: false',
        '  tasks:',
        `    - ansible.builtin.copy: {dest: "${markers}/{{ inventory_hostname }}-alpha", content: alpha}`,
        '      tags: [alpha]',
        `    - ansible.builtin.copy: {dest: "${markers}/{{ inventory_hostname }}-beta", content: beta}`,
        '      tags: [beta]',
        '',
      ].join('\n'),
    );
  });

  async function runTagged(options: Partial<PlaybookRun>) {
    await rm(markers, { recursive: true, force: true });
    await mkdir(markers);
    const result = await runPlaybook(baseRun({ playbook, inventoryPath, knownHostsFile: knownHosts, ...options }));
    return { result, markers: (await readdir(markers)).sort() };
  }

  it('runs a play on an ansible_connection: local host', async () => {
    const { result, markers: written } = await runTagged({});
    expect(result.code, describeRun(result)).toBe(0);
    expect(written).toEqual(['one-alpha', 'one-beta', 'two-alpha', 'two-beta']);
    expect(result.recap).toEqual({
      one: { ok: 2, changed: 2, unreachable: 0, failed: 0, skipped: 0, rescued: 0, ignored: 0 },
      two: { ok: 2, changed: 2, unreachable: 0, failed: 0, skipped: 0, rescued: 0, ignored: 0 },
    });
  });

  it('passes --tags, --limit and --check through', async () => {
    expect((await runTagged({ tags: 'beta' })).markers).toEqual(['one-beta', 'two-beta']);
    expect((await runTagged({ limit: 'two' })).markers).toEqual(['two-alpha', 'two-beta']);
    const checked = await runTagged({ check: true });
    expect(checked.result.code, describeRun(checked.result)).toBe(0);
    expect(checked.markers).toEqual([]);
    expect(checked.result.recap.one?.changed).toBe(2);
  });

  it('exits non-zero when --limit matches no host', async () => {
    const { result, markers: written } = await runTagged({ limit: 'nosuchhost' });
    expect(result.code).not.toBe(0);
    expect(written).toEqual([]);
  });

  it('skips local hosts in the onboarding playbook', async () => {
    // Check mode as a safety net: were the skip broken, nothing would still be changed on this machine.
    const result = await runPlaybook(
      baseRun({
        playbook: ONBOARD_PLAYBOOK,
        inventoryPath: await inventory({ control: { ansible_connection: 'local' } }),
        knownHostsFile: knownHosts,
        check: true,
        extraVars: { exocomp_fleet_pubkey: fleet.publicKey, exocomp_onboard_user: 'exoprobe' },
      }),
    );
    expect(result.code, describeRun(result)).toBe(0);
    // An ended host may not appear in the recap at all.
    expect(result.recap.control ?? { changed: 0, failed: 0 }).toMatchObject({ changed: 0, failed: 0 });
    expect(result.stdout).not.toContain(`TASK [${ONBOARD_SCRIPT_TASK}`);
  });

  it('redacts secrets in output, the tail and streamed lines', async () => {
    const secret = 'hunter2-very-secret';
    const lines: string[] = [];
    const secretPlay = await writeTestFile(
      'secret.yml',
      "- hosts: one\n  gather_facts: false\n  tasks:\n    - ansible.builtin.debug: {msg: \"the value is {{ lookup('env', 'APP_SECRET') }}\"}\n",
    );
    const result = await runPlaybook(
      baseRun({
        playbook: secretPlay,
        inventoryPath,
        knownHostsFile: knownHosts,
        env: runEnv({ APP_SECRET: secret }),
        secrets: [secret],
        onOutput: (line) => lines.push(line),
      }),
    );
    expect(result.code, describeRun(result)).toBe(0);
    expect(result.stdout).toContain('the value is ***');
    expect(lines.join('\n')).toContain('the value is ***');
    for (const text of [result.stdout, result.stderr, result.tail, lines.join('\n')])
      expect(text).not.toContain(secret);
  });

  it('says ansible-playbook is missing, with what to install', async () => {
    const run = baseRun({
      playbook,
      inventoryPath,
      knownHostsFile: knownHosts,
      env: { ...runEnv(), PATH: '/nonexistent' },
    });
    const failure = await runPlaybook(run).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(ExocompError);
    expect(failure).toMatchObject({ kind: 'tool-missing', help: expect.stringContaining('ansible-core') });
  });
});

describe('parseRecap', () => {
  it('reads every host line of the last PLAY RECAP', () => {
    const stdout = [
      'PLAY [all] *****',
      'TASK [x] ****',
      'ok: [web-1]',
      '',
      'PLAY RECAP *********************************************************************',
      'web-1                      : ok=3    changed=1    unreachable=0    failed=0    skipped=2    rescued=0    ignored=1   ',
      '[db]:2222                  : ok=0    changed=0    unreachable=1    failed=0    skipped=0    rescued=0    ignored=0   ',
      '',
    ].join('\n');
    expect(parseRecap(stdout)).toEqual({
      'web-1': { ok: 3, changed: 1, unreachable: 0, failed: 0, skipped: 2, rescued: 0, ignored: 1 },
      '[db]:2222': { ok: 0, changed: 0, unreachable: 1, failed: 0, skipped: 0, rescued: 0, ignored: 0 },
    });
    expect(parseRecap('ERROR! the playbook could not be found')).toEqual({});
  });
});
