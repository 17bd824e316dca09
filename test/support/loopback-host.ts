/**
 * Disposable loopback hosts (test/README.md): an sshd on 127.A.B.C:port with its
 * own host key, running in private mount, PID and UTS namespaces whose writable
 * system paths are overlays and whose /tmp and /run are fresh tmpfs, so nothing
 * a play does on the host reaches the machine running the tests.
 *
 * Lifetime: call destroy() (e.g. in afterAll). As a safety net the namespace's
 * init exits when the stdin pipe from this process closes — which happens when
 * this process dies in any way — and killing a PID namespace's init ends every
 * process in it. Directories of hosts whose owning process died are swept by
 * the next createLoopbackHost().
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { chmod, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { isProcessAlive, runProcess } from '../../src/adapters/process.js';
import { canListen, randomLoopbackAddress } from './addresses.js';
import { scaled } from './time.js';

export interface KeyPair {
  privateKeyPath: string;
  /** 'ssh-ed25519 AAAA... comment' */
  publicKey: string;
}

export interface HostOptions {
  /** Default: a fresh random 127.A.B.C with A in 100..199 (never 127.0.0.1). */
  address?: string;
  /** Default 22. */
  port?: number;
  /** Bootstrap public key: root may log in with it. */
  rootAuthorizedKey: string;
  /** start() returns at once, sshd comes up after this delay (to make waits real). */
  startDelayMs?: number;
  /** sshd's MaxStartups (unauthenticated connections at once); default 100. */
  maxStartups?: string;
  /** A network namespace the test created (test/support/netns.ts): sshd listens on `address` there. */
  netns?: string;
  /** More addresses sshd listens on (same port), e.g. a bastion's IPv6 leg in a test namespace. */
  alsoListenOn?: string[];
  /** A host CA's private key file: the host key (and each new one) is signed by it (ssh-keygen -s -h, principal: the address) and sshd presents the certificate (HostCertificate). */
  hostCaKeyPath?: string;
}

export interface LoopbackHost {
  readonly address: string;
  readonly port: number;
  readonly id: string;
  /** The host's own directory (config, host key, overlay upper dirs, sshd log); outside every overlaid path. */
  readonly directory: string;
  /** How known_hosts names this host: `address`, or `[address]:port` when the port is not 22. */
  readonly knownHostsName: string;
  /** 'ssh-ed25519 AAAA…' of the current host key (no comment) */
  hostPublicKey(): Promise<string>;
  /** Starts the namespace + sshd (honours startDelayMs for the sshd listen). */
  start(): Promise<void>;
  /** Ends EVERY process of the host, live SSH sessions included. */
  stop(): Promise<void>;
  /** New host key, sshd restarted (stop+start keeping the host's filesystem state); resolves once sshd accepts, without startDelayMs. */
  rekey(): Promise<void>;
  /** Runs `sh -c command` as root inside the host's namespaces (the host must be running). */
  exec(command: string): Promise<{ code: number; stdout: string; stderr: string }>;
  /** A file as the host sees it; undefined when it does not exist (the host must be running). */
  readFile(path: string): Promise<string | undefined>;
  /** The sshd log of this host (useful in failure messages). */
  sshdLog(): Promise<string>;
  isRunning(): boolean;
  /** stop + remove all its files */
  destroy(): Promise<void>;
}

export const HOSTS_ROOT = '/run/exocomp-test-hosts';
const OVERLAID_PATHS = ['/etc', '/home', '/var', '/opt', '/srv', '/usr/local'] as const;
const SSHD_READY_TIMEOUT_MS = scaled(15_000);
const STOP_TIMEOUT_MS = scaled(10_000);
/** What a root shell inside the host gets, instead of the test process's environment. */
const HOST_ENV: NodeJS.ProcessEnv = {
  PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
  HOME: '/root',
  USER: 'root',
  LOGNAME: 'root',
  LANG: 'C.UTF-8',
};

export async function generateKeyPair(dir: string, comment = 'exocomp-test'): Promise<KeyPair> {
  const privateKeyPath = path.join(dir, `id_ed25519_${randomBytes(4).toString('hex')}`);
  const result = await runProcess('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', comment, '-f', privateKeyPath]);
  if (result.code !== 0) throw new Error(`ssh-keygen failed (${result.code}): ${result.stderr}`);
  const publicKey = (await readFile(`${privateKeyPath}.pub`, 'utf8')).trim();
  return { privateKeyPath, publicKey };
}

/** Quotes a value for a POSIX shell command line. */
export function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

const liveHosts = new Set<HostImpl>();
let exitHookInstalled = false;

