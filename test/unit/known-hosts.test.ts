import { spawn, type ChildProcess } from 'node:child_process';
import { chown, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProcess } from '../../src/adapters/process.js';
import { knownHostsName } from '../../src/domain/inventory.js';
import {
  parseKeyscanOutput,
  parseKnownHosts,
  reconcilePins,
  renderKnownHosts,
  type Pin,
  type ReconcileInput,
} from '../../src/domain/known-hosts.js';
import { thrown } from '../support/errors.js';
import { scaled } from '../support/time.js';

const STORE_HELP =
  'the pinned store holds unhashed `name keytype key` lines only; fix or remove the line (the ledger branch history has earlier versions)';

let dir: string;
/** Real public keys from ssh-keygen: [keyType, base64] by label. */
const keys: Record<'ed1' | 'ed2' | 'ec1' | 'ec2' | 'rsa1', { keyType: string; key: string }> = {} as never;

async function generateKey(label: keyof typeof keys, type: string): Promise<void> {
  const file = join(dir, label);
  const result = await runProcess('ssh-keygen', ['-q', '-t', type, '-N', '', '-C', `comment for ${label}`, '-f', file]);
  expect(result.code).toBe(0);
  const [keyType = '', key = ''] = (await readFile(`${file}.pub`, 'utf8')).trim().split(' ');
  keys[label] = { keyType, key };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'exocomp-known-hosts-'));
  await Promise.all([
    generateKey('ed1', 'ed25519'),
    generateKey('ed2', 'ed25519'),
    generateKey('ec1', 'ecdsa'),
    generateKey('ec2', 'ecdsa'),
    generateKey('rsa1', 'rsa'),
  ]);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const pin = (name: string, label: keyof typeof keys): Pin => ({ name, ...keys[label] });
const line = (name: string, label: keyof typeof keys): string => `${name} ${keys[label].keyType} ${keys[label].key}`;

