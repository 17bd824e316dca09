/**
 * Step 2: probe every SSH host's banner until it answers, bounded by --ssh-wait,
 * then start scanning their keys for onboarding. Never authenticates.
 */
import { ExocompError } from '../../../domain/errors.js';
import { formatDuration } from '../../../domain/duration.js';
import type { ResolvedInventory } from '../../../domain/standing-inventory.js';
import { waitForSsh } from '../../../adapters/ssh.js';
import type { StepContext, StepResult } from './step.js';
import { LookAhead } from '../look-ahead.js';
import { lookAheadToHostKeys, type ScannedHostKeys } from '../../hosts/pins.js';
import { asTheRunReachesIt, loadStandingInventory } from '../../hosts/inventories.js';
import { runReach } from '../../plays/run-inputs.js';
import { countedNames } from '../../../domain/host-list.js';
import { hasBastions, waitThroughBastions } from '../../hosts/jump.js';

/** What the wait saw: how many hosts it waited for, and the scan of their keys once every banner answered. */
export interface SshWaited {
  hostCount: number;
  /** Local hosts, not waited for. */
  skipped: number;
  /** Every host that gave no banner within the bound, with its last reason; empty when all answered. */
  missing: { name: string; line: string }[];
  hostKeys?: LookAhead<ScannedHostKeys>;
}

/**
 * The wait for `inventory`'s banners, started now. It changes nothing, so apply
 * starts it beside the write that records its success, for the ssh-wait step to
 * take (ADR 0018). With `scanKeys` (onboarding follows in this run), the hosts'
 * keys are scanned once every banner answered, while the next hand-over is written.
 */
export function lookAheadToSshWait(
  inventory: ResolvedInventory,
  boundMs: number,
  options: { scanKeys: boolean; interrupt?: AbortSignal | undefined },
): LookAhead<SshWaited> {
  return new LookAhead(
    async (say, signal) => {
      const hosts = inventory.hosts.filter((h) => !h.local);
      const skipped = inventory.hosts.length - hosts.length;
      if (hosts.length === 0) return { hostCount: 0, skipped, missing: [] };
      say.info(`waiting up to ${formatDuration(boundMs)} for ${countedNames(hosts.map((h) => h.name))}`);
      const result = await waitForSsh(
        hosts.map((h) => ({ name: h.name, address: h.address, port: h.port })),
        {
          timeoutMs: boundMs,
          onReady: (host, elapsedMs) => say.info(`${host.name} answered after ${formatDuration(elapsedMs)}`),
          onWaiting: (pending, elapsedMs) => {
            for (const line of stillWaitingLines(pending, elapsedMs, boundMs)) say.info(line);
          },
          signal,
        },
      );
      const missing = result.missing.map((m) => ({
        name: m.name,
        line: `${m.name} (${m.address}:${m.port}: ${m.lastReason})`,
      }));
      // Onboarding pins these keys first: scanning them (no authentication) need not wait for the hand-over's write.
      const hostKeys =
        missing.length === 0 && options.scanKeys ? lookAheadToHostKeys(hosts, options.interrupt) : undefined;
      return { hostCount: hosts.length, skipped, missing, ...(hostKeys ? { hostKeys } : {}) };
    },
    async (waited) => waited.hostKeys?.discard(),
    options.interrupt,
  );
}

export async function sshWaitStep({
  app,
  workflow,
  inputs,
  info,
  warn,
  signal,
  handedOn,
  nextRunsHere,
}: StepContext): Promise<string | StepResult> {
  const inventory = handedOn.sshWait
    ? undefined
    : asTheRunReachesIt(
        handedOn.inventory?.() ?? loadStandingInventory(await app.store.read(), workflow.workspace.name),
        runReach(inputs, workflow),
      );
  if (inventory !== undefined && hasBastions(inventory.hosts)) {
    return waitBehindBastions({ app, workflow, inputs, info, signal, nextRunsHere }, inventory);
  }
  const waiting =
    handedOn.sshWait ??
    lookAheadToSshWait(inventory as ResolvedInventory, workflow.options.sshWaitMs, {
      scanKeys: nextRunsHere,
      interrupt: app.interrupt,
    });
  const { hostCount, skipped, missing, hostKeys } = await waiting.take({ info, warn }, signal);
  if (hostCount === 0) return `no SSH hosts to wait for (${skipped} local)`;
  if (missing.length > 0) throw noBanner(workflow.options.sshWaitMs, missing);
  const detail = `${hostCount} host(s) answered${skipped > 0 ? `, ${skipped} local skipped` : ''}`;
  return { detail, ...(hostKeys ? { handOn: { hostKeys } } : {}) };
}

function noBanner(boundMs: number, missing: readonly { name: string; line: string }[]): ExocompError {
  const names = missing.map((m) => m.name);
  const which = missing.length === 1 ? missing[0]!.line : `${countedNames(names)} (first: ${missing[0]!.line})`;
  return new ExocompError('ssh-wait', `no SSH banner within ${formatDuration(boundMs)} from ${which}`, {
    help: 'check the host booted and its security group/firewall allows the port; resume with a longer --ssh-wait',
    detail: missing.map((m) => m.line).join('\n'),
    hosts: names,
  });
}

/**
 * The wait when hosts sit behind bastions: each bastion's key pinned and one
 * connection opened to it (with the run's bootstrap and fleet keys), then every
 * banner probed through it; the keys are captured before that connection closes.
 */
async function waitBehindBastions(
  { app, workflow, inputs, info, signal, nextRunsHere }: Omit<StepContext, 'warn' | 'handedOn' | 'deferClose'>,
  inventory: ResolvedInventory,
): Promise<string | StepResult> {
  const hosts = inventory.hosts.filter((h) => !h.local);
  const skipped = inventory.hosts.length - hosts.length;
  const boundMs = workflow.options.sshWaitMs;
  info(`waiting up to ${formatDuration(boundMs)} for ${hosts.length} host(s): ${hosts.map((h) => h.name).join(', ')}`);
  const identityFiles = [inputs.bootstrapKeyPath, inputs.fleetKeyPath].filter((key): key is string => !!key);
  const { missing, scanned } = await waitThroughBastions(app, hosts, {
    boundMs,
    rotate: inputs.rotateHostKeys,
    credentials: { identityFiles },
    scanKeys: nextRunsHere,
    say: info,
    signal,
  });
  if (missing.length > 0) throw noBanner(boundMs, missing);
  const detail = `${hosts.length} host(s) answered${skipped > 0 ? `, ${skipped} local skipped` : ''}`;
  if (scanned === undefined) return detail;
  const hostKeys = new LookAhead<ScannedHostKeys>(
    async () => scanned,
    async () => undefined,
  );
  return { detail, handOn: { hostKeys } };
}

const LISTED_SEPARATELY = 5;

/** `web1: no banner yet (connection refused), 40s of 5m` per host; one line for many. */
export function stillWaitingLines(
  pending: { name: string; lastReason?: string }[],
  elapsedMs: number,
  boundMs: number,
): string[] {
  const clock = `${formatDuration(elapsedMs)} of ${formatDuration(boundMs)}`;
  if (pending.length > LISTED_SEPARATELY) {
    return [`${countedNames(pending.map((p) => p.name))} without a banner yet, ${clock}`];
  }
  return pending.map((p) => `${p.name}: no banner yet${p.lastReason ? ` (${p.lastReason})` : ''}, ${clock}`);
}
