/**
 * An end-to-end setting for the CLI: a bare ledger remote, bootstrap and fleet
 * keys, a copy of a fixture workspace driven by the real OpenTofu/Terraform
 * (`tofu: 'real'`, through a recording wrapper) or the stand-in, and the CLI
 * bundle run as a real process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ledgerFile, ledgerMessages } from './ledger-git.js';
import { runProcess } from '../../src/adapters/process.js';
import type { DriftReport } from '../../src/domain/drift.js';
import { generateKeyPair, type KeyPair, type LoopbackHost } from './loopback-host.js';
import { recordingRealTofu } from './real-tofu.js';
import { fixtureWorkspacesDir, invocationsOf, readStandinLog, standinPath } from './tofu-standin.js';

export const cliPath = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  env?: NodeJS.ProcessEnv;
  /** A network namespace the test made (test/support/netns.ts): the CLI runs as a process of it. */
  netns?: string;
}

export interface ChainFixture {
  dir: string;
  ledger: string;
  workspace: string;
  /** Every tofu call, one JSON line each (`readStandinLog`), whichever binary ran. */
  standinLog: string;
  /** The binary passed as --tofu-binary. */
  tofuBinary: string;
  bootstrap: KeyPair;
  fleet: KeyPair;
  /** --ledger */
  ledgerArgs: string[];
  /** --ledger and --tofu-binary */
  common: string[];
  /** common + both keys */
  keys: string[];
  env: NodeJS.ProcessEnv;
  cli(args: string[], options?: CliOptions): Promise<CliResult>;
  spawnCli(args: string[], options?: CliOptions): { child: ChildProcess; done: Promise<CliResult> };
  /** Writes the inventory the next apply outputs as `ansible_inventory`. */
  setInventory(inventory: unknown): Promise<void>;
  ledgerFile(path: string): Promise<string | undefined>;
  ledgerMessages(): Promise<string[]>;
  applyCount(): Promise<number>;
  /** Environment whose PATH puts a recording ansible-playbook first (it then runs the real one). */
  ansibleShim(): Promise<{ env: NodeJS.ProcessEnv; invocations(): Promise<string[]> }>;
  cleanup(): Promise<void>;
}

export interface ChainFixtureOptions {
  /** 'real': the binary on PATH (call inside describeWithRealTofu); 'standin': for faults the real one cannot make. */
  tofu?: 'real' | 'standin';
}