describe('parseKnownHosts', () => {
  it('reads pins, skipping blank and comment lines, sorted by name then key type', () => {
    const text = [
      '# pinned by exocomp',
      '',
      `${line('web1.example.com', 'ed1')} root@web1`,
      '   ',
      line('[10.0.0.5]:2222', 'ec1'),
      `  ${line('10.0.0.4', 'rsa1')}  `,
      line('10.0.0.4', 'ed2'),
      '\t# indented comment',
    ].join('\r\n');
    expect(parseKnownHosts(text)).toEqual([
      pin('10.0.0.4', 'ed2'),
      pin('10.0.0.4', 'rsa1'),
      pin('[10.0.0.5]:2222', 'ec1'),
      pin('web1.example.com', 'ed1'),
    ]);
  });

  it('reads an empty store', () => {
    expect(parseKnownHosts('')).toEqual([]);
    expect(parseKnownHosts('\n# nothing yet\n')).toEqual([]);
  });

  it('reads IPv6 names, plain and bracketed', () => {
    expect(parseKnownHosts(`${line('2001:db8::1', 'ed1')}\n${line('[2001:db8::1]:2222', 'ed1')}\n`)).toEqual([
      pin('2001:db8::1', 'ed1'),
      pin('[2001:db8::1]:2222', 'ed1'),
    ]);
  });

  it.each<[string, () => string, string]>([
    [
      'a hashed entry',
      () => `|1|F1E1KeoE/eEWhi10WpGv4OdiO6Y=|3988QV0VE8wmZL7suNrYQLITLCg= ${keys.ed1.keyType} ${keys.ed1.key}`,
      'known_hosts line 2: hashed host names (|1|…) are not kept in the pinned store; it must stay unhashed',
    ],
    [
      'a @cert-authority line for a pattern',
      () => `@cert-authority *.example.com ${keys.ed1.keyType} ${keys.ed1.key}`,
      'known_hosts line 2: "*.example.com" is not an exact host name (patterns, lists and markers are not pins)',
    ],
    [
      'a @cert-authority line for a list',
      () => `@cert-authority h,10.0.0.1 ${keys.ed1.keyType} ${keys.ed1.key}`,
      'known_hosts line 2: "h,10.0.0.1" is not an exact host name (patterns, lists and markers are not pins)',
    ],
    [
      'a @cert-authority line without a key',
      () => `@cert-authority h ${keys.ed1.keyType}`,
      'known_hosts line 2: expected `@cert-authority name keytype key`',
    ],
    [
      'a marker glued to @cert-authority',
      () => `@cert-authorityx h ${keys.ed1.keyType} ${keys.ed1.key}`,
      'known_hosts line 2: markers such as @revoked are not pins (only @cert-authority for one exact name is kept)',
    ],
    [
      'a @revoked marker',
      () => `@revoked h ${keys.ed1.keyType} ${keys.ed1.key}`,
      'known_hosts line 2: markers such as @revoked are not pins (only @cert-authority for one exact name is kept)',
    ],
    ['a line without a key', () => `h ${keys.ed1.keyType}`, 'known_hosts line 2: expected `name keytype key`'],
    ['a name alone', () => 'h', 'known_hosts line 2: expected `name keytype key`'],
    [
      'a wildcard pattern',
      () => line('*.example.com', 'ed1'),
      'known_hosts line 2: "*.example.com" is not an exact host name (patterns, lists and markers are not pins)',
    ],
    [
      'a negated pattern',
      () => line('!h', 'ed1'),
      'known_hosts line 2: "!h" is not an exact host name (patterns, lists and markers are not pins)',
    ],
    [
      'a name list',
      () => line('h,10.0.0.1', 'ed1'),
      'known_hosts line 2: "h,10.0.0.1" is not an exact host name (patterns, lists and markers are not pins)',
    ],
    [
      'a bracketed name on port 22',
      () => line('[h]:22', 'ed1'),
      'known_hosts line 2: "[h]:22" has port 22 (1-65535, and port 22 is written without brackets)',
    ],
    [
      'a bracketed name on port 0',
      () => line('[h]:0', 'ed1'),
      'known_hosts line 2: "[h]:0" has port 0 (1-65535, and port 22 is written without brackets)',
    ],
    [
      'a bracketed name on port 70000',
      () => line('[h]:70000', 'ed1'),
      'known_hosts line 2: "[h]:70000" has port 70000 (1-65535, and port 22 is written without brackets)',
    ],
    ['a bracketed pattern', () => line('[h*]:2222', 'ed1'), 'known_hosts line 2: "[h*]:2222" does not name a host'],
    [
      'a bracketed name without a port',
      () => line('[h]', 'ed1'),
      'known_hosts line 2: "[h]" is not an exact host name (patterns, lists and markers are not pins)',
    ],
    [
      'an upper-case key type',
      () => `h SSH-ED25519 ${keys.ed1.key}`,
      'known_hosts line 2: key type "SSH-ED25519" is not a key type',
    ],
    [
      'a key that is not base64',
      () => `h ${keys.ed1.keyType} not*base64`,
      'known_hosts line 2: the ssh-ed25519 key is not base64',
    ],
    [
      'a truncated key',
      () => `h ${keys.ed1.keyType} ${keys.ed1.key.slice(0, -1)}`,
      'known_hosts line 2: the ssh-ed25519 key is not base64',
    ],
    [
      'a key cut short of its type',
      () => `h ${keys.ed1.keyType} AAAAC3Nz`,
      'known_hosts line 2: the key blob is not a ssh-ed25519 key',
    ],
    [
      'a key of another type',
      () => `h ssh-rsa ${keys.ed1.key}`,
      'known_hosts line 2: the key blob is not a ssh-rsa key',
    ],
    [
      'a second key of one type for one name',
      () => `${line('h', 'ed1')}\n${line('h', 'ed2')}`,
      'known_hosts line 3: a second ssh-ed25519 key for "h"',
    ],
    [
      'the same line twice',
      () => `${line('h', 'ed1')}\n${line('h', 'ed1')}`,
      'known_hosts line 3: a second ssh-ed25519 key for "h"',
    ],
  ])('refuses %s', (_label, text, message) => {
    const error = thrown(() => parseKnownHosts(`# header\n${text()}\n`));
    expect(error.kind).toBe('host-key');
    expect(error.message).toBe(message);
    expect(error.help).toBe(STORE_HELP);
  });
});

