import { constants } from 'node:fs';
import { access, mkdir, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, isAbsolute, join, resolve } from 'node:path';
import { ExocompError, UsageError } from '../domain/errors.js';
import { redact, runProcess } from './process.js';
import { makePrivateDir, privateDirTemplate } from './private-dir.js';
import { isFailure, type TaskResultEvent } from '../domain/play-events.js';
import { CONNECTION_ID_LENGTH, CONNECTION_ID_TEMPLATE } from '../domain/connection-identity.js';
import {
  AnsibleEventStream,
  EVENTS_CALLBACK_NAME,
  EVENTS_CALLBACK_SOURCE,
  EVENTS_FD_ENV,
  type AnsibleEvent,
} from './ansible-events.js';

export interface PlaybookRun {
  playbook: string;
  inventoryPath: string;
  cwd: string;
  /** The complete environment of ansible-playbook, already scrubbed by the caller (see run-environment.ts). */
  env: NodeJS.ProcessEnv;
  /** The pinned store: the only file host keys are verified against. */
  knownHostsFile: string;
  /** An ssh_config (`-F`) holding the ProxyCommands to hosts behind bastions (adapters/ssh-jump.ts). */
  sshConfigFile?: string | undefined;
  /** Connect as this user on every host, over any `ansible_user` in the inventory. */
  remoteUser?: string;
  /** Authenticate with this key on every host, over any key named in the inventory. */
  privateKeyFile?: string;
  become?: boolean;
  /** Reach the play as `-e @file.json` (never k=v), as data: ansible does not template them. */
  extraVars?: Record<string, unknown>;
  check?: boolean;
  /** --diff: changed tasks report what they change (in the events, and in the output). */
  diff?: boolean;
  limit?: string | undefined;
  tags?: string | undefined;
  /** Further ansible-playbook arguments, given by the user. */
  passthrough?: string[];
  /** Values that never leave this adapter in clear. */
  secrets?: string[];
  /** Each complete line of output, already redacted. */
  onOutput?(line: string): void;
  /** Each play, task and host result as it happens, already redacted. */
  onEvent?(event: AnsibleEvent): void;
  collectionsPath?: string;
  /** Hosts worked on at once (ANSIBLE_FORKS); absent: ansible's own setting. */
  forks?: number | undefined;
  /**
   * The ControlPath directory to use, made beforehand (openControlDir) with masters the run may ride: the fleet-login
   * proof's, one per host, port and user. The run takes it over and closes it as it would its own.
   */
  controlDir?: ControlDir | undefined;
  /** Stops ansible-playbook when aborted; the run then rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
  /**
   * Given: the run returns once ansible exited, and hands this the closing of its
   * SSH connections and files, for the caller to await.
   * Absent: closed before the run returns.
   */
  deferClose?: ((closing: Promise<void>) => void) | undefined;
}

export interface HostRecap {
  ok: number;
  changed: number;
  unreachable: number;
  failed: number;
  skipped: number;
  rescued: number;
  ignored: number;
}

export interface PlaybookResult {
  /** ansible-playbook's exit code; non-zero is for the caller to judge. */
  code: number;
  stdout: string;
  stderr: string;
  /** The last lines of output, redacted, for error messages. */
  tail: string;
  /** The PLAY RECAP, per host. Empty when ansible stopped before any play ran. */
  recap: Record<string, HostRecap>;
  /** Every play, task and host result, redacted (see ansible-events.ts). */
  events: AnsibleEvent[];
  /** The results that stopped a host (failed and not ignored, or unreachable), in order. */
  failures: TaskResultEvent[];
}

const INSTALL_HELP = 'apt-get install ansible-core (or pipx install ansible-core)';
const TAIL_LINES = 40;
// sun_path holds 107 characters and a NUL; ssh appends ".<16 random chars>" while it creates the socket.
const MAX_CONTROL_SOCKET_PATH = 107;
const CONTROL_SOCKET_NAME_LENGTH = '/'.length + CONNECTION_ID_LENGTH + '.'.length + 16;

