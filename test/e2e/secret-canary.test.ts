/**
 * Issue 8, the secret canary: five kinds of secret (a PEM key, a multi-line
 * run secret, a value full of quotes, backslashes, $(…) and regex
 * metacharacters, a sealed output, a token in the caller's environment) through
 * a configure play that prints them in every encoding and fails, then — resumed
 * — succeeds. None of them appears, in any of those encodings, in stdout/stderr,
 * the --json events, `provision status` text and JSON, any ledger commit, or a
 * file left in the temp directory.
 */
import { readdir, readFile, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProcess } from '../../src/adapters/process.js';
import { secretForms } from '../../src/domain/redaction.js';
import { createChainFixture, sshHostVars, type ChainFixture, type CliResult } from '../support/chain-fixture.js';
import { createLoopbackHost, generateKeyPair, type LoopbackHost } from '../support/loopback-host.js';

const SEAL_KEY = 'canary-seal-key-0123456789abcdef-XYZ';
const MULTI_LINE = 'multi-line-canary-first\nsecond "line" of the canary \\ here\nthird/line+of=canary';
const NASTY = `nasty'canary" \\back\\slash $(touch /tmp/pwned) \`id\` ^[a-z]+.*$ (x|y) %s %n`;
const SEALED = 'sealed-canary-"p4ss"/word+=&?';
const CALLER_TOKEN = 'ghp_callerCanaryToken0123456789abcdefXYZ';

/** The play prints every secret it can reach, in the encodings tools use, then fails when asked to. */
const PLAY = (fail: boolean) => `- hosts: all
  gather_facts: false
  tasks:
    - name: print every secret the play can reach, in every encoding
      ansible.builtin.debug:
        msg:
          - "{{ lookup('ansible.builtin.env', item) }}"
          - "{{ lookup('ansible.builtin.env', item) | b64encode }}"
          - "{{ lookup('ansible.builtin.env', item) | urlencode }}"
          - "{{ lookup('ansible.builtin.env', item) | quote }}"
          - "{{ lookup('ansible.builtin.env', item) | to_json }}"
          - "{{ [lookup('ansible.builtin.env', item)] | string }}"
      loop: [DEPLOY_KEY, MULTI_LINE, NASTY, DB_PASSWORD, GITHUB_TOKEN]
${
  fail
    ? `    - name: fail with a secret in the message
      ansible.builtin.fail:
        msg: "cannot continue: {{ lookup('ansible.builtin.env', 'NASTY') }} / {{ lookup('ansible.builtin.env', 'DB_PASSWORD') }}"
`
    : ''
}`;

describe('the secret canary', () => {
  let fx: ChainFixture;
  let host: LoopbackHost;
  let pem: string;
  let tmp: string;
  const outputs: Array<[string, CliResult]> = [];

  const cli = async (label: string, args: string[]) => {
    const result = await fx.cli(args, { env: { GITHUB_TOKEN: CALLER_TOKEN, TMPDIR: tmp } });
    outputs.push([label, result]);
    return result;
  };

  beforeAll(async () => {
    fx = await createChainFixture('sealed');
    host = await createLoopbackHost({ rootAuthorizedKey: fx.bootstrap.publicKey });
    await host.start();
    tmp = join(fx.dir, 'tmp');
    await mkdir(tmp);
    const deployKey = await generateKeyPair(fx.dir, 'deploy');
    pem = await readFile(deployKey.privateKeyPath, 'utf8');
    await writeFile(
      join(fx.workspace, 'exocomp.auto.tfvars.json'),
      JSON.stringify({ ansible_inventory: { all: { hosts: { web: sshHostVars(host) } } }, db_password: SEALED }),
    );
    await writeFile(join(fx.dir, 'secrets.json'), JSON.stringify({ DEPLOY_KEY: pem, MULTI_LINE, NASTY }));
    await writeFile(join(fx.dir, 'canary.yml'), PLAY(true));
    const common = [
      ...fx.keys,
      '--workspace-name',
      'canary',
      '--ssh-wait',
      '60s',
      '--run-secrets',
      'secrets.json',
      '--seal-key',
      SEAL_KEY,
    ];
    const failed = await cli('run --json (configure fails)', [
      'provision',
      'run',
      fx.workspace,
      'canary.yml',
      ...common,
      '--id',
      'canary-1',
      '--json',
    ]);
    expect(failed.code, failed.stdout + failed.stderr).toBe(1);
    await writeFile(join(fx.dir, 'canary.yml'), PLAY(false));
    const resumed = await cli('resume (configure succeeds)', [
      'provision',
      'resume',
      'canary-1',
      ...fx.keys,
      '--run-secrets',
      'secrets.json',
      '--seal-key',
      SEAL_KEY,
    ]);
    expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0);
    await cli('status text', ['provision', 'status', 'canary-1', ...fx.ledgerArgs]);
    await cli('status JSON', ['provision', 'status', 'canary-1', ...fx.ledgerArgs, '--json']);
  });

  afterAll(async () => {
    await host?.destroy();
    await fx?.cleanup();
  });

  const secrets = () => ({
    'PEM key': pem,
    'multi-line run secret': MULTI_LINE,
    'quotes and metacharacters': NASTY,
    'sealed output': SEALED,
    "caller's token": CALLER_TOKEN,
    'seal key': SEAL_KEY,
  });

  /** Names each secret form found in `text`: [secret, form]. */
  function leaks(text: string): string[] {
    const found: string[] = [];
    for (const [name, secret] of Object.entries(secrets())) {
      for (const form of secretForms(secret)) if (text.includes(form)) found.push(`${name}: ${JSON.stringify(form)}`);
    }
    return found;
  }

  it('the play really printed them (redacted) and the failure was recorded', () => {
    const [, failed] = outputs[0] as [string, CliResult];
    expect(failed.stdout).toMatch(/"event":"step-failed"/);
    expect(failed.stdout).toContain('***');
    const [, status] = outputs[2] as [string, CliResult];
    expect(status.stdout).toMatch(/configure/);
  });

  it('no secret in any encoding in stdout/stderr, --json events and status text/JSON', () => {
    for (const [label, result] of outputs) expect(leaks(`${result.stdout}\n${result.stderr}`), label).toEqual([]);
  });

  it('no secret in any encoding in any ledger commit (git log --all -p)', async () => {
    const log = await runProcess('git', ['--git-dir', fx.ledger, 'log', '--all', '-p', '--format=%H %s%n%b']);
    expect(log.code).toBe(0);
    expect(log.stdout).toMatch(/canary-1/);
    expect(leaks(log.stdout)).toEqual([]);
  });

  it('no file left in the temp directory holds one', async () => {
    const texts: string[] = [];
    for (const entry of await readdir(tmp, { recursive: true, withFileTypes: true })) {
      if (entry.isFile()) texts.push(await readFile(join(entry.parentPath, entry.name), 'utf8').catch(() => ''));
    }
    expect(leaks(texts.join('\n'))).toEqual([]);
  });
});