/** Last resort when a test forgets destroy(): the process is exiting, so only synchronous work is possible. */
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const host of liveHosts) host.killAndRemoveSync();
  });
}

/** Removes host directories left behind by test processes that died without destroy(). */
function sweepOrphanedHostDirectories(): void {
  let entries: string[];
  try {
    entries = readdirSync(HOSTS_ROOT);
  } catch {
    return;
  }
  for (const entry of entries) {
    const owner = Number(/^(\d+)-/.exec(entry)?.[1]);
    if (Number.isInteger(owner) && owner !== process.pid && !isProcessAlive(owner)) {
      rmSync(path.join(HOSTS_ROOT, entry), { recursive: true, force: true });
    }
  }
}

async function pickAddress(options: HostOptions, port: number): Promise<string> {
  if (options.address !== undefined) {
    // An address inside another network namespace cannot be tried from here.
    if (options.netns === undefined && !(await canListen(options.address, port))) {
      throw new Error(
        `${options.address}:${port} is already in use; choose another address or port for the loopback host`,
      );
    }
    return options.address;
  }
  for (let attempt = 0; attempt < 20; attempt += 1) {
    const candidate = randomLoopbackAddress();
    if (await canListen(candidate, port)) return candidate;
  }
  throw new Error(`found no free loopback address for port ${port}`);
}

export async function createLoopbackHost(options: HostOptions): Promise<LoopbackHost> {
  sweepOrphanedHostDirectories();
  const port = options.port ?? 22;
  const address = await pickAddress(options, port);
  // The owner pid leads the id so a later sweep can tell orphaned directories apart.
  const id = `${process.pid}-${randomBytes(4).toString('hex')}`;
  const directory = path.join(HOSTS_ROOT, id);
  await mkdir(directory, { recursive: true, mode: 0o700 });
  const host = new HostImpl(id, directory, address, port, options);
  try {
    await host.prepare();
  } catch (error) {
    await rm(directory, { recursive: true, force: true });
    throw error;
  }
  return host;
}

class HostImpl implements LoopbackHost {
  private child: ChildProcess | undefined;
  private childExited: Promise<void> | undefined;
  private initPid: number | undefined;
  private destroyed = false;

  constructor(
    readonly id: string,
    readonly directory: string,
    readonly address: string,
    readonly port: number,
    private readonly options: HostOptions,
  ) {}

  get knownHostsName(): string {
    return this.port === 22 ? this.address : `[${this.address}]:${this.port}`;
  }

  private get hostKeyPath(): string {
    return path.join(this.directory, 'ssh_host_ed25519_key');
  }
  private get pidFilePath(): string {
    return path.join(this.directory, 'sshd.pid');
  }
  private get logPath(): string {
    return path.join(this.directory, 'sshd.log');
  }

  async prepare(): Promise<void> {
    await this.generateHostKey();
    await writeFile(
      path.join(this.directory, 'bootstrap_authorized_keys'),
      `${this.options.rootAuthorizedKey.trim()}\n`,
      {
        mode: 0o600,
      },
    );
    await writeFile(path.join(this.directory, 'sshd_config'), this.sshdConfig(), { mode: 0o600 });
    await writeFile(path.join(this.directory, 'init.sh'), this.initScript(), { mode: 0o700 });
  }

  private async generateHostKey(): Promise<void> {
    await rm(this.hostKeyPath, { force: true });
    await rm(`${this.hostKeyPath}.pub`, { force: true });
    await rm(`${this.hostKeyPath}-cert.pub`, { force: true });
    const result = await runProcess('ssh-keygen', [
      '-q',
      '-t',
      'ed25519',
      '-N',
      '',
      '-C',
      `host-${this.id}`,
      '-f',
      this.hostKeyPath,
    ]);
    if (result.code !== 0) throw new Error(`ssh-keygen (host key) failed: ${result.stderr}`);
    await chmod(this.hostKeyPath, 0o600);
    if (this.options.hostCaKeyPath === undefined) return;
    const signed = await runProcess('ssh-keygen', [
      '-q',
      ...['-s', this.options.hostCaKeyPath, '-I', `host-${this.id}`, '-h', '-n', this.address],
      `${this.hostKeyPath}.pub`,
    ]);
    if (signed.code !== 0) throw new Error(`ssh-keygen (host certificate) failed: ${signed.stderr}`);
  }

