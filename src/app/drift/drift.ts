/**
 * `exocomp drift`: one check of both halves of a workspace (issue 12 item 1).
 * Nothing is applied, pinned or converged: the plan runs with
 * `-detailed-exitcode` (the state lock is held only for the plan), host keys
 * are scanned and compared with their pins without touching the pinned store,
 * and the configure playbook runs in check mode with `--diff` against the hosts
 * whose keys still match. The run is recorded in the ledger afterwards.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ExocompError } from '../../domain/errors.js';
import {
  configurationDrift,
  infrastructureDrift,
  type ConfigurationDrift,
  type DriftReport,
  type Half,
  type HostProblem,
  type InfrastructureDrift,
  type TaskResult,
} from '../../domain/drift.js';
import type { AnsibleEvent } from '../../domain/play-events.js';
import { appendDriftRun, driftRunOf } from '../../domain/drift-history.js';
import { knownHostsName, type DerivedHost } from '../../domain/inventory.js';
import { certificateProblem } from '../../domain/host-trust.js';
import { reconcilePins, renderKnownHosts, type Pin } from '../../domain/known-hosts.js';
import { InventoryUnusableError, type ResolvedInventory } from '../../domain/standing-inventory.js';
import { makePrivateDir } from '../../adapters/private-dir.js';
import type { TaskResultEvent } from '../../adapters/ansible-events.js';
import { readDriftHistory, readPins, RecordWrites } from '../../ledger/records.js';
import { openTofu, planWorkspace } from '../provision/apply-workspace.js';
import type { AppContext } from '../runtime/context.js';
import { loadStandingInventory } from '../hosts/inventories.js';
import { presentedKeys } from '../hosts/jump.js';
import { playFailureSummary } from '../plays/play.js';
import type { SecretRegistry } from '../runtime/secrets.js';
import { addScheduleFire } from '../schedules/schedule-fires.js';
import { runStandingPlay } from '../plays/standing-play.js';

export interface DriftRequest {
  workspacePath: string;
  /** The standing inventory `tf:<name>` (the workspace's name). */
  name: string;
  playbook: string;
  vars?: Record<string, unknown>;
  tofuBinary?: string | undefined;
  sealKey?: string | undefined;
  runSecrets: Record<string, string>;
  fleetKeyPath?: string;
  remoteUser?: string;
  secrets: SecretRegistry;
  /** A scheduled run: its schedule's name and five-field cron, recorded with the time it fired. */
  schedule?: { name: string; cron: string };
  runUrl?: string;
  info(message: string): void;
  onOutput?(line: string): void;
  /** The check-mode play's events, for one line per task and host (a job's log). */
  onEvent?: ((event: AnsibleEvent) => void) | undefined;
  signal?: AbortSignal | undefined;
}

export async function checkDrift(app: AppContext, request: DriftRequest): Promise<DriftReport> {
  const checkedAt = app.now();
  const snapshot = await app.store.read();
  let inventory: ResolvedInventory | undefined;
  let inventoryError: string | undefined;
  try {
    inventory = loadStandingInventory(snapshot, request.name);
  } catch (error) {
    if (!(error instanceof ExocompError)) throw error;
    inventoryError = error.message;
  }
  const currentHosts = inventory?.hosts.map((h) => h.name) ?? [];

  request.info(`drift: planning ${request.workspacePath} (tofu plan -detailed-exitcode, nothing is applied)`);
  const infrastructure = await half(() => checkInfrastructure(app, request, currentHosts));
  request.info(`drift: checking the configuration of tf:${request.name} (ansible-playbook --check --diff)`);
  const configuration: Half<ConfigurationDrift> =
    inventory === undefined
      ? { ok: false, error: inventoryError ?? `tf:${request.name} cannot be read` }
      : await half(() => checkConfiguration(app, request, inventory, readPins(snapshot)));

  const report: DriftReport = {
    workspace: request.name,
    checkedAt: checkedAt.toISOString(),
    infrastructure,
    configuration,
  };
  const missed = await record(app, request, report, checkedAt);
  if (request.schedule !== undefined) report.missedTicks = missed.map((t) => t.toISOString());
  return report;
}

