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
import { loadStandingInventory } from '../../hosts/inventories.js';
import { countedNames } from '../../../domain/host-list.js';

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
  info,
  warn,
  signal,
  handedOn,
  nextRunsHere,
}: StepContext): Promise<string | StepResult> {
  const waiting =
    handedOn.sshWait ??
    lookAheadToSshWait(
      handedOn.inventory?.() ?? loadStandingInventory(await app.store.read(), workflow.workspace.name),
      workflow.options.sshWaitMs,
      {
        scanKeys: nextRunsHere,
        interrupt: app.interrupt,
      },
    );
  const { hostCount, skipped, missing, hostKeys } = await waiting.take({ info, warn }, signal);
  if (hostCount === 0) return `no SSH hosts to wait for (${skipped} local)`;
  if (missing.length > 0) {
    const names = missing.map((m) => m.name);
    throw new ExocompError(
      'ssh-wait',
      `no SSH banner within ${formatDuration(workflow.options.sshWaitMs)} from ${missing.length === 1 ? missing[0]!.line : `${countedNames(names)} (first: ${missing[0]!.line})`}`,
      {
        help: 'check the host booted and its security group/firewall allows the port; resume with a longer --ssh-wait',
        detail: missing.map((m) => m.line).join('\n'),
        hosts: names,
      },
    );
  }
  const detail = `${hostCount} host(s) answered${skipped > 0 ? `, ${skipped} local skipped` : ''}`;
  return { detail, ...(hostKeys ? { handOn: { hostKeys } } : {}) };
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
