import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProcess } from '../../src/adapters/process.js';
import {
  certificateProblem,
  fingerprint,
  hostTrustOf,
  parseHostCa,
  parseHostKeys,
  underHostKeyMode,
  type PublicKey,
} from '../../src/domain/host-trust.js';
import { deriveHosts, parseInventory } from '../../src/domain/inventory.js';
import {
  judgeFirstContact,
  parseKnownHosts,
  reconcilePins,
  renderKnownHosts,
  type Pin,
} from '../../src/domain/known-hosts.js';
import { readGitLabSettings } from '../../src/platform/gitlab/session.js';
import { parseJobSettings } from '../../src/app/job/job-settings.js';
import { thrown } from '../support/errors.js';

let dir: string;
type Label = 'host' | 'other' | 'rsa' | 'ca' | 'otherCa';
/** Real keys from ssh-keygen: the public line and the file, by label. */
const keys = {} as Record<Label, PublicKey & { line: string; file: string }>;
/** Certificates signed by ssh-keygen -s, by label. */
const certs = {} as Record<'host' | 'otherCa' | 'user' | 'wrongName' | 'expired' | 'anyName', PublicKey>;

async function keygen(args: string[]): Promise<void> {
  const result = await runProcess('ssh-keygen', args);
  expect(result.code, result.stderr).toBe(0);
}

async function publicKey(file: string): Promise<PublicKey & { line: string }> {
  const line = (await readFile(file, 'utf8')).trim();
  const [keyType = '', key = ''] = line.split(' ');
  return { keyType, key, line };
}

/** Signs `host`'s key with `ca` (ssh-keygen -s) into a copy named `label`; returns the certificate. */
async function sign(label: string, ca: Label, extra: string[]): Promise<PublicKey> {
  const copy = join(dir, `${label}.pub`);
  await writeFile(copy, `${keys.host.line}\n`);
  await keygen(['-q', '-s', keys[ca].file, '-I', label, ...extra, copy]);
  return publicKey(join(dir, `${label}-cert.pub`));
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'exocomp-host-trust-'));
  const types: Record<Label, string> = {
    host: 'ed25519',
    other: 'ed25519',
    rsa: 'rsa',
    ca: 'ed25519',
    otherCa: 'ed25519',
  };
  await Promise.all(
    (Object.keys(types) as Label[]).map(async (label) => {
      const file = join(dir, label);
      await keygen(['-q', '-t', types[label], '-N', '', '-C', `${label}@test`, '-f', file]);
      keys[label] = { ...(await publicKey(`${file}.pub`)), file };
    }),
  );
  certs.host = await sign('host', 'ca', ['-h', '-n', '10.0.0.5']);
  certs.anyName = await sign('any', 'ca', ['-h']);
  certs.otherCa = await sign('other-ca', 'otherCa', ['-h', '-n', '10.0.0.5']);
  certs.user = await sign('user', 'ca', ['-n', '10.0.0.5']);
  certs.wrongName = await sign('wrong-name', 'ca', ['-h', '-n', '10.0.0.6']);
  certs.expired = await sign('expired', 'ca', ['-h', '-n', '10.0.0.5', '-V', '20200101:20200102']);
}, 60_000);

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const plain = (label: Label): PublicKey => ({ keyType: keys[label].keyType, key: keys[label].key });
const now = () => Date.now() / 1000;

