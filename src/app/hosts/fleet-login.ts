/**
 * The proof that ends onboarding: each host lets the fleet user in with the
 * fleet key, its host key checked against its pin, on a login of its own. A
 * host that does not is a failed host, never counted as onboarded (a play that
 * reported success for it may have run elsewhere, or changed nothing). That
 * login may stay open for configure to ride (keepMastersIn).
 */
import { availableParallelism } from 'node:os';
import { copyFile, chmod, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ExocompError } from '../../domain/errors.js';
import { countedNames } from '../../domain/host-list.js';
import type { DerivedHost } from '../../domain/inventory.js';
import { checkLogins } from '../../adapters/ssh.js';
import { makePrivateDir } from '../../adapters/private-dir.js';
import { JumpSession } from '../../adapters/ssh-jump.js';
import { hasBastions, routesOf } from './jump.js';

export interface FleetLoginRequest {
  user: string;
  fleetKeyPath: string;
  /** The pinned store as the play used it. */
  knownHosts: string;
  /**
   * Keep each login open as the master connection a play as the same user rides next (configure, in the same run),
   * in this ControlPath directory (adapters/ansible.ts openControlDir): the proof then costs no key exchange of its own.
   * Hosts behind a bastion are never kept (their route closes with the proof).
   */
  keepMastersIn?: string | undefined;
  signal?: AbortSignal | undefined;
}

/**
 * How long a kept master waits for its first rider (it idles from its proof until configure reaches its host, which
 * at fleet size is most of configure's run); the owner of the directory ends them all sooner, this bounds a crashed run.
 */
const KEPT_MASTER_IDLE_SEC = 30 * 60;

/** Logs every host in as the fleet user; throws naming every host that refused or could not be reached. */
export async function proveFleetLogins(hosts: readonly DerivedHost[], request: FleetLoginRequest): Promise<void> {
  const dir = await makePrivateDir('login');
  let jump: JumpSession | undefined;
  try {
    const identityFile = join(dir, 'identity');
    await copyFile(request.fleetKeyPath, identityFile);
    await chmod(identityFile, 0o600);
    // A run's fleet certificate sits beside its key; ssh reads it from beside the identity (ssh(1) -i).
    await copyFile(`${request.fleetKeyPath}-cert.pub`, `${identityFile}-cert.pub`).catch(
      (error: NodeJS.ErrnoException) => {
        if (error.code !== 'ENOENT') throw error;
      },
    );
    const knownHostsFile = join(dir, 'known_hosts');
    await writeFile(knownHostsFile, request.knownHosts, { mode: 0o600 });
    // Hosts behind a bastion are logged in through it, the bastion's key checked like theirs (docs/networks.md).
    if (hasBastions(hosts)) {
      jump = await JumpSession.open(routesOf(hosts), {
        knownHosts: request.knownHosts,
        credentials: { identityFiles: [identityFile], user: request.user },
        signal: request.signal,
      });
    }
    const sshConfigFile = jump ? await jump.writeSshConfig(hosts) : undefined;
    const results = await checkLogins(hosts, {
      sshConfigFile,
      user: request.user,
      identityFile,
      knownHostsFile,
      // Each login is one key exchange of CPU here: more clients than cores only queue.
      concurrency: availableParallelism(),
      keepMasters:
        request.keepMastersIn === undefined || jump !== undefined
          ? undefined
          : { controlDir: request.keepMastersIn, persistSec: KEPT_MASTER_IDLE_SEC },
      signal: request.signal,
    });
    const refused = results.flatMap((r) => (r.ok ? [] : [r]));
    if (refused.length === 0) return;
    throw new ExocompError(
      refused.some((r) => /host key verification failed|host identification has changed/i.test(r.reason))
        ? 'host-key'
        : 'play-failed',
      `the fleet user ${request.user} could not log in with the fleet key on ${countedNames(refused.map((r) => r.name))} (${refused[0]!.name}: ${refused[0]!.reason})`,
      {
        help: 'those hosts are not onboarded, whatever the play reported; check each one (its sshd log, the fleet user, its host key against the pin), then exocomp provision resume <id>',
        detail: refused.map((r) => `${r.name}: ${r.reason}`).join('\n'),
        hosts: refused.map((r) => r.name),
      },
    );
  } finally {
    await jump?.close();
    await rm(dir, { recursive: true, force: true });
  }
}