describe('renderKnownHosts', () => {
  it('writes one sorted line per pin, and reads back what it wrote', () => {
    const pins = [pin('web1', 'ed1'), pin('[10.0.0.5]:2222', 'ec1'), pin('10.0.0.4', 'ed2'), pin('10.0.0.4', 'rsa1')];
    const text = renderKnownHosts(pins);
    expect(text).toBe(
      `${line('10.0.0.4', 'ed2')}\n${line('10.0.0.4', 'rsa1')}\n${line('[10.0.0.5]:2222', 'ec1')}\n${line('web1', 'ed1')}\n`,
    );
    expect(renderKnownHosts(parseKnownHosts(text))).toBe(text);
  });

  it('writes nothing for no pins', () => {
    expect(renderKnownHosts([])).toBe('');
  });

  it.each<[string, () => Pin[], string]>([
    [
      'a name with a space',
      () => [{ ...pin('a', 'ed1'), name: 'a b' }],
      'refusing to write a pin: "a b" is not an exact host name (patterns, lists and markers are not pins)',
    ],
    [
      'a hashed name',
      () => [{ ...pin('a', 'ed1'), name: '|1|abc' }],
      'refusing to write a pin: "|1|abc" is not an exact host name (patterns, lists and markers are not pins)',
    ],
    [
      'a key with a newline',
      () => [{ ...pin('a', 'ed1'), key: `${keys.ed1.key}\nevil ssh-rsa AAAA` }],
      'refusing to write a pin: the ssh-ed25519 key is not base64',
    ],
    [
      'a key type with a space',
      () => [{ ...pin('a', 'ed1'), keyType: 'ssh-ed25519 x' }],
      'refusing to write a pin: key type "ssh-ed25519 x" is not a key type',
    ],
    [
      'two keys of one type for one name',
      () => [pin('a', 'ed1'), pin('a', 'ed2')],
      'refusing to write two ssh-ed25519 pins for "a"',
    ],
  ])('refuses %s', (_label, pins, message) => {
    const error = thrown(() => renderKnownHosts(pins()));
    expect(error.kind).toBe('internal');
    expect(error.message).toBe(message);
  });

  it('writes a store OpenSSH looks names up in (ssh-keygen -F)', async () => {
    const store = join(dir, 'pinned_known_hosts');
    await writeFile(
      store,
      renderKnownHosts([
        pin('[127.0.0.1]:2222', 'ed1'),
        pin('web1.example.com', 'ec1'),
        pin('web1.example.com', 'ed2'),
      ]),
    );
    const found = await runProcess('ssh-keygen', ['-F', '[127.0.0.1]:2222', '-f', store]);
    expect(found.code).toBe(0);
    expect(found.stdout).toContain(line('[127.0.0.1]:2222', 'ed1'));
    const byName = await runProcess('ssh-keygen', ['-F', 'web1.example.com', '-f', store]);
    expect(byName.code).toBe(0);
    expect(byName.stdout).toContain(line('web1.example.com', 'ec1'));
    expect(byName.stdout).toContain(line('web1.example.com', 'ed2'));
    const missing = await runProcess('ssh-keygen', ['-F', '127.0.0.1', '-f', store]);
    expect(missing.code).toBe(1);
  });
});

