/**
 * Step 3: pin every SSH host's key first, then run the onboarding play with the
 * bootstrap credentials, verifying host keys against the pins.
 */
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { existsSync } from 'node:fs';
import { ExocompError, UsageError } from '../../../domain/errors.js';
import { publicKeyOf } from '../../../adapters/ssh-keys.js';
import type { StepContext, StepResult } from './step.js';
import { asTheRunReachesIt, loadStandingInventory } from '../../hosts/inventories.js';
import { runReach } from '../../plays/run-inputs.js';
import type { ResolvedInventory } from '../../../domain/standing-inventory.js';
import { pinHostKeys } from '../../hosts/pins.js';
import { checkConfigurePassage, hasBastions, scanBehindBastions } from '../../hosts/jump.js';
import { lookAheadToAgent, playFailedError, runPlay } from '../../plays/play.js';
import { playProgress } from '../../runtime/progress.js';
import { proveFleetLogins } from '../../hosts/fleet-login.js';
import { openControlDir, type ControlDir } from '../../../adapters/ansible.js';
import { LookAhead } from '../look-ahead.js';
import { certificateTrustVars, fleetCredential } from '../../keys/user-ca.js';

/** The seeded playbook sits at the repository root, above dist/cli.js, dist/<action>/ and src/app/provision/steps/. */
export function seededOnboardPlaybook(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  for (const up of [['..'], ['..', '..'], ['..', '..', '..'], ['..', '..', '..', '..']]) {
    const candidate = join(here, ...up, 'playbooks', 'onboard.yml');
    if (existsSync(candidate)) return candidate;
  }
  throw new ExocompError(
    'internal',
    'the seeded onboarding playbook (playbooks/onboard.yml) is missing from this installation',
    {
      help: 'reinstall exocomp, or pass --onboard-playbook',
    },
  );
}

export async function onboardStep(context: StepContext): Promise<string | StepResult> {
  const { app, workflow, inputs, handedOn, nextRunsHere } = context;
  const mode = inputs.fleetAuth ?? 'key';
  if (mode !== 'cert' && !inputs.fleetKeyPath)
    throw new UsageError('onboarding needs the fleet key', 'pass --fleet-key <private key file>');
  if (mode === 'key' && inputs.userCa)
    throw new UsageError(
      'this run signs a fleet certificate (--user-ca-key), but --fleet-auth key onboards hosts that do not trust it',
      'pass --fleet-auth both (migrating) or cert (in CI: the fleet-auth input)',
    );
  if (!inputs.bootstrapKeyPath)
    throw new UsageError('onboarding needs the bootstrap key', 'pass --bootstrap-key <private key file>');
  const inventory = asTheRunReachesIt(
    handedOn.inventory?.() ?? loadStandingInventory(await app.store.read(), workflow.workspace.name),
    runReach(inputs, workflow),
  );
  const hosts = inventory.hosts.filter((h) => !h.local);
  if (hosts.length === 0) return 'no SSH hosts to onboard';
  const login = (await fleetCredential(app.store, inputs, {
    user: workflow.options.onboardUser,
    keyId: workflow.id,
  })) as string;

  // Configure's agent, holding the fleet key, starts while the keys are pinned and the play runs; no host sees it.
  const fleetAgent = nextRunsHere ? lookAheadToAgent(login, app.interrupt) : undefined;
  // The login proof's connections stay open there for configure's play to ride.
  const fleetConnections = nextRunsHere ? await openControlDir(app.env.TMPDIR) : undefined;
  try {
    const detail = await pinAndPlay(context, inventory, hosts, {
      fleetKeyPath: inputs.fleetKeyPath,
      loginKeyPath: login,
      bootstrapKeyPath: inputs.bootstrapKeyPath,
      keepMastersIn: fleetConnections?.path,
    });
    if (!fleetAgent || !fleetConnections) return detail;
    return { detail, handOn: { fleetAgent, fleetConnections: handedOver(fleetConnections) } };
  } catch (error) {
    await fleetAgent?.discard();
    await fleetConnections?.close();
    throw error;
  }
}