describe('exocomp_host_keys', () => {
  it("reads the tls provider's public_key_openssh (one line and a newline), a list, and .pub lines with comments", () => {
    expect(parseHostKeys('web1', `${keys.host.keyType} ${keys.host.key}\n`)).toEqual([plain('host')]);
    expect(parseHostKeys('web1', [keys.host.line, keys.rsa.line])).toEqual([plain('host'), plain('rsa')]);
    expect(parseHostKeys('web1', `${keys.host.line}\r\n${keys.rsa.line}\r\n`)).toEqual([plain('host'), plain('rsa')]);
  });

  it.each<[string, () => unknown, string]>([
    ['a number', () => 5, 'must be a string or a list of strings'],
    ['a mapping', () => ({ key: 'x' }), 'must be a string or a list of strings'],
    ['nothing', () => '\n', 'gives no key'],
    ['garbage', () => 'not a key', 'line 1: the not key is not base64'],
    ['a blob of another type', () => `ssh-rsa ${keys.host.key}`, 'line 1: the key blob is not a ssh-rsa key'],
    ['a certificate', () => certs.host.keyType + ' ' + certs.host.key, 'is a certificate, not a host key'],
    ['ssh options on a line', () => `-o ProxyCommand=sh ${keys.host.key}`, 'is not a key type'],
    ['an option line after the key', () => `${keys.host.line}\n-oProxyCommand=x y`, 'line 2:'],
    ['a template', () => `{{ lookup('pipe','id') }}`, 'line 1:'],
    ['a % token', () => `ssh-ed25519 %h`, 'line 1: the ssh-ed25519 key is not base64'],
    ['a control character in the comment', () => `${keys.host.line} \u001b[31m`, 'printable ASCII'],
    ['two keys of one type', () => [keys.host.line, keys.other.line], 'gives two ssh-ed25519 keys'],
  ])('refuses %s, naming the host and the variable', (_what, value, problem) => {
    const error = thrown(() => parseHostKeys('web1', value()));
    expect(error.message).toContain('host "web1": exocomp_host_keys');
    expect(error.message).toContain(problem);
    expect(error.help).toContain('exocomp_host_keys');
  });
});

describe('exocomp_host_ca', () => {
  it('reads one public key line', () => {
    expect(parseHostCa('web1', keys.ca.line)).toEqual(plain('ca'));
  });

  it.each<[string, () => unknown]>([
    ['a list', () => [keys.ca.line]],
    ['two lines', () => `${keys.ca.line}\n${keys.otherCa.line}`],
    ['a certificate', () => `${certs.host.keyType} ${certs.host.key}`],
    ['an ssh option', () => `-oProxyCommand=x ${keys.ca.key}`],
  ])('refuses %s, naming the host and the variable', (_what, value) => {
    expect(thrown(() => parseHostCa('web1', value())).message).toMatch(/^host "web1": exocomp_host_ca /);
  });

  it('a host given both known keys and a CA is refused', () => {
    const vars = new Map<string, unknown>([
      ['exocomp_host_keys', keys.host.line],
      ['exocomp_host_ca', keys.ca.line],
    ]);
    expect(thrown(() => hostTrustOf('web1', vars)).message).toContain('are both set');
  });

  it('is read from a group var, also for a host behind a bastion (its certificate is captured through the jump)', () => {
    const inventory = parseInventory({
      all: {
        vars: { exocomp_host_ca: keys.ca.line },
        hosts: { web1: { ansible_host: '10.0.0.5' }, jump: { ansible_host: '10.0.0.1' } },
      },
    });
    expect(deriveHosts(inventory).map((h) => h.trust)).toEqual([
      { kind: 'ca', ca: plain('ca') },
      { kind: 'ca', ca: plain('ca') },
    ]);
    const behind = parseInventory({
      all: {
        vars: { exocomp_host_ca: keys.ca.line },
        hosts: { web1: { ansible_host: '10.0.0.5', exocomp_bastion: 'jump' }, jump: { ansible_host: '10.0.0.1' } },
      },
    });
    expect(deriveHosts(behind).find((h) => h.name === 'web1')).toMatchObject({
      trust: { kind: 'ca', ca: plain('ca') },
      via: [{ name: 'jump', address: '10.0.0.1', port: 22 }],
    });
  });
});

