import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { SecretGuardedStore } from '../../src/app/runtime/secret-guarded-store.js';
import { SecretRegistry } from '../../src/app/runtime/secrets.js';
import { MemoryLedgerStore } from '../../src/ledger/memory-store.js';

const SECRETS = {
  quotes: `p@ss"wo'rd\\n $(rm -rf /) \`id\` ^[a-z]+$ (.*) {x} | & ; <> % + / =`,
  multiLine: 'first-line-secret-AAAA\nsecond line: with "quotes" and \\backslash\nthird/line+plus=equals',
  unicode: 'pässwörd-ünïcødé-€-😀-secret',
  token: 'ghp_16C7e42F292c6912E7710c838347Ae178B4a',
};

/** What real tools print for each secret: Python's repr, json.dumps, shlex.quote, urllib quote/quote_plus, base64 inside a longer text. */
const PYTHON = String.raw`
import base64, json, shlex, sys, urllib.parse
for s in json.loads(sys.stdin.read()):
    print(repr(s))
    print(repr({"msg": s}))
    print(json.dumps({"msg": repr([s])}))
    print(json.dumps({"msg": shlex.quote(s)}))
    print(json.dumps({"msg": s}))
    print(json.dumps({"msg": s}, ensure_ascii=False))
    print(shlex.quote(s))
    print(urllib.parse.quote(s))
    print(urllib.parse.quote_plus(s))
    print(urllib.parse.quote(s, safe=""))
    for prefix in ["", "x", "xy", "Authorization: basic "]:
        print(base64.b64encode((prefix + s + "tail").encode()).decode())
        print(base64.urlsafe_b64encode((prefix + s).encode()).decode())
`;

function printedByTools(values: string[]): string {
  return execFileSync('python3', ['-c', PYTHON], { input: JSON.stringify(values) }).toString();
}

function printedByNode(values: string[]): string {
  return values
    .flatMap((s) => [
      s,
      JSON.stringify({ msg: s }),
      JSON.stringify(JSON.stringify({ msg: s })),
      `'${s.replaceAll("'", "'\\''")}'`,
      encodeURIComponent(s),
      `https://x-access-token:${encodeURIComponent(s)}@example.com/`,
      Buffer.from(`x-access-token:${s}`).toString('base64'),
    ])
    .join('\n');
}

describe('redaction in every encoding', () => {
  const registry = new SecretRegistry();
  registry.add(...Object.values(SECRETS));

  it.each(Object.entries(SECRETS))('hides %s as Python and Node print it', (_label, secret) => {
    // Every line printed holds the secret in one encoding: each must come out changed, and decoding
    // what is left (JSON strings, base64 runs) must not give the secret back.
    const printed = `${printedByTools([secret])}\n${printedByNode([secret])}`.split('\n').filter((line) => line !== '');
    expect(printed.length).toBeGreaterThan(20);
    const probe = secret.split('\n')[0] as string;
    for (const line of printed) {
      const redacted = registry.redact(line);
      expect(redacted, line).toContain('***');
      expect(redacted).not.toContain(probe);
      for (const run of redacted.match(/[A-Za-z0-9+/_-]{16,}={0,2}/g) ?? []) {
        expect(Buffer.from(run, 'base64').toString('utf8')).not.toContain(probe.slice(0, 12));
      }
    }
  });

  it('hides each line of a multi-line secret printed on its own', () => {
    expect(registry.redact('ansible said: second line: with "quotes" and \\backslash')).toBe('ansible said: ***');
    expect(registry.redact("'third/line+plus=equals'")).toBe("'***'");
  });

  it('leaves text without secrets alone, and PEM armour lines visible', () => {
    const pem =
      '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----';
    const keys = new SecretRegistry();
    keys.add(pem);
    expect(keys.redact('TASK [ping] ok=1 changed=0')).toBe('TASK [ping] ok=1 changed=0');
    expect(keys.redact(`key:\n${pem}`)).toBe('key:\n***');
    expect(keys.redact('-----BEGIN OPENSSH PRIVATE KEY-----')).toBe('-----BEGIN OPENSSH PRIVATE KEY-----');
  });

  it('registers every form with the masking callback (GitHub add-mask)', () => {
    const masked: string[] = [];
    new SecretRegistry((value) => masked.push(value)).add('s3cr3t value/with+stuff');
    expect(masked).toContain('s3cr3t value/with+stuff');
    expect(masked).toContain(encodeURIComponent('s3cr3t value/with+stuff'));
    expect(masked).toContain(Buffer.from('s3cr3t value/with+stuff').toString('base64'));
  });
});

describe('SecretGuardedStore', () => {
  it('stores the redacted text, never the secret, and warns naming the file only', async () => {
    const secrets = new SecretRegistry();
    secrets.add(SECRETS.quotes);
    const warnings: string[] = [];
    const store = new SecretGuardedStore(new MemoryLedgerStore(), secrets, (m) => warnings.push(m));
    const leaked = JSON.stringify({ schemaVersion: 1, summary: `play failed: ${SECRETS.quotes}` });
    await store.update(() => ({
      writes: new Map([
        ['workflows/w-1.json', leaked],
        ['notes.txt', 'clean'],
      ]),
      message: `w-1: ${SECRETS.quotes}`,
      result: undefined,
    }));
    const snapshot = await store.read();
    const written = snapshot.read('workflows/w-1.json') as string;
    expect(secrets.exposes(written)).toBe(false);
    expect(JSON.parse(written)).toEqual({ schemaVersion: 1, summary: 'play failed: ***' });
    expect(snapshot.read('notes.txt')).toBe('clean');
    expect(warnings).toEqual([
      'a secret was about to be written to the ledger in workflows/w-1.json, the commit message; the redacted text was stored instead',
    ]);
    expect(secrets.exposes(warnings.join('\n'))).toBe(false);
  });

  it('writes clean changes untouched and without a warning', async () => {
    const secrets = new SecretRegistry();
    secrets.add('hunter2hunter2');
    const warnings: string[] = [];
    const store = new SecretGuardedStore(new MemoryLedgerStore(), secrets, (m) => warnings.push(m));
    await store.update(() => ({ writes: new Map([['a.json', '{"x":1}\n']]), message: 'a', result: undefined }));
    expect((await store.read()).read('a.json')).toBe('{"x":1}\n');
    expect(warnings).toEqual([]);
  });
});