describe('parseKeyscanOutput', () => {
  it('keeps the lines for the asked name, skipping comments and other names', () => {
    const text = [
      '# 10.0.0.4:22 SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u10',
      line('10.0.0.4', 'ed1'),
      line('10.0.0.5', 'ed2'),
      '# 10.0.0.4:22 SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u10',
      line('10.0.0.4', 'ec1'),
      line('[10.0.0.4]:2222', 'rsa1'),
      '',
    ].join('\n');
    expect(parseKeyscanOutput(text, '10.0.0.4')).toEqual([pin('10.0.0.4', 'ec1'), pin('10.0.0.4', 'ed1')]);
    expect(parseKeyscanOutput(text, '[10.0.0.4]:2222')).toEqual([pin('[10.0.0.4]:2222', 'rsa1')]);
    expect(parseKeyscanOutput(text, '10.0.0.9')).toEqual([]);
  });

  it('compares names case-insensitively and returns the asked name', () => {
    expect(parseKeyscanOutput(line('Web1.Example.com', 'ed1'), 'web1.example.com')).toEqual([
      pin('web1.example.com', 'ed1'),
    ]);
  });

  it('keeps one pin for a key printed twice', () => {
    expect(parseKeyscanOutput(`${line('h', 'ed1')}\n${line('h', 'ed1')}\n`, 'h')).toEqual([pin('h', 'ed1')]);
  });

  it('reads nothing from empty output', () => {
    expect(parseKeyscanOutput('', 'h')).toEqual([]);
  });

  it('refuses two different keys of one type', () => {
    const error = thrown(() => parseKeyscanOutput(`${line('h', 'ed1')}\n${line('h', 'ed2')}\n`, 'h'));
    expect(error.kind).toBe('host-key');
    expect(error.message).toBe('ssh-keyscan returned two different ssh-ed25519 keys for "h"');
    expect(error.help).toContain('check the network path before pinning');
  });

  it.each<[string, () => string, string]>([
    ['a line without a key', () => `h ${keys.ed1.keyType}`, 'expected `name keytype key`'],
    ['a key of another type', () => `h ssh-rsa ${keys.ed1.key}`, 'the key blob is not a ssh-rsa key'],
    ['a key that is not base64', () => `h ssh-ed25519 %%%`, 'the ssh-ed25519 key is not base64'],
  ])('refuses %s for the asked name', (_label, text, problem) => {
    const error = thrown(() => parseKeyscanOutput(text(), 'h'));
    expect(error.kind).toBe('host-key');
    expect(error.message).toBe(`ssh-keyscan printed an unreadable line for "h": ${problem}`);
    expect(error.help).toBe('scan the host by hand with ssh-keyscan to see what it presents');
  });

  it('ignores unreadable lines for other names', () => {
    expect(parseKeyscanOutput('other ssh-ed25519 %%%', 'h')).toEqual([]);
  });
});