export async function runPlaybook(run: PlaybookRun): Promise<PlaybookResult> {
  run.signal?.throwIfAborted();
  const executable = await findOnPath('ansible-playbook', run.env.PATH);
  if (executable === undefined) {
    throw new ExocompError('tool-missing', 'ansible-playbook was not found on PATH', { help: INSTALL_HELP });
  }
  const knownHostsFile = sshSafePath(resolve(run.cwd, run.knownHostsFile), 'the known_hosts file');
  const secrets = expandSecrets(run.secrets ?? []);
  const workDir = await runDirFor(run.env.TMPDIR);
  let controlDir: ControlDir | undefined = run.controlDir;
  let played = false;
  try {
    controlDir ??= await openControlDir(run.env.TMPDIR);
    const ansibleHome = join(workDir, 'home');
    await mkdir(join(ansibleHome, 'tmp'), { recursive: true, mode: 0o700 });
    const callbackDir = join(workDir, 'callbacks');
    await mkdir(callbackDir, { mode: 0o700 });
    await writeFile(join(callbackDir, `${EVENTS_CALLBACK_NAME}.py`), EVENTS_CALLBACK_SOURCE, { mode: 0o600 });
    const verifyArgs = [
      // A bastion's route (ProxyCommand through exocomp's own strict ssh), when hosts sit behind one.
      ...(run.sshConfigFile === undefined ? [] : [`-F ${sshSafePath(run.sshConfigFile, 'the ssh_config file')}`]),
      `-o UserKnownHostsFile=${knownHostsFile}`,
      '-o GlobalKnownHostsFile=/dev/null',
      '-o StrictHostKeyChecking=yes',
      '-o HashKnownHosts=no',
    ];
    const sshArgs = [
      '-C',
      '-o ControlMaster=auto',
      '-o ControlPersist=60s',
      // One socket per host, port and user, named by ansible per task (connection-identity.ts): never %C, whose
      // unseparated concatenation lets two hosts share a socket. Explicit, so no ControlPath in an inventory's
      // ssh_common_args can point elsewhere (ssh keeps the first value).
      `-o ControlPath=${controlDir.path}/${CONNECTION_ID_TEMPLATE}`,
      ...verifyArgs,
    ].join(' ');

    const env: NodeJS.ProcessEnv = {
      ...run.env,
      ANSIBLE_HOST_KEY_CHECKING: 'True',
      // The extra var below (templated per host) is what ansible uses; the environment is never templated, so
      // anything reading only this connects without multiplexing rather than on a shared socket.
      ANSIBLE_SSH_ARGS: ['-C', '-o ControlMaster=no', '-o ControlPath=none', ...verifyArgs].join(' '),
      ANSIBLE_SSH_CONTROL_PATH_DIR: controlDir.path,
      ANSIBLE_INVENTORY_UNPARSED_FAILED: 'true',
      ANSIBLE_INVENTORY_ENABLED: 'yaml',
      ANSIBLE_RETRY_FILES_ENABLED: 'false',
      // One SSH round trip per task instead of several (modules are piped, not copied); needs no
      // `requiretty` in the hosts' sudoers, which current distributions do not set (docs/converge.md).
      ANSIBLE_PIPELINING: 'True',
      ANSIBLE_NOCOLOR: '1',
      ANSIBLE_HOME: ansibleHome,
      ANSIBLE_LOCAL_TEMP: join(ansibleHome, 'tmp'),
      // Module payloads of local connections (AnsiballZ unpacks into the default temp directory) stay in the run's
      // directory too, which the next run's sweep removes when a killed run left it behind.
      TMPDIR: join(ansibleHome, 'tmp'),
      ANSIBLE_PYTHON_INTERPRETER: 'auto_silent',
      // The recap we parse is the default callback's.
      ANSIBLE_STDOUT_CALLBACK: 'ansible.builtin.default',
      // Our events callback beside any the user enabled.
      ANSIBLE_CALLBACK_PLUGINS: [callbackDir, run.env.ANSIBLE_CALLBACK_PLUGINS].filter(Boolean).join(':'),
      ANSIBLE_CALLBACKS_ENABLED: [run.env.ANSIBLE_CALLBACKS_ENABLED, EVENTS_CALLBACK_NAME].filter(Boolean).join(','),
      // The callback writes to fd 3, a pipe read while the play runs (progress as it happens).
      [EVENTS_FD_ENV]: '3',
    };
    if (run.forks !== undefined) env.ANSIBLE_FORKS = String(run.forks);
    delete env.ANSIBLE_CONFIG;
    delete env.ANSIBLE_FORCE_COLOR;
    if (run.collectionsPath !== undefined) env.ANSIBLE_COLLECTIONS_PATH = resolve(run.cwd, run.collectionsPath);

    // Extra vars outrank inventory and play vars: what keeps host keys verified cannot be
    // switched off by an inventory (ansible_host_key_checking: false, ansible_ssh_args: …).
    const extraVars: Record<string, unknown> = {
      ...asData(run.extraVars ?? {}),
      ansible_host_key_checking: true,
      ansible_ssh_host_key_checking: true,
      ansible_ssh_args: sshArgs,
      ...(run.remoteUser === undefined ? {} : { ansible_user: run.remoteUser }),
      ...(run.privateKeyFile === undefined
        ? {}
        : { ansible_ssh_private_key_file: resolve(run.cwd, run.privateKeyFile) }),
    };
    const extraVarsFile = join(workDir, 'extra-vars.json');
    await writeFile(extraVarsFile, JSON.stringify(extraVars), { mode: 0o600 });

    const args = ['-i', run.inventoryPath];
    if (run.check) args.push('--check');
    if (run.diff) args.push('--diff');
    if (run.limit !== undefined) args.push('--limit', run.limit);
    if (run.tags !== undefined) args.push('--tags', run.tags);
    if (run.become) args.push('--become');
    args.push(...(run.passthrough ?? []));
    // Last, so no -e in the passthrough can override it.
    args.push('-e', `@${extraVarsFile}`, run.playbook);

    const lines = new LineSplitter(secrets, run.onOutput);
    const events = new AnsibleEventStream(secrets, run.onEvent);
    const result = await runProcess(executable, args, {
      cwd: run.cwd,
      env,
      secrets,
      onOutput: (chunk, stream) => lines.push(chunk, stream),
      onEvents: (chunk) => events.push(chunk),
      signal: run.signal,
    });
    lines.flush();
    events.end();
    // Stopped on purpose: the reason is the error, not the recap of the interrupted play.
    run.signal?.throwIfAborted();
    const stdout = redact(result.stdout, secrets);
    const stderr = redact(result.stderr, secrets);
    const failures = events.events.flatMap((e) => (e.event === 'result' && isFailure(e) ? [e] : []));
    played = true;
    return {
      code: result.code,
      stdout,
      stderr,
      tail: tailOf(stdout, stderr),
      recap: parseRecap(stdout),
      events: events.events,
      failures,
    };
  } finally {
    const closing = closeRun(workDir, controlDir);
    // A play that ran may leave its closing to the caller; one that did not closes before its error propagates.
    if (played && run.deferClose) run.deferClose(closing);
    else await closing;
  }
}