  private sshdConfig(): string {
    return [
      // As Debian's sshd_config starts: drop-ins a play installs (the onboarding's user CA) take effect here too.
      'Include /etc/ssh/sshd_config.d/*.conf',
      ...[this.address, ...(this.options.alsoListenOn ?? [])].map(
        (address) => `ListenAddress ${address.includes(':') ? `[${address}]` : address}:${this.port}`,
      ),
      `HostKey ${this.hostKeyPath}`,
      ...(this.options.hostCaKeyPath === undefined ? [] : [`HostCertificate ${this.hostKeyPath}-cert.pub`]),
      `PidFile ${this.pidFilePath}`,
      'PermitRootLogin prohibit-password',
      'PubkeyAuthentication yes',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'UsePAM no',
      'AuthorizedKeysFile .ssh/authorized_keys',
      // Real hosts check modes; a play that installs a key with loose modes must fail here too.
      'StrictModes yes',
      'UseDNS no',
      `MaxStartups ${this.options.maxStartups ?? '100'}`,
      'MaxSessions 50',
      'PrintMotd no',
      'PrintLastLog no',
      'X11Forwarding no',
      'Subsystem sftp /usr/lib/openssh/sftp-server',
      '',
    ].join('\n');
  }

  /**
   * Runs as PID 1 of the host. Mount order matters: overlays first (their
   * upper dirs are addressed through /run), then a fresh /tmp, then a fresh
   * /run that keeps this host's directory at the same path.
   */
  private initScript(): string {
    const dir = shellQuote(this.directory);
    const overlays = OVERLAID_PATHS.map((p) => `mount_overlay ${p} ${p.slice(1).replace(/\//g, '_')}`).join('\n');
    return `set -eu
D=${dir}
mount_overlay() {
  mkdir -p "$D/overlay/$2/upper" "$D/overlay/$2/work"
  tries=0
  # The previous boot's overlay may still be releasing its upper dir.
  until mount -n -t overlay overlay -o "lowerdir=$1,upperdir=$D/overlay/$2/upper,workdir=$D/overlay/$2/work" "$1"; do
    tries=$((tries + 1))
    [ "$tries" -lt 50 ] || exit 1
    sleep 0.1
  done
}
${overlays}
# root's home starts as a fresh image's (/etc/skel), not the runner's: none of its keys or tool set-up (a
# runner's .bashrc may start pyenv, which every ssh command would then run, and put its python first).
mkdir -p "$D/root-home"
[ -e "$D/provisioned" ] || cp -a /etc/skel/. "$D/root-home/"
chmod 700 "$D/root-home"
mount -n --bind "$D/root-home" /root
mount -n -t tmpfs -o mode=1777 tmpfs /tmp
staging=/tmp/.exocomp-run
mkdir "$staging"
mount -n -t tmpfs -o mode=755 tmpfs "$staging"
mkdir -p "$staging/sshd" "$staging/lock" "$staging\${D#/run}"
chmod 1777 "$staging/lock"
mount -n --bind "$D" "$staging\${D#/run}"
mount -n --move "$staging" /run
rmdir "$staging"
# Where a play finds the listening sshd's pid, as on a real host (sshd's default PidFile).
ln -s "$D/sshd.pid" /run/sshd.pid
hostname ${shellQuote(`exo-${this.id}`)}
if [ ! -e "$D/provisioned" ]; then
  mkdir -p /root/.ssh
  chmod 700 /root/.ssh
  cp "$D/bootstrap_authorized_keys" /root/.ssh/authorized_keys
  chmod 600 /root/.ssh/authorized_keys
  # sshd without PAM refuses a locked account even with a valid key.
  case "$(getent shadow root | cut -d: -f2)" in '!'*) usermod -p '*' root ;; esac
  printf '127.0.1.1\\t%s\\n' "$(hostname)" >> /etc/hosts
  touch "$D/provisioned"
fi
cd /
delay="$1"
( [ "$delay" = 0 ] || sleep "$delay"; exec /usr/sbin/sshd -D -f "$D/sshd_config" -E "$D/sshd.log" ) </dev/null >>"$D/sshd.log" 2>&1 &
echo namespace-ready
# Watchdog: the test process holds our stdin; when it closes (stop(), or the process died), the host ends.
cat >/dev/null
exit 0
`;
  }

  async hostPublicKey(): Promise<string> {
    const line = (await readFile(`${this.hostKeyPath}.pub`, 'utf8')).trim();
    return line.split(/\s+/).slice(0, 2).join(' ');
  }

  isRunning(): boolean {
    return this.child !== undefined;
  }

  async start(): Promise<void> {
    await this.boot(this.options.startDelayMs ?? 0);
  }