/** Made already: handed on as a look-ahead, so the chain closes it when no later step takes it. */
function handedOver(controlDir: ControlDir): LookAhead<ControlDir> {
  return new LookAhead(
    () => Promise.resolve(controlDir),
    (dir) => dir.close(),
  );
}

/** Pins the hosts' keys, then runs the onboarding play against them with the bootstrap key; returns the detail line. */
async function pinAndPlay(
  { app, workflow, inputs, info, warn, signal, handedOn, deferClose }: StepContext,
  inventory: ResolvedInventory,
  hosts: ResolvedInventory['hosts'],
  keys: {
    /** The fleet key: installed (key, both) or removed (cert) from authorized_keys. */
    fleetKeyPath: string | undefined;
    /** What the fleet user logs in with on this run: the fleet key or the run's certificate key. */
    loginKeyPath: string;
    bootstrapKeyPath: string;
    keepMastersIn: string | undefined;
  },
): Promise<string> {
  // The fleet key's public half is derived while the keys are pinned: neither waits for the other.
  const pinning = async () => {
    const scanned = handedOn.hostKeys
      ? await handedOn.hostKeys.take({ info, warn })
      : hasBastions(hosts)
        ? await scanBehindBastions(app, hosts, {
            rotate: inputs.rotateHostKeys,
            credentials: { identityFiles: [keys.bootstrapKeyPath, keys.loginKeyPath] },
            signal,
          })
        : undefined;
    signal.throwIfAborted();
    return pinHostKeys(app, hosts, inputs.rotateHostKeys, { signal, ...(scanned ? { scanned } : {}) });
  };
  const [pins, fleetPublicKey, certificateVars] = await Promise.all([
    pinning(),
    keys.fleetKeyPath === undefined ? undefined : publicKeyOf(keys.fleetKeyPath),
    certificateTrustVars(app.store, inputs.userCa, inputs.fleetAuth ?? 'key'),
  ]);
  info(
    `pinned host keys: ${pins.added.length} new, ${pins.unchanged.length} unchanged, ${pins.rotated.length} rotated`,
  );

  // A bastion configure could not pass stops the run here, before the play changes any host.
  await checkConfigurePassage(hosts, { knownHosts: pins.knownHosts, fleetKeyPath: keys.loginKeyPath, signal });

  const playbook = workflow.options.onboardPlaybook ?? seededOnboardPlaybook();
  info(`onboarding play ${workflow.options.onboardPlaybook ?? 'playbooks/onboard.yml (seeded)'} started`);
  const outcome = await runPlay({
    playbook,
    cwd: app.cwd,
    parentEnv: app.env,
    inventoryText: inventory.ansibleText,
    knownHosts: pins.knownHosts,
    identityFile: keys.bootstrapKeyPath,
    hostCount: hosts.length,
    hosts,
    // The run's bastion may take either: wait and scan offered both, in this order (docs/networks.md).
    bastionKeyFiles: [keys.bootstrapKeyPath, keys.loginKeyPath],
    extraVars: {
      ...(fleetPublicKey === undefined ? {} : { exocomp_fleet_pubkey: fleetPublicKey }),
      exocomp_onboard_user: workflow.options.onboardUser,
      ...certificateVars,
    },
    limit: hosts.map((h) => h.name).join(','),
    secrets: inputs.secrets,
    onEvent: playProgress(app.progress, 'onboard'),
    signal,
    deferClose,
  });
  if (outcome.code !== 0) {
    throw playFailedError(
      'onboarding play',
      outcome,
      'fix the cause, then exocomp provision resume <id>; a host-key mismatch is never re-pinned silently',
    );
  }
  // Counted as onboarded only once each host let the fleet user in on a login of its own, checked against its pin.
  await proveFleetLogins(hosts, {
    user: workflow.options.onboardUser,
    fleetKeyPath: keys.loginKeyPath,
    knownHosts: pins.knownHosts,
    keepMastersIn: keys.keepMastersIn,
    signal,
  });
  return `${hosts.length} host(s) onboarded as ${workflow.options.onboardUser}; ${pins.added.length} key(s) pinned`;
}