describe('parseKeyscanOutput reads real ssh-keyscan output', () => {
  let sshd: ChildProcess | undefined;
  let port = 0;
  let hostDir: string;

  async function freePort(): Promise<number> {
    return new Promise((resolve, reject) => {
      const server = createServer();
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        const address = server.address();
        server.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
      });
    });
  }

  beforeAll(async () => {
    hostDir = await mkdtemp(join(tmpdir(), 'exocomp-sshd-'));
    for (const type of ['ed25519', 'ecdsa']) {
      const made = await runProcess('ssh-keygen', ['-q', '-t', type, '-N', '', '-f', join(hostDir, `host_${type}`)]);
      expect(made.code).toBe(0);
    }
    port = await freePort();
    await writeFile(
      join(hostDir, 'sshd_config'),
      [
        `ListenAddress 127.0.0.1:${port}`,
        `HostKey ${join(hostDir, 'host_ed25519')}`,
        `HostKey ${join(hostDir, 'host_ecdsa')}`,
        'PidFile none',
        'UsePAM no',
        '',
      ].join('\n'),
    );
    // sshd run as root needs /run/sshd; as nobody it needs nothing outside its own directory.
    for (const file of ['', 'host_ed25519', 'host_ed25519.pub', 'host_ecdsa', 'host_ecdsa.pub', 'sshd_config']) {
      await chown(join(hostDir, file), 65534, 65534);
    }
    const child = spawn(
      'setpriv',
      [
        '--reuid=65534',
        '--regid=65534',
        '--clear-groups',
        '/usr/sbin/sshd',
        '-D',
        '-e',
        '-f',
        join(hostDir, 'sshd_config'),
      ],
      {
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    sshd = child;
    await new Promise<void>((resolve, reject) => {
      let log = '';
      child.stderr?.on('data', (chunk: Buffer) => {
        log += chunk.toString('utf8');
        if (log.includes('Server listening')) resolve();
      });
      child.once('exit', (code) => reject(new Error(`sshd exited with ${code}: ${log}`)));
    });
  });

  afterAll(async () => {
    if (sshd !== undefined && sshd.exitCode === null) {
      const exited = new Promise((resolve) => sshd?.once('exit', resolve));
      sshd.kill('SIGTERM');
      await exited;
    }
    await rm(hostDir, { recursive: true, force: true });
  });

  it('pins the keys a real sshd on a non-standard port presents', async () => {
    const name = knownHostsName('127.0.0.1', port);
    expect(name).toBe(`[127.0.0.1]:${port}`);
    const scan = await runProcess('ssh-keyscan', ['-T', '5', '-p', String(port), '127.0.0.1'], {
      timeoutMs: scaled(30_000),
    });
    expect(scan.code).toBe(0);
    expect(scan.stderr).toContain(`# 127.0.0.1:${port} SSH-2.0-OpenSSH`);
    const pins = parseKeyscanOutput(`${scan.stdout}\n${scan.stderr}`, name);
    const expected = await Promise.all(
      ['host_ecdsa.pub', 'host_ed25519.pub'].map(async (file) => {
        const [keyType = '', key = ''] = (await readFile(join(hostDir, file), 'utf8')).trim().split(' ');
        return { name, keyType, key };
      }),
    );
    expect(pins).toEqual(expected);
    // The pins round-trip through the store and OpenSSH finds them under that name.
    const store = join(hostDir, 'known_hosts');
    await writeFile(store, renderKnownHosts(pins));
    const found = await runProcess('ssh-keygen', ['-F', name, '-f', store]);
    expect(found.code).toBe(0);
    expect(found.stdout.split('\n').filter((entry) => entry.startsWith(name))).toHaveLength(2);
  });
});

