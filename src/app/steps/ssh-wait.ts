/**
 * Step 2: probe every SSH host's banner until it answers, bounded by --ssh-wait,
 * then start scanning their keys for onboarding. Never authenticates.
 */
import { ExocompError } from '../../domain/errors.js';
import { formatDuration } from '../../domain/duration.js';
import { waitForSsh } from '../../adapters/ssh.js';
import type { StepContext, StepResult } from './step.js';
import { lookAheadToHostKeys } from '../pins.js';
import { loadStandingInventory } from '../inventories.js';

export async function sshWaitStep({ app, workflow, info, signal, handedOn }: StepContext): Promise<string | StepResult> {
  const inventory = handedOn.inventory?.() ?? loadStandingInventory(await app.store.read(), workflow.workspace.name);
  const hosts = inventory.hosts.filter((h) => !h.local);
  const skipped = inventory.hosts.length - hosts.length;
  if (hosts.length === 0) return `no SSH hosts to wait for (${skipped} local)`;
  info(`waiting up to ${formatDuration(workflow.options.sshWaitMs)} for ${hosts.length} host(s): ${hosts.map((h) => h.name).join(', ')}`);
  const result = await waitForSsh(
    hosts.map((h) => ({ name: h.name, address: h.address, port: h.port })),
    {
      timeoutMs: workflow.options.sshWaitMs,
      onReady: (host, elapsedMs) => info(`${host.name} answered after ${formatDuration(elapsedMs)}`),
      onWaiting: (pending, elapsedMs) => {
        for (const line of stillWaitingLines(pending, elapsedMs, workflow.options.sshWaitMs)) info(line);
      },
      signal,
    },
  );
  if (result.missing.length > 0) {
    const names = result.missing.map((m) => `${m.name} (${m.address}:${m.port}: ${m.lastReason})`).join(', ');
    throw new ExocompError('ssh-wait', `no SSH banner within ${formatDuration(workflow.options.sshWaitMs)} from ${names}`, {
      help: 'check the host booted and its security group/firewall allows the port; resume with a longer --ssh-wait',
    });
  }
  const detail = `${hosts.length} host(s) answered${skipped > 0 ? `, ${skipped} local skipped` : ''}`;
  // Onboarding pins these keys first: scanning them (no authentication) need not wait for the hand-over's write.
  return { detail, handOn: { hostKeys: lookAheadToHostKeys(hosts, app.interrupt) } };
}

const LISTED_SEPARATELY = 5;

/** `web1: no banner yet (connection refused), 40s of 5m` per host; one line for many. */
export function stillWaitingLines(pending: { name: string; lastReason?: string }[], elapsedMs: number, boundMs: number): string[] {
  const clock = `${formatDuration(elapsedMs)} of ${formatDuration(boundMs)}`;
  if (pending.length > LISTED_SEPARATELY) {
    const shown = pending
      .slice(0, LISTED_SEPARATELY)
      .map((p) => p.name)
      .join(', ');
    return [`${pending.length} hosts without a banner yet (${shown}, …), ${clock}`];
  }
  return pending.map((p) => `${p.name}: no banner yet${p.lastReason ? ` (${p.lastReason})` : ''}, ${clock}`);
}
