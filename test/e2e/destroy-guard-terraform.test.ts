/**
 * Issue 36 item 4, acceptance "a run without approval that replaces a host and lacks --allow-destroy is refused with
 * nothing applied (the state's serial unchanged); a protect: address is refused even with --allow-destroy" — on the
 * CLI, with the real `terraform` on PATH. Hosts are `terraform_data` by `for_each`, a replacement by
 * `triggers_replace`. Every run here is refused before its apply, so no host is contacted.
 */
import { execFileSync } from 'node:child_process';
import { cp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChainFixture, type ChainFixture } from '../support/chain-fixture.js';

/** The real binary on PATH: `tofu` where present, else `terraform`. */
function realTofu(): string | undefined {
  for (const name of ['tofu', 'terraform']) {
    try {
      return execFileSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).trim() || undefined;
    } catch {
      // not on PATH
    }
  }
  return undefined;
}
const binary = realTofu();

const MAIN_TF = `
variable "hosts" {
  type = map(string)
}

resource "terraform_data" "web" {
  for_each         = var.hosts
  input            = each.key
  triggers_replace = each.value
}

output "ansible_inventory" {
  value = { all = { hosts = { for name, image in var.hosts : name => { ansible_host = "127.0.9.\${substr(name, 3, 1)}" } } } }
}
`;

let fx: ChainFixture;
let ws: string;

const hosts = (h: Record<string, string>) =>
  writeFile(join(ws, 'exocomp.auto.tfvars.json'), JSON.stringify({ hosts: h }));
const serial = async () =>
  (JSON.parse(await readFile(join(ws, 'terraform.tfstate'), 'utf8')) as { serial: number }).serial;
const args = () => [...fx.ledgerArgs, '--tofu-binary', binary ?? ''];
const keys = () => ['--fleet-key', fx.fleet.privateKeyPath, '--bootstrap-key', fx.bootstrap.privateKeyPath];
const run = (...extra: string[]) =>
  fx.cli([
    'provision',
    'run',
    ws,
    'site.yml',
    '--workspace-name',
    'fleet',
    '--ssh-wait',
    '1s',
    ...args(),
    ...keys(),
    ...extra,
  ]);

describe.skipIf(binary === undefined)('the destroy guard on a run without approval, real terraform', () => {
  beforeAll(async () => {
    fx = await createChainFixture();
    ws = join(fx.dir, 'real');
    await mkdir(ws);
    await writeFile(join(ws, 'main.tf'), MAIN_TF);
    await cp(new URL('../fixtures/playbooks/site.yml', import.meta.url).pathname, join(fx.dir, 'site.yml'));
    await hosts({ web1: 'img-1', web2: 'img-1' });
    const applied = await fx.cli(['workspace', 'apply', ws, '--workspace-name', 'fleet', ...args()]);
    expect(applied.code, applied.stderr).toBe(0);
  });
  afterAll(() => fx?.cleanup());

  it('replacing a host without --allow-destroy: refused, the state untouched, the flag named', async () => {
    await hosts({ web1: 'img-2', web2: 'img-1' });
    const before = await serial();
    const result = await run();
    const said = result.stdout + result.stderr;
    expect(result.code, said).toBe(1);
    expect(said).toContain('refused by the destroy guard (1 address(es)), nothing was applied');
    expect(said).toContain('allow-destroy');
    expect(await serial()).toBe(before);
  });

  it('a protect: address of .exocomp/policy.yml is refused even with --allow-destroy', async () => {
    await mkdir(join(ws, '.exocomp'), { recursive: true });
    await writeFile(join(ws, '.exocomp', 'policy.yml'), 'protect:\n  - terraform_data.web\n');
    try {
      const before = await serial();
      const result = await run('--allow-destroy');
      const said = result.stdout + result.stderr;
      expect(result.code, said).toBe(1);
      expect(said).toContain('a protected address changes only after .exocomp/policy.yml');
      expect(await serial()).toBe(before);
    } finally {
      await rm(join(ws, '.exocomp'), { recursive: true, force: true });
    }
  });

  it('destroying an address the run protects (--protect) is refused even with --allow-destroy', async () => {
    await hosts({ web1: 'img-1' });
    const before = await serial();
    const result = await run('--allow-destroy', '--protect', 'terraform_data.web["web2"]');
    const said = result.stdout + result.stderr;
    expect(result.code, said).toBe(1);
    expect(said).toContain('refused by the destroy guard (1 address(es))');
    expect(await serial()).toBe(before);
  });
});