/** A half that could not be checked becomes its reason, so the other half still reports. */
async function half<T>(check: () => Promise<T>): Promise<Half<T>> {
  try {
    return { ok: true, value: await check() };
  } catch (error) {
    if (!(error instanceof ExocompError)) throw error;
    return { ok: false, error: error.message };
  }
}

async function checkInfrastructure(
  app: AppContext,
  request: DriftRequest,
  currentHosts: string[],
): Promise<InfrastructureDrift> {
  const tofu = await openTofu(app, request);
  const scratch = await makePrivateDir('drift-plan');
  try {
    const planFile = join(scratch, 'drift.tfplan');
    const planned = await planWorkspace(tofu, request.vars, planFile, { detailed: true });
    return infrastructureDrift(planned.plan, planned.fingerprint, currentHosts);
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

interface KeyCheck {
  matching: DerivedHost[];
  mismatches: HostProblem[];
  unreachable: HostProblem[];
}

/**
 * Compares what each SSH host presents with its pin; the pinned store is only
 * read. Hosts behind a bastion are asked through it (hosts/jump.ts), the
 * bastion checked against its own pin and logged in to as the play would be.
 */
async function compareHostKeys(
  hosts: DerivedHost[],
  pins: Pin[],
  request: Pick<ConfigurationCheckRequest, 'fleetKeyPath' | 'remoteUser' | 'signal'>,
): Promise<KeyCheck> {
  const ssh = hosts.filter((h) => !h.local);
  const result: KeyCheck = { matching: hosts.filter((h) => h.local), mismatches: [], unreachable: [] };
  if (ssh.length === 0) return result;
  // A host pinned under a host CA is asked for its certificates, and judged against the CA (domain/host-trust.ts).
  const caOf = new Map(pins.filter((p) => p.marker === 'cert-authority').map((p) => [p.name, p]));
  const presented = await presentedKeys(ssh, {
    knownHosts: renderKnownHosts(pins),
    credentials: {
      identityFiles: request.fleetKeyPath ? [request.fleetKeyPath] : [],
      user: request.remoteUser,
    },
    certified: (h) => caOf.has(knownHostsName(h.address, h.port)),
    signal: request.signal,
  });
  const pinnedNames = new Set(pins.map((p) => p.name));
  const scanned = new Map<string, Pin[]>();
  for (const host of ssh) {
    const name = knownHostsName(host.address, host.port);
    const answer = presented.get(host.name) ?? { unreachable: `${name} was not asked` };
    const ca = caOf.get(name);
    if ('unreachable' in answer) result.unreachable.push({ host: host.name, detail: answer.unreachable });
    else if (ca !== undefined) {
      const problem = certificateProblem(ca, answer.keys, host.address, Date.now() / 1000);
      if (problem === undefined) result.matching.push(host);
      else result.mismatches.push({ host: host.name, detail: `${name}: ${problem}` });
    } else if (!pinnedNames.has(name))
      result.unreachable.push({ host: host.name, detail: `${name} has no pinned host key: onboard it first` });
    else scanned.set(name, answer.keys);
  }
  const changed = new Set(reconcilePins({ current: pins, scanned, rotate: new Set() }).changed.map((c) => c.name));
  for (const host of ssh) {
    const name = knownHostsName(host.address, host.port);
    if (!scanned.has(name)) continue;
    if (changed.has(name))
      result.mismatches.push({ host: host.name, detail: `${name} presents a key other than its pin` });
    else result.matching.push(host);
  }
  return result;
}

function taskResults(events: readonly { event: string }[]): TaskResult[] {
  return events
    .filter((e): e is TaskResultEvent => e.event === 'result')
    .map((e) => ({
      host: e.host,
      task: e.task,
      status: e.status,
      ...(e.msg !== undefined ? { msg: e.msg } : {}),
      ...(e.diff !== undefined ? { diff: e.diff } : {}),
      ...(e.ignored !== undefined ? { ignored: e.ignored } : {}),
    }));
}

// ansible-playbook: 0 all fine, 2 a host failed, 4 a host unreachable; anything else is the run itself failing.
const PLAY_ANSWERED = new Set([0, 2, 4]);

/** What a configuration check needs: the play, and what the play needs to run. */
export type ConfigurationCheckRequest = Pick<
  DriftRequest,
  | 'name'
  | 'playbook'
  | 'remoteUser'
  | 'fleetKeyPath'
  | 'sealKey'
  | 'runSecrets'
  | 'secrets'
  | 'info'
  | 'onOutput'
  | 'onEvent'
  | 'signal'
>;

/**
 * The configuration half alone, for the preview before approval: the
 * check-mode play against the hosts tf:<name> names now. Undefined when it
 * names none yet (a first apply) — there is nothing to preview.
 */
export async function previewConfiguration(
  app: AppContext,
  request: ConfigurationCheckRequest,
): Promise<ConfigurationDrift | undefined> {
  const snapshot = await app.store.read();
  let inventory: ResolvedInventory;
  try {
    inventory = loadStandingInventory(snapshot, request.name);
  } catch (error) {
    if (
      error instanceof InventoryUnusableError &&
      (error.reason === 'unregistered' || error.reason === 'not-materialized' || error.reason === 'no-hosts')
    )
      return undefined;
    throw error;
  }
  return checkConfiguration(app, request, inventory, readPins(snapshot));
}

async function checkConfiguration(
  app: AppContext,
  request: ConfigurationCheckRequest,
  inventory: ResolvedInventory,
  pins: Pin[],
): Promise<ConfigurationDrift> {
  const keys = await compareHostKeys(inventory.hosts, pins, request);
  if (keys.mismatches.length > 0) {
    request.info(
      `drift: host key mismatch for ${keys.mismatches.map((m) => m.host).join(', ')}: not re-pinned, not checked`,
    );
  }
  let results: TaskResult[] = [];
  if (keys.matching.length > 0) {
    const { outcome } = await runStandingPlay(app, {
      name: request.name,
      playbook: request.playbook,
      ...(request.remoteUser ? { remoteUser: request.remoteUser } : {}),
      ...(request.fleetKeyPath ? { fleetKeyPath: request.fleetKeyPath } : {}),
      ...(request.sealKey ? { sealKey: request.sealKey } : {}),
      runSecrets: request.runSecrets,
      check: true,
      diff: true,
      onlyHosts: new Set(keys.matching.map((h) => h.name)),
      secrets: request.secrets,
      info: request.info,
      ...(request.onOutput ? { onOutput: request.onOutput } : {}),
      ...(request.onEvent ? { onEvent: request.onEvent } : {}),
      signal: request.signal,
    });
    results = taskResults(outcome.events);
    if (!PLAY_ANSWERED.has(outcome.code) || (outcome.code !== 0 && results.length === 0)) {
      throw new ExocompError('play-failed', `the check-mode play did not run: ${playFailureSummary(outcome)}`, {
        help: 'fix the playbook or its inputs and run drift again',
      });
    }
  }
  return configurationDrift({
    checkedHosts: keys.matching.map((h) => h.name),
    results,
    keyMismatches: keys.mismatches,
    unreachableBeforePlay: keys.unreachable,
  });
}

/** One commit: the run in the workspace's drift history, and the fire of its schedule. Returns the schedule's missed ticks. */
async function record(app: AppContext, request: DriftRequest, report: DriftReport, firedAt: Date): Promise<Date[]> {
  return app.store.update((snapshot) => {
    request.signal?.throwIfAborted();
    const run = driftRunOf(report, {
      ...(request.runUrl ? { runUrl: request.runUrl } : {}),
      ...(request.schedule ? { schedule: request.schedule.name } : {}),
    });
    const writes = new RecordWrites().driftHistory(
      appendDriftRun(readDriftHistory(snapshot, request.name), request.name, run),
    );
    const missed =
      request.schedule === undefined ? [] : addScheduleFire(snapshot, writes, request.schedule, firedAt, app.now());
    return { writes, message: `drift tf:${request.name}: ${run.verdict} — ${run.headline}`, result: missed };
  });
}