describe('the host-keys mode', () => {
  const hosts = () => [
    { name: 'known', local: false, trust: { kind: 'keys' as const, keys: [plain('host')] } },
    { name: 'certified', local: false, trust: { kind: 'ca' as const, ca: plain('ca') } },
    { name: 'web2', local: false },
    { name: 'web3', local: false },
    { name: 'runner', local: true },
  ];

  it('auto keeps what the workspace gives; tofu drops it all', () => {
    expect(underHostKeyMode(hosts(), 'auto')).toEqual(hosts());
    expect(underHostKeyMode(hosts(), 'tofu').every((h) => !('trust' in h))).toBe(true);
  });

  it('known refuses every SSH host with neither a key nor a CA, naming them all; local hosts need none', () => {
    const error = thrown(() => underHostKeyMode(hosts(), 'known'));
    expect(error.message).toBe(
      'host-keys is known, but 2 host(s): web2, web3 have no known key and no host CA; no connection was made to them',
    );
    expect(error.hosts).toEqual(['web2', 'web3']);
    expect(underHostKeyMode(hosts().slice(0, 2), 'known')).toEqual(hosts().slice(0, 2));
  });
});

describe('first contact with known keys', () => {
  const host = { name: '[10.0.0.5]:2222', address: '10.0.0.5' };
  const given = () => ({ ...host, trust: { kind: 'keys' as const, keys: [plain('host'), plain('rsa')] } });
  const presented = (...labels: Label[]): Pin[] => labels.map((label) => ({ name: host.name, ...plain(label) }));

  it('fingerprints as ssh-keygen -l prints them', async () => {
    const listed = await runProcess('ssh-keygen', ['-l', '-E', 'sha256', '-f', `${keys.host.file}.pub`]);
    expect(listed.stdout.split(' ')[1]).toBe(fingerprint(plain('host')));
  });

  it("pins the workspace's keys once what the host presents matches one of them", () => {
    expect(judgeFirstContact(given(), presented('host'), now())).toEqual({
      pins: [...presented('host'), ...presented('rsa')],
    });
  });

  it('refuses another key of a given type, with both fingerprints', () => {
    const verdict = judgeFirstContact(given(), presented('other'), now());
    expect(verdict).toEqual({
      problem: `it presents ssh-ed25519 ${fingerprint(plain('other'))}; the workspace gives ssh-ed25519 ${fingerprint(plain('host'))}, ssh-rsa ${fingerprint(plain('rsa'))}`,
    });
  });

  it('refuses a host that presents a given key beside another of a given type, or nothing', () => {
    const only = { ...host, trust: { kind: 'keys' as const, keys: [plain('host')] } };
    expect(judgeFirstContact(only, [], now())).toHaveProperty('problem');
    expect(judgeFirstContact(given(), [...presented('rsa'), ...presented('other')], now())).toHaveProperty('problem');
  });

  it('without trust, pins what the host presented (trust on first use)', () => {
    expect(judgeFirstContact(host, presented('other'), now())).toEqual({ pins: presented('other') });
  });
});

describe('first contact under a host CA (certificates from ssh-keygen -s)', () => {
  const host = { name: '[10.0.0.5]:2222', address: '10.0.0.5' };
  const certified = () => ({ ...host, trust: { kind: 'ca' as const, ca: plain('ca') } });
  const as = (cert: PublicKey): Pin[] => [{ name: host.name, ...cert }];

  it('pins the CA as @cert-authority for the host, never what the host presented', () => {
    expect(judgeFirstContact(certified(), as(certs.host), now())).toEqual({
      pins: [{ name: host.name, ...plain('ca'), marker: 'cert-authority' }],
    });
    expect(judgeFirstContact(certified(), as(certs.anyName), now())).toHaveProperty('pins');
  });

  it.each<[string, () => Pin[], () => string]>([
    ['a plain key', () => [], () => 'it presents no host certificate (a plain key only)'],
    [
      'a certificate of another CA',
      () => as(certs.otherCa),
      () => `signed by ssh-ed25519 ${fingerprint(plain('otherCa'))}`,
    ],
    ['a user certificate', () => as(certs.user), () => 'a user certificate, not a host certificate'],
    ['a certificate for another name', () => as(certs.wrongName), () => 'a certificate for "10.0.0.6", not 10.0.0.5'],
    ['an expired certificate', () => as(certs.expired), () => 'outside its validity period'],
  ])('refuses %s, naming the host CA', (_what, presented, problem) => {
    const verdict = judgeFirstContact(certified(), presented(), now());
    expect(verdict).toHaveProperty('problem');
    const text = (verdict as { problem: string }).problem;
    expect(text).toContain(problem());
    expect(text).toContain(`the host CA is ssh-ed25519 ${fingerprint(plain('ca'))}`);
  });

  it('accepts one good certificate among others', () => {
    expect(certificateProblem(plain('ca'), [certs.otherCa, certs.host], '10.0.0.5', now())).toBeUndefined();
  });
});