describe('reconcilePins', () => {
  const reconcile = (input: Partial<ReconcileInput> & Pick<ReconcileInput, 'current'>) =>
    reconcilePins({ scanned: new Map(), rotate: new Set(), ...input });

  it('pins every scanned key of a name never pinned (trust on first use)', () => {
    const result = reconcile({ current: [], scanned: new Map([['h', [pin('h', 'ed1'), pin('h', 'ec1')]]]) });
    expect(result).toEqual({
      next: [pin('h', 'ec1'), pin('h', 'ed1')],
      added: ['h'],
      unchanged: [],
      rotated: [],
      retired: [],
      changed: [],
    });
  });

  it('keeps the pins of a name whose scan matches them', () => {
    const current = [pin('h', 'ec1'), pin('h', 'ed1')];
    const result = reconcile({ current, scanned: new Map([['h', [pin('h', 'ed1'), pin('h', 'ec1')]]]) });
    expect(result).toEqual({ next: current, added: [], unchanged: ['h'], rotated: [], retired: [], changed: [] });
  });

  it('keeps the pins as they are when the scan shows a new key type: nothing is added silently', () => {
    const current = [pin('h', 'ed1')];
    const result = reconcile({ current, scanned: new Map([['h', [pin('h', 'ed1'), pin('h', 'ec1')]]]) });
    expect(result.next).toEqual(current);
    expect(result.unchanged).toEqual(['h']);
  });

  it('keeps a pinned key type the scan no longer shows', () => {
    const current = [pin('h', 'ec1'), pin('h', 'ed1')];
    const result = reconcile({ current, scanned: new Map([['h', [pin('h', 'ed1')]]]) });
    expect(result.next).toEqual(current);
    expect(result.unchanged).toEqual(['h']);
  });

  it('reports a name whose keys all changed, and does not re-pin it', () => {
    const current = [pin('h', 'ed1')];
    const result = reconcile({ current, scanned: new Map([['h', [pin('h', 'ed2')]]]) });
    expect(result).toEqual({
      next: current,
      added: [],
      unchanged: [],
      rotated: [],
      retired: [],
      changed: [{ name: 'h', expected: [pin('h', 'ed1')], got: [pin('h', 'ed2')] }],
    });
  });

  it('reports a name whose scan shares no key with its pins, even of other types', () => {
    const result = reconcile({ current: [pin('h', 'ed1')], scanned: new Map([['h', [pin('h', 'ec1')]]]) });
    expect(result.changed).toEqual([{ name: 'h', expected: [pin('h', 'ed1')], got: [pin('h', 'ec1')] }]);
    expect(result.next).toEqual([pin('h', 'ed1')]);
  });

  it('reports a changed key of one type even when another type still matches', () => {
    const current = [pin('h', 'ec1'), pin('h', 'ed1')];
    const result = reconcile({ current, scanned: new Map([['h', [pin('h', 'ec1'), pin('h', 'ed2')]]]) });
    expect(result.unchanged).toEqual([]);
    expect(result.changed).toEqual([{ name: 'h', expected: current, got: [pin('h', 'ec1'), pin('h', 'ed2')] }]);
    expect(result.next).toEqual(current);
  });

  it('replaces the pins of a changed name that rotation was asked for', () => {
    const result = reconcile({
      current: [pin('h', 'ed1'), pin('other', 'ec1')],
      scanned: new Map([['h', [pin('h', 'ed2'), pin('h', 'ec2')]]]),
      rotate: new Set(['h']),
    });
    expect(result).toEqual({
      next: [pin('h', 'ec2'), pin('h', 'ed2'), pin('other', 'ec1')],
      added: [],
      unchanged: [],
      rotated: ['h'],
      retired: [],
      changed: [],
    });
  });

  it('accepts a new key type only through rotation', () => {
    const result = reconcile({
      current: [pin('h', 'ed1')],
      scanned: new Map([['h', [pin('h', 'ed1'), pin('h', 'ec1')]]]),
      rotate: new Set(['h']),
    });
    expect(result.rotated).toEqual(['h']);
    expect(result.next).toEqual([pin('h', 'ec1'), pin('h', 'ed1')]);
  });

  it('leaves an unchanged name unchanged when rotation was asked for it', () => {
    const current = [pin('h', 'ed1')];
    const result = reconcile({ current, scanned: new Map([['h', [pin('h', 'ed1')]]]), rotate: new Set(['h']) });
    expect(result.unchanged).toEqual(['h']);
    expect(result.rotated).toEqual([]);
    expect(result.next).toEqual(current);
  });

  it('pins a new name normally when rotation was asked for it', () => {
    const result = reconcile({ current: [], scanned: new Map([['h', [pin('h', 'ed1')]]]), rotate: new Set(['h']) });
    expect(result.added).toEqual(['h']);
    expect(result.rotated).toEqual([]);
  });

  it('rotates only the names asked for', () => {
    const result = reconcile({
      current: [pin('a', 'ed1'), pin('b', 'ed1')],
      scanned: new Map([
        ['a', [pin('a', 'ed2')]],
        ['b', [pin('b', 'ed2')]],
      ]),
      rotate: new Set(['b']),
    });
    expect(result.rotated).toEqual(['b']);
    expect(result.changed.map((change) => change.name)).toEqual(['a']);
    expect(result.next).toEqual([pin('a', 'ed1'), pin('b', 'ed2')]);
  });

  it('retires pins of names the inventory no longer has, keeping the rest', () => {
    const result = reconcile({
      current: [pin('gone', 'ed1'), pin('kept', 'ed1'), pin('[gone2]:2222', 'ec1')],
      scanned: new Map([['kept', [pin('kept', 'ed1')]]]),
      inventoryNames: new Set(['kept']),
    });
    expect(result).toEqual({
      next: [pin('kept', 'ed1')],
      added: [],
      unchanged: ['kept'],
      rotated: [],
      retired: ['[gone2]:2222', 'gone'],
      changed: [],
    });
  });

  it('pins a recycled address fresh once its old pin was retired', () => {
    const first = reconcile({ current: [pin('10.0.0.4', 'ed1')], inventoryNames: new Set() });
    expect(first.retired).toEqual(['10.0.0.4']);
    const second = reconcile({ current: first.next, scanned: new Map([['10.0.0.4', [pin('10.0.0.4', 'ed2')]]]) });
    expect(second.added).toEqual(['10.0.0.4']);
    expect(second.next).toEqual([pin('10.0.0.4', 'ed2')]);
  });

  it('keeps pins of names it neither scanned nor was told to retire', () => {
    const current = [pin('a', 'ed1'), pin('b', 'ec1')];
    const result = reconcile({ current, scanned: new Map([['c', [pin('c', 'ed2')]]]) });
    expect(result.next).toEqual([pin('a', 'ed1'), pin('b', 'ec1'), pin('c', 'ed2')]);
    expect(result.retired).toEqual([]);
  });

  it('does not retire a name scanned now, even if the inventory lacks it', () => {
    const result = reconcile({
      current: [pin('h', 'ed1')],
      scanned: new Map([['h', [pin('h', 'ed1')]]]),
      inventoryNames: new Set(),
    });
    expect(result.retired).toEqual([]);
    expect(result.unchanged).toEqual(['h']);
  });

  it('still reports changes for hosts in the inventory while retiring others', () => {
    const result = reconcile({
      current: [pin('a', 'ed1'), pin('b', 'ed1')],
      scanned: new Map([['a', [pin('a', 'ed2')]]]),
      inventoryNames: new Set(['a']),
    });
    expect(result.changed.map((change) => change.name)).toEqual(['a']);
    expect(result.retired).toEqual(['b']);
    expect(result.next).toEqual([pin('a', 'ed1')]);
  });

  it('orders every list by name, whatever the input order', () => {
    const scanned = new Map<string, Pin[]>([
      ['n2', [pin('n2', 'ed1')]],
      ['n1', [pin('n1', 'ed1')]],
      ['u2', [pin('u2', 'ed1')]],
      ['u1', [pin('u1', 'ed1')]],
      ['c2', [pin('c2', 'ed2')]],
      ['c1', [pin('c1', 'ed2')]],
      ['r2', [pin('r2', 'ed2')]],
      ['r1', [pin('r1', 'ed2')]],
    ]);
    const current = ['u2', 'c2', 'r2', 'x2', 'u1', 'c1', 'r1', 'x1'].map((name) => pin(name, 'ed1'));
    const result = reconcile({
      current,
      scanned,
      rotate: new Set(['r2', 'r1']),
      inventoryNames: new Set(['n1', 'n2', 'u1', 'u2', 'c1', 'c2', 'r1', 'r2']),
    });
    expect(result.added).toEqual(['n1', 'n2']);
    expect(result.unchanged).toEqual(['u1', 'u2']);
    expect(result.rotated).toEqual(['r1', 'r2']);
    expect(result.retired).toEqual(['x1', 'x2']);
    expect(result.changed.map((change) => change.name)).toEqual(['c1', 'c2']);
    expect(result.next.map((p) => p.name)).toEqual(['c1', 'c2', 'n1', 'n2', 'r1', 'r2', 'u1', 'u2']);
  });

  it('does not change its inputs', () => {
    const current = [pin('h', 'ed1')];
    const scannedPins = [pin('h', 'ed2')];
    reconcile({ current, scanned: new Map([['h', scannedPins]]), rotate: new Set(['h']) });
    expect(current).toEqual([pin('h', 'ed1')]);
    expect(scannedPins).toEqual([pin('h', 'ed2')]);
  });

  it('refuses a name scanned with no keys', () => {
    const error = thrown(() => reconcile({ current: [], scanned: new Map([['h', []]]) }));
    expect(error.kind).toBe('host-key');
    expect(error.message).toBe('no host key was scanned for "h"');
    expect(error.help).toContain('check that sshd is running');
  });

  it('refuses scanned keys filed under another name', () => {
    const error = thrown(() => reconcile({ current: [], scanned: new Map([['h', [pin('other', 'ed1')]]]) }));
    expect(error.kind).toBe('internal');
    expect(error.message).toBe('a key scanned for "h" is named "other"');
  });
});
