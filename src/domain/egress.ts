/**
 * `--egress <port>`: ports a play declares it needs beyond SSH on 22 (seed 001
 * "Limits worth knowing"). Nothing on a CI runner or a workstation enforces an
 * egress policy, so the declaration is validated, reported, and handed to the
 * play as `exocomp_egress_ports` (a play or a firewall role may act on it).
 */
import { UsageError } from './errors.js';
import { quoteValue } from './names.js';

export const DEFAULT_SSH_PORT = 22;
export const EGRESS_EXTRA_VAR = 'exocomp_egress_ports';

/** The declared ports plus 22, sorted and without duplicates. */
export function parseEgressPorts(values: readonly string[]): number[] {
  const ports = new Set<number>([DEFAULT_SSH_PORT]);
  for (const value of values) {
    const port = /^\d{1,5}$/.test(value) ? Number(value) : NaN;
    if (!Number.isInteger(port) || port < 1 || port > 65535) {
      throw new UsageError(
        `invalid --egress port ${quoteValue(value)}`,
        'give a TCP port number 1-65535; repeat --egress for more ports',
      );
    }
    ports.add(port);
  }
  return [...ports].sort((a, b) => a - b);
}