  private async boot(delayMs: number): Promise<void> {
    if (this.destroyed) throw new Error(`loopback host ${this.id} was destroyed`);
    if (this.child) throw new Error(`loopback host ${this.id} is already running`);
    await rm(this.pidFilePath, { force: true });
    const netns = this.options.netns === undefined ? [] : ['ip', 'netns', 'exec', this.options.netns];
    const child = spawn(
      netns[0] ?? 'unshare',
      [
        ...[...netns.slice(1), ...(netns.length > 0 ? ['unshare'] : [])],
        '--mount',
        '--propagation',
        'private',
        '--pid',
        '--fork',
        '--mount-proc',
        '--uts',
        '--kill-child',
        '--',
        '/bin/sh',
        path.join(this.directory, 'init.sh'),
        (delayMs / 1000).toFixed(3),
      ],
      { cwd: '/', env: HOST_ENV, stdio: ['pipe', 'pipe', 'pipe'] },
    );
    this.child = child;
    liveHosts.add(this);
    installExitHook();
    this.childExited = new Promise((resolve) => child.once('exit', () => resolve()));
    child.stdin?.on('error', () => {
      /* the namespace may be gone already */
    });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    const ready = await new Promise<boolean>((resolve) => {
      let stdout = '';
      child.stdout?.on('data', (chunk: Buffer) => {
        stdout += chunk.toString('utf8');
        if (stdout.includes('namespace-ready\n')) resolve(true);
      });
      child.once('exit', () => resolve(false));
      child.once('error', () => resolve(false));
    });
    if (!ready) {
      await this.stop();
      throw new Error(`loopback host ${this.id} failed to set up its namespace: ${stderr.trim()}`);
    }
    this.initPid = findChildPid(child.pid!);
    if (delayMs === 0) await this.waitForSshd();
  }

  /** sshd writes its PidFile only after it is listening. */
  private async waitForSshd(): Promise<void> {
    const deadline = Date.now() + SSHD_READY_TIMEOUT_MS;
    while (Date.now() < deadline) {
      if (!this.child) break;
      if (await exists(this.pidFilePath)) return;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    const log = await this.sshdLog();
    await this.stop();
    throw new Error(
      `sshd of loopback host ${this.id} (${this.address}:${this.port}) did not start listening: ${log.trim()}`,
    );
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child) return;
    child.stdin?.end();
    const exited = await Promise.race([
      this.childExited!.then(() => true),
      new Promise<boolean>((resolve) => setTimeout(() => resolve(false), STOP_TIMEOUT_MS)),
    ]);
    if (!exited) {
      // --kill-child makes the kernel SIGKILL the namespace's init when unshare dies.
      child.kill('SIGKILL');
      await this.childExited;
    }
    this.child = undefined;
    this.initPid = undefined;
    liveHosts.delete(this);
  }

  async rekey(): Promise<void> {
    const wasRunning = this.isRunning();
    await this.stop();
    await this.generateHostKey();
    if (wasRunning) await this.boot(0);
  }

  async exec(command: string): Promise<{ code: number; stdout: string; stderr: string }> {
    if (this.initPid === undefined) throw new Error(`loopback host ${this.id} is not running`);
    const result = await runProcess(
      'nsenter',
      ['--target', String(this.initPid), '--mount', '--pid', '--uts', '--root', '--wd', '--', '/bin/sh', '-c', command],
      {
        cwd: '/',
        env: HOST_ENV,
      },
    );
    return { code: result.code, stdout: result.stdout, stderr: result.stderr };
  }

  async readFile(filePath: string): Promise<string | undefined> {
    const quoted = shellQuote(filePath);
    const result = await this.exec(`[ -e ${quoted} ] || exit 44; cat -- ${quoted}`);
    if (result.code === 44) return undefined;
    if (result.code !== 0)
      throw new Error(`reading ${filePath} on loopback host ${this.id} failed: ${result.stderr.trim()}`);
    return result.stdout;
  }

  async sshdLog(): Promise<string> {
    try {
      return await readFile(this.logPath, 'utf8');
    } catch {
      return '';
    }
  }

  async destroy(): Promise<void> {
    await this.stop();
    this.destroyed = true;
    await rm(this.directory, { recursive: true, force: true });
  }

  killAndRemoveSync(): void {
    this.child?.kill('SIGKILL');
    rmSync(this.directory, { recursive: true, force: true });
  }
}

/** The namespace's init as the machine sees it: the one child `unshare --fork` started. */
function findChildPid(parentPid: number): number {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let statLine: string;
    try {
      statLine = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue;
    }
    // Fields after the parenthesised command name: state, ppid, ...
    const afterName = statLine.slice(statLine.lastIndexOf(')') + 2).split(' ');
    if (Number(afterName[1]) === parentPid) return Number(entry);
  }
  throw new Error(`the namespace init of unshare ${parentPid} was not found`);
}

async function exists(file: string): Promise<boolean> {
  try {
    await stat(file);
    return true;
  } catch {
    return false;
  }
}
