/**
 * Runs one play inside the boundary docs/architecture.md ("Secrets") draws: a private 0700
 * copy of the inventory, the pinned known_hosts with strict checking, keys in a
 * per-run ssh-agent or a 0600 copy, a scrubbed environment plus only the values
 * meant for the play, and a working directory that holds nothing else.
 */
import { existsSync } from 'node:fs';
import { chmod, copyFile, mkdir, rm, writeFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { ExocompError } from '../../domain/errors.js';
import { failureDetail, failureSummary, type TaskResultEvent } from '../../domain/play-events.js';
import { countedNames, someNames } from '../../domain/host-list.js';
import type { PinnedKnownHosts } from '../../domain/known-hosts.js';
import { scrubEnvironment } from '../../domain/run-environment.js';
import { chooseForks } from '../../domain/forks.js';
import { runPlaybook, type ControlDir } from '../../adapters/ansible.js';
import type { AnsibleEvent } from '../../adapters/ansible-events.js';
import { SshAgent } from '../../adapters/ssh.js';
import { JumpSession } from '../../adapters/ssh-jump.js';
import { hasBastions, routesOf, type RoutedHost } from '../hosts/jump.js';
import type { SecretRegistry } from '../runtime/secrets.js';
import { makePrivateDir } from '../../adapters/private-dir.js';
import { LookAhead, type Say } from '../provision/look-ahead.js';

export interface PlayRequest {
  /** Playbook path, relative to `cwd` or absolute. */
  playbook: string;
  cwd: string;
  parentEnv: NodeJS.ProcessEnv;
  inventoryText: string;
  /** Exact pins only (readPinnedKnownHosts): the record's own text never reaches ssh. */
  knownHosts: PinnedKnownHosts;
  remoteUser?: string;
  /** A key used directly as the identity (a 0600 private copy is handed to ssh). */
  identityFile?: string;
  /** A key loaded into a per-run ssh-agent, killed afterwards. */
  agentKeyFile?: string;
  /** That agent, started beforehand (lookAheadToAgent): taken, and killed afterwards all the same. */
  agent?: LookAhead<SshAgent> | undefined;
  /** SSH masters opened beforehand (the fleet-login proof's) for the play to ride: taken, and closed with the play. */
  controlDir?: LookAhead<ControlDir> | undefined;
  extraVars?: Record<string, unknown>;
  /** Environment values meant for the play (run-secrets, unsealed outputs). */
  envAdditions?: Record<string, string>;
  check?: boolean;
  diff?: boolean;
  limit?: string | undefined;
  tags?: string | undefined;
  passthrough?: string[];
  secrets: SecretRegistry;
  onOutput?: ((line: string) => void) | undefined;
  /** Each play, task and host result as the play runs (see app/progress.ts playProgress). */
  onEvent?: ((event: AnsibleEvent) => void) | undefined;
  /** How many hosts the play targets, local ones included: its forks follow (domain/forks.ts). Unknown for a user's file. */
  hostCount?: number | undefined;
  /** The hosts the play may reach with their bastions: those behind one are reached through it (docs/networks.md). */
  hosts?: readonly RoutedHost[] | undefined;
  /** The keys the bastions are offered, in order, instead of the play's own (onboarding: the bootstrap key, then the fleet key). */
  bastionKeyFiles?: readonly string[] | undefined;
  /** Stops the play when aborted; runPlay then rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
  /**
   * Given: runPlay returns once the play ended and hands this the closing of its
   * SSH connections, agent and private files, for the caller to await (the chain
   * awaits it after recording the step). Absent: closed before runPlay returns.
   */
  deferClose?: ((closing: Promise<void>) => void) | undefined;
}

export interface PlayOutcome {
  code: number;
  stdout: string;
  stderr: string;
  /** Per-task, per-host results, redacted. */
  events: AnsibleEvent[];
  /** The results that stopped a host, redacted. */
  failures: TaskResultEvent[];
}

/** Collections vendored by `exocomp playbook vendor` (so no run depends on Galaxy). */
export function vendoredCollectionsPath(cwd: string): string {
  return join(cwd, '.exocomp', 'collections');
}

export async function runPlay(request: PlayRequest): Promise<PlayOutcome> {
  const playbook = resolve(request.cwd, request.playbook);
  if (!existsSync(playbook)) {
    throw new ExocompError('usage', `playbook ${request.playbook} does not exist`, {
      help: 'pass the path of a playbook file; for a workflow whose playbook moved: exocomp provision resume <id> --playbook <file>',
    });
  }
  const privateDir = await makePrivateDir('run');
  let agent: SshAgent | undefined;
  let controlDir: ControlDir | undefined;
  let jump: JumpSession | undefined;
  let playbookClosing: Promise<void> | undefined;
  try {
    // .yml: the standing inventory is YAML with !unsafe values; a JSON file given by the user is YAML too.
    const inventoryPath = join(privateDir, 'inventory.yml');
    await writeFile(inventoryPath, request.inventoryText, { mode: 0o600 });
    const knownHostsFile = join(privateDir, 'known_hosts');
    await writeFile(knownHostsFile, request.knownHosts, { mode: 0o600 });
    // The play runs in an empty directory: no tfstate, no plan, nothing of the caller's.
    const workDir = join(privateDir, 'work');
    await mkdir(workDir, { mode: 0o700 });
    let identityFile: string | undefined;
    if (request.identityFile) {
      identityFile = join(privateDir, 'identity');
      await copyFile(request.identityFile, identityFile);
      await chmod(identityFile, 0o600);
    }
    const env = scrubEnvironment(request.parentEnv, request.envAdditions ?? {});
    if (request.agent) agent = await request.agent.take(UNHEARD);
    else if (request.agentKeyFile) agent = await agentHolding(request.agentKeyFile);
    if (agent) Object.assign(env, agent.env());
    controlDir = await request.controlDir?.take(UNHEARD);
    if (request.hosts !== undefined && hasBastions(request.hosts)) {
      // The bastions' masters authenticate as the play does (the same key, its remote user: domain/bastion.ts hopUser), unless given their keys.
      jump = await JumpSession.open(routesOf(request.hosts), {
        knownHosts: request.knownHosts,
        credentials: request.bastionKeyFiles
          ? { identityFiles: request.bastionKeyFiles, user: request.remoteUser }
          : {
              identityFiles: identityFile ? [identityFile] : [],
              agentSocket: agent?.socketPath,
              user: request.remoteUser,
            },
        signal: request.signal,
      });
    }
    const sshConfigFile = jump ? await jump.writeSshConfig(request.hosts ?? []) : undefined;
    const collectionsPath = vendoredCollectionsPath(request.cwd);
    const result = await runPlaybook({
      playbook,
      inventoryPath,
      cwd: workDir,
      env,
      knownHostsFile,
      ...(sshConfigFile ? { sshConfigFile } : {}),
      ...(request.remoteUser ? { remoteUser: request.remoteUser } : {}),
      ...(identityFile ? { privateKeyFile: identityFile } : {}),
      controlDir,
      ...(request.extraVars ? { extraVars: request.extraVars } : {}),
      ...(request.check ? { check: true } : {}),
      ...(request.diff ? { diff: true } : {}),
      ...(request.limit ? { limit: request.limit } : {}),
      ...(request.tags ? { tags: request.tags } : {}),
      ...(request.passthrough ? { passthrough: request.passthrough } : {}),
      ...(existsSync(collectionsPath) ? { collectionsPath } : {}),
      forks: chooseForks(request.hostCount, availableParallelism(), env.ANSIBLE_FORKS),
      secrets: request.secrets.list(),
      ...(request.onOutput ? { onOutput: request.onOutput } : {}),
      ...(request.onEvent ? { onEvent: request.onEvent } : {}),
      signal: request.signal,
      // Handed on after the agent and the private files, below.
      deferClose: request.deferClose ? (closing) => void (playbookClosing = closing) : undefined,
    });
    return {
      code: result.code,
      stdout: result.stdout,
      stderr: result.stderr,
      events: result.events,
      failures: result.failures,
    };
  } finally {
    const closing = closePlay(playbookClosing, agent, privateDir, jump, controlDir);
    // Only a play that ran hands its closing on (its playbook run did); otherwise it is closed before the error propagates.
    if (playbookClosing && request.deferClose) request.deferClose(closing);
    else await closing;
  }
}

/** A per-run ssh-agent holding `keyFile`. */
async function agentHolding(keyFile: string): Promise<SshAgent> {
  const agent = await SshAgent.start();
  try {
    await agent.add(keyFile);
  } catch (error) {
    await agent.stop();
    throw error;
  }
  return agent;
}

/** An agent holding `keyFile`, started now for a play that takes it later (onboarding starts configure's while it pins and plays). */
export function lookAheadToAgent(keyFile: string, interrupt?: AbortSignal): LookAhead<SshAgent> {
  return new LookAhead(
    () => agentHolding(keyFile),
    (agent) => agent.stop(),
    interrupt,
  );
}

/** Starting an agent says nothing. */
const UNHEARD: Say = { info: () => undefined, warn: () => undefined };

/** After the playbook run closed: its masters ended, the agent stopped, the private files removed. */
async function closePlay(
  playbookClosing: Promise<void> | undefined,
  agent: SshAgent | undefined,
  privateDir: string,
  jump: JumpSession | undefined,
  controlDir: ControlDir | undefined,
): Promise<void> {
  try {
    await playbookClosing;
  } finally {
    // Closed by the playbook run already, unless the play failed before it began.
    await controlDir?.close();
    await jump?.close();
    await agent?.stop();
    await rm(privateDir, { recursive: true, force: true });
  }
}

/**
 * One line for a failed play: the first failed host and task with the reason,
 * or, when ansible stopped before any task failed (a syntax error, a missing
 * role), its own error lines.
 */
export function playFailureSummary(
  outcome: Pick<PlayOutcome, 'code' | 'stdout' | 'stderr' | 'failures'>,
  max = 3,
): string {
  const hosts = failedHosts(outcome.failures);
  // One line at fleet size: the count and the first names, then the first failure.
  if (hosts.length > 1) return `${countedNames(hosts)} failed; first: ${failureSummary(outcome.failures.slice(0, 1))}`;
  if (outcome.failures.length > 0) return failureSummary(outcome.failures);
  const lines = `${outcome.stdout}\n${outcome.stderr}`
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => /^(fatal|failed|ERROR!|UNREACHABLE)|unreachable=[1-9]|failed=[1-9]/.test(l));
  return lines.slice(-max).join(' | ') || `ansible-playbook exited ${outcome.code}`;
}