describe('the pinned store under a host CA', () => {
  const ca = (name: string, label: Label = 'ca'): Pin => ({ name, ...plain(label), marker: 'cert-authority' });
  const key = (name: string, label: Label): Pin => ({ name, ...plain(label) });

  it('renders and reads back @cert-authority for one exact name', () => {
    const text = renderKnownHosts([ca('[10.0.0.5]:2222'), key('10.0.0.4', 'host')]);
    expect(text).toBe(
      `10.0.0.4 ${keys.host.keyType} ${keys.host.key}\n@cert-authority [10.0.0.5]:2222 ${keys.ca.keyType} ${keys.ca.key}\n`,
    );
    expect(parseKnownHosts(text)).toEqual([key('10.0.0.4', 'host'), ca('[10.0.0.5]:2222')]);
  });

  it('refuses two CA lines of one type for a name', () => {
    const line = `@cert-authority h ${keys.ca.keyType} ${keys.ca.key}`;
    expect(() => parseKnownHosts(`${line}\n@cert-authority h ${keys.otherCa.keyType} ${keys.otherCa.key}\n`)).toThrow(
      'known_hosts line 2: a second host CA ssh-ed25519 key for "h"',
    );
  });

  const reconcile = (current: Pin[], desired: Pin[], rotate: string[] = []) =>
    reconcilePins({ current, scanned: new Map([['h', desired]]), rotate: new Set(rotate) });

  it('a changed CA, and a move between a CA and a pinned key either way, is a change until rotated', () => {
    expect(reconcile([ca('h')], [ca('h', 'otherCa')]).changed).toHaveLength(1);
    expect(reconcile([key('h', 'host')], [ca('h')]).changed).toHaveLength(1);
    expect(reconcile([ca('h')], [key('h', 'host')]).changed).toHaveLength(1);
    const rotated = reconcile([key('h', 'host')], [ca('h', 'otherCa')], ['h']);
    expect(rotated.rotated).toEqual(['h']);
    expect(rotated.next).toEqual([ca('h', 'otherCa')]);
    expect(reconcile([ca('h')], [ca('h')]).unchanged).toEqual(['h']);
  });
});

describe('host-keys, one core setting mapped by the GitLab face', () => {
  it('reads EXOCOMP_HOST_KEYS (unset when the template input is empty: the workflow’s own) and refuses other values', () => {
    expect(readGitLabSettings({ EXOCOMP_HOST_KEYS: '' }).EXOCOMP_HOST_KEYS).toBeUndefined();
    expect(readGitLabSettings({ EXOCOMP_HOST_KEYS: 'known' }).EXOCOMP_HOST_KEYS).toBe('known');
    expect(() => readGitLabSettings({ EXOCOMP_HOST_KEYS: 'yes' })).toThrow('EXOCOMP_HOST_KEYS is not valid');
  });

  it('the core settings leave it unset (runReach: the workflow’s, else auto)', () => {
    const base = { scope: 'chain' as const, approval: { mode: 'none' as const }, ledgerBranch: 'exocomp-ledger' };
    expect(parseJobSettings(base).hostKeys).toBeUndefined();
    expect(() => parseJobSettings({ ...base, hostKeys: 'none' as never })).toThrow(/hostKeys/);
  });
});