export async function createChainFixture(
  workspaceFixture = 'edge',
  { tofu = 'standin' }: ChainFixtureOptions = {},
): Promise<ChainFixture> {
  const dir = await mkdtemp(join(tmpdir(), 'exocomp-e2e-'));
  const ledger = join(dir, 'ledger.git');
  await runProcess('git', ['init', '-q', '--bare', ledger]);
  const workspace = join(dir, workspaceFixture);
  await cp(join(fixtureWorkspacesDir, workspaceFixture), workspace, { recursive: true });
  const bootstrap = await generateKeyPair(dir, 'bootstrap');
  const fleet = await generateKeyPair(dir, 'fleet');
  const standinLog = join(dir, 'tofu.log');
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    EXOCOMP_TOFU_STANDIN_LOG: standinLog,
    XDG_CACHE_HOME: join(dir, 'cache'),
  };
  delete env.EXOCOMP_SEAL_KEY;
  // The CLI runs here as on a workstation, even when this suite runs in CI (where local state would be refused).
  delete env.GITHUB_ACTIONS;
  delete env.GITLAB_CI;
  const tofuBinary = tofu === 'real' ? await recordingRealTofu(dir) : standinPath;
  const common = ['--ledger', ledger, '--tofu-binary', tofuBinary];
  const keys = [...common, '--fleet-key', fleet.privateKeyPath, '--bootstrap-key', bootstrap.privateKeyPath];

  const spawnCli = (args: string[], options: CliOptions = {}) => {
    const command = [process.execPath, cliPath, ...args];
    const [file, ...rest] = options.netns === undefined ? command : ['ip', 'netns', 'exec', options.netns, ...command];
    const child = spawn(file as string, rest, {
      cwd: dir,
      env: { ...env, ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const done = new Promise<CliResult>((resolve) =>
      child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 137 : 1), stdout, stderr })),
    );
    return { child, done };
  };

  return {
    dir,
    ledger,
    workspace,
    standinLog,
    tofuBinary,
    bootstrap,
    fleet,
    ledgerArgs: ['--ledger', ledger],
    common,
    keys,
    env,
    cli: (args, options) => spawnCli(args, options).done,
    spawnCli,
    setInventory: (inventory) =>
      writeFile(join(workspace, 'exocomp.auto.tfvars.json'), JSON.stringify({ ansible_inventory: inventory }, null, 2)),
    ledgerFile: (path) => ledgerFile(ledger, path),
    ledgerMessages: () => ledgerMessages(ledger),
    async applyCount() {
      return invocationsOf(await readStandinLog(standinLog), 'apply').length;
    },
    async ansibleShim() {
      const shimDir = join(dir, 'shim');
      const record = join(dir, 'ansible-invocations.log');
      const real = (await runProcess('sh', ['-c', 'command -v ansible-playbook'])).stdout.trim();
      await mkdir(shimDir, { recursive: true });
      await writeFile(join(shimDir, 'ansible-playbook'), `#!/bin/sh\necho "$*" >> '${record}'\nexec '${real}' "$@"\n`, {
        mode: 0o755,
      });
      return {
        env: { PATH: `${shimDir}:${process.env.PATH ?? ''}` },
        invocations: async () => (await readFile(record, 'utf8').catch(() => '')).split('\n').filter(Boolean),
      };
    },
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}

/** The inventory host entry of a loopback host, reached as root with the bootstrap key. */
export function sshHostVars(host: LoopbackHost): Record<string, unknown> {
  return { ansible_host: host.address, ansible_port: host.port, ansible_user: 'root' };
}

/** The workflow id a `provision run` printed (from its --json event or its stderr line). */
export function workflowIdFrom(result: CliResult): string {
  const match = /workflow ([a-z0-9][a-z0-9._-]*) created/.exec(result.stderr) ?? /"id":"([^"]+)"/.exec(result.stdout);
  if (!match?.[1]) throw new Error(`no workflow id in output:\n${result.stdout}\n${result.stderr}`);
  return match[1];
}

/** `exocomp provision run` of the workspace with site.yml, both keys, as workspace edge. */
export function provisionArgs(fx: ChainFixture, ...extra: string[]): string[] {
  return ['provision', 'run', fx.workspace, 'site.yml', ...fx.keys, '--workspace-name=edge', ...extra];
}

/** A converge: `exocomp playbook run site.yml` against tf:edge with the fleet key. */
export function convergeArgs(fx: ChainFixture, ...extra: string[]): string[] {
  return [
    'playbook',
    'run',
    'site.yml',
    '--inventory',
    'tf:edge',
    ...fx.ledgerArgs,
    '--fleet-key',
    fx.fleet.privateKeyPath,
    ...extra,
  ];
}

/** `exocomp drift` of the workspace against tf:edge, with the fleet key, reporting as JSON. */
export function driftArgs(fx: ChainFixture, ...extra: string[]): string[] {
  return [
    'drift',
    fx.workspace,
    '--playbook',
    'site.yml',
    '--inventory',
    'tf:edge',
    ...fx.common,
    '--fleet-key',
    fx.fleet.privateKeyPath,
    '--json',
    ...extra,
  ];
}

/** The report a `drift --json` run printed. */
export function driftReportOf(result: CliResult): DriftReport {
  const line = result.stdout.split('\n').find((l) => l.startsWith('{"result"'));
  if (line === undefined) throw new Error(`no JSON result (exit ${result.code})\n${result.stdout}\n${result.stderr}`);
  return (JSON.parse(line) as { result: { report: DriftReport } }).result.report;
}