/** The error a failed play becomes: one line to show, everything (redacted) for the ledger's failure context. */
export function playFailedError(what: string, outcome: PlayOutcome, help: string): ExocompError {
  const detail =
    outcome.failures.length > 0
      ? failureDetail(outcome.failures)
      : `${outcome.stdout}\n${outcome.stderr}`.trim().split('\n').slice(-60).join('\n');
  const hosts = failedHosts(outcome.failures);
  return new ExocompError('play-failed', `${what} failed: ${playFailureSummary(outcome)}`, {
    help,
    detail,
    ...(hosts.length > 0 ? { hosts } : {}),
  });
}

/** Each host that failed, once, in the order of its first failure. */
function failedHosts(failures: readonly TaskResultEvent[]): string[] {
  return [...new Set(failures.map((f) => f.host))];
}

/**
 * When hosts refused the key (`Permission denied (publickey)`), which key the
 * run offered and how to pass the right one; undefined for other failures.
 */
export function keyRefusedHelp(
  outcome: Pick<PlayOutcome, 'failures'>,
  offered: { key?: string; user: string },
): string | undefined {
  const refused = outcome.failures.filter(
    (f) => f.status === 'unreachable' && /Permission denied \(publickey/.test(f.msg ?? ''),
  );
  if (refused.length === 0) return undefined;
  const hosts = someNames([...new Set(refused.map((f) => f.host))]);
  const tried = offered.key
    ? `it offered ${offered.key} as user ${offered.user}`
    : `no key was given, so ssh offered only its defaults (~/.ssh/id_*, an agent) as user ${offered.user}`;
  return `${hosts} refused the key: ${tried}. Pass the fleet key that onboarding installed: --fleet-key <private key file> (in CI: the fleet-private-key input); a host onboarded with an older fleet key accepts only that one (docs/keys.md)`;
}