/** Ends the run's ControlPersist masters, then removes its files. */
async function closeRun(workDir: string, controlDir: ControlDir | undefined): Promise<void> {
  await controlDir?.close();
  await rm(workDir, { recursive: true, force: true });
}

/**
 * Marks every value unsafe (ansible's JSON decoder turns `{"__ansible_unsafe": v}`
 * into unsafe data), so "{{" in a key comment or a secret is never evaluated.
 */
function asData(vars: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(vars)
      .filter(([, value]) => value !== undefined)
      .map(([name, value]) => [name, { __ansible_unsafe: value }]),
  );
}

/** Parses the default callback's PLAY RECAP into per-host counters. */
export function parseRecap(stdout: string): Record<string, HostRecap> {
  const recap: Record<string, HostRecap> = {};
  const start = stdout.lastIndexOf('PLAY RECAP');
  if (start < 0) return recap;
  const line =
    /^(\S.*?)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)(?:\s+skipped=(\d+))?(?:\s+rescued=(\d+))?(?:\s+ignored=(\d+))?/;
  for (const text of stdout.slice(start).split('\n').slice(1)) {
    const match = line.exec(text);
    if (!match) continue;
    const count = (index: number) => Number(match[index] ?? 0);
    recap[match[1] as string] = {
      ok: count(2),
      changed: count(3),
      unreachable: count(4),
      failed: count(5),
      skipped: count(6),
      rescued: count(7),
      ignored: count(8),
    };
  }
  return recap;
}

async function findOnPath(name: string, path: string | undefined): Promise<string | undefined> {
  for (const dir of (path ?? '').split(delimiter)) {
    if (!isAbsolute(dir)) continue;
    const candidate = join(dir, name);
    try {
      await access(candidate, constants.X_OK);
      if ((await stat(candidate)).isFile()) return candidate;
    } catch {
      // not in this directory
    }
  }
  return undefined;
}

/** ssh splits -o values on whitespace and expands % and ~ in these paths: accept only plain ones. */
function sshSafePath(path: string, what: string): string {
  if (!/^[A-Za-z0-9_/.@+,:=-]+$/.test(path)) {
    throw new UsageError(
      `${what} path ${JSON.stringify(path)} cannot be passed to ssh safely`,
      'use a path made of letters, digits and / . _ - (no spaces, quotes, % or ~)',
    );
  }
  return path;
}

/** It holds extra-vars.json, so it carries its owner's pid: a run killed with -9 leaves it for the next run's sweep. */
function runDirFor(base: string | undefined): Promise<string> {
  return makePrivateDir('play', baseDirFor(base));
}

function baseDirFor(base: string | undefined): string {
  return base && isAbsolute(base) ? base : tmpdir();
}

/** A private ControlPath directory: its sockets are named by connectionId, so each stands for one host, port and user. */
export interface ControlDir {
  readonly path: string;
  /** Ends every master in it and removes it; once, however often it is called. */
  close(): Promise<void>;
}

/**
 * A ControlPath directory of its own (beside the run's, not below it) so a socket
 * path stays within 107 bytes; under /tmp when TMPDIR is too long even for that.
 */
export async function openControlDir(tmpdirBase: string | undefined): Promise<ControlDir> {
  const parent = baseDirFor(tmpdirBase);
  const dirLength = privateDirTemplate('cp', parent).length;
  const path = sshSafePath(
    await makePrivateDir('cp', dirLength + CONTROL_SOCKET_NAME_LENGTH > MAX_CONTROL_SOCKET_PATH ? '/tmp' : parent),
    'the ssh control directory',
  );
  let closing: Promise<void> | undefined;
  return { path, close: () => (closing ??= stopControlMasters(path)) };
}

/**
 * Ends every ControlPersist master of the directory and removes it, so no
 * later run can ride a connection to a host whose key has since changed.
 */
async function stopControlMasters(controlDir: string): Promise<void> {
  const entries = await readdir(controlDir).catch(() => [] as string[]);
  await Promise.all(
    entries.map(async (entry) => {
      const socket = join(controlDir, entry);
      const isSocket = await stat(socket).then(
        (s) => s.isSocket(),
        () => false,
      );
      if (!isSocket) return;
      await runProcess('ssh', ['-F', '/dev/null', '-o', `ControlPath=${socket}`, '-O', 'exit', 'exocomp-control'], {
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
        timeoutMs: 10_000,
      }).catch(() => undefined);
    }),
  );
  await rm(controlDir, { recursive: true, force: true });
}

/** Every secret, and each line of a multi-line secret (a key printed line by line). */
function expandSecrets(secrets: readonly string[]): string[] {
  const expanded = new Set<string>();
  for (const secret of secrets) {
    expanded.add(secret);
    for (const line of secret.split('\n')) {
      if (line.trim().length >= 8) expanded.add(line.trim());
    }
  }
  // Longest first, so a whole secret is replaced before a part of it.
  return [...expanded].sort((a, b) => b.length - a.length);
}

function tailOf(stdout: string, stderr: string): string {
  const last = (text: string, count: number) =>
    text
      .split('\n')
      .filter((line) => line.trim() !== '')
      .slice(-count);
  return [...last(stdout, TAIL_LINES), ...last(stderr, TAIL_LINES / 2)].join('\n');
}

/** Turns output chunks into whole lines, redacted again once joined (a secret can span chunks). */
class LineSplitter {
  private readonly pending = { stdout: '', stderr: '' };

  constructor(
    private readonly secrets: readonly string[],
    private readonly onLine: ((line: string) => void) | undefined,
  ) {}

  push(chunk: string, stream: 'stdout' | 'stderr'): void {
    if (!this.onLine) return;
    const parts = (this.pending[stream] + chunk).split('\n');
    this.pending[stream] = parts.pop() ?? '';
    for (const line of parts) this.onLine(redact(line, this.secrets));
  }

  flush(): void {
    for (const stream of ['stdout', 'stderr'] as const) {
      if (this.pending[stream] !== '') this.onLine?.(redact(this.pending[stream], this.secrets));
      this.pending[stream] = '';
    }
  }
}
