/**
 * A private network for bastion tests, built from network namespaces the test
 * creates and removes: `runner` (where the CLI runs), `bastion` with a leg on
 * each side, `private` (the hosts). The runner namespace has no route beyond its
 * link to the bastion, so nothing it sends can leave the machine; every address
 * is in a random /24 of the benchmark range 198.18.0.0/15 (RFC 2544), or a
 * random /64 of the IPv6 ULA range, on links the test made.
 */
import { randomBytes } from 'node:crypto';
import { runProcess } from '../../src/adapters/process.js';

/**
 * An IPv6 address spelled as a workspace may give it but never canonically: all
 * eight groups, four upper-case digits each (`FD12:00AB:0011:0002:0000:0000:0000:0002`).
 * Spelled this way whatever the random prefix, so a test covers the spelling every run.
 */
export function longhand(address6: string): string {
  const [head = '', tail] = address6.split('::');
  const groups = (part: string | undefined) => (part ? part.split(':') : []);
  const missing = 8 - groups(head).length - groups(tail).length;
  const all =
    tail === undefined ? groups(head) : [...groups(head), ...Array<string>(missing).fill('0'), ...groups(tail)];
  return all.map((g) => g.padStart(4, '0').toUpperCase()).join(':');
}

export interface PrivateNetwork {
  readonly runner: string;
  readonly bastion: string;
  readonly private: string;
  /** The bastion's address on the runner's link. */
  readonly bastionOuter: string;
  readonly bastionOuter6: string;
  /** The i-th address on the private link (i ≥ 2; 1 is the bastion's). */
  privateAddress(i: number): string;
  privateAddress6(i: number): string;
  /** Runs a command inside a namespace. */
  exec(ns: string, command: string[]): Promise<{ code: number; stdout: string; stderr: string }>;
  destroy(): Promise<void>;
}

async function ip(args: string[]): Promise<void> {
  const result = await runProcess('ip', args);
  if (result.code !== 0) throw new Error(`ip ${args.join(' ')} failed: ${result.stderr.trim()}`);
}

/** Every namespace of the network exists once this resolves; on failure, those made are removed. */
export async function createPrivateNetwork(privateAddressCount = 4): Promise<PrivateNetwork> {
  const tag = randomBytes(3).toString('hex');
  const runner = `exo-r-${tag}`;
  const bastion = `exo-b-${tag}`;
  const priv = `exo-p-${tag}`;
  const third = randomBytes(1)[0] as number;
  const outer = `198.18.${third}`;
  const inner = `198.19.${third}`;
  // Addresses in canonical form (RFC 5952), as the tests compare them with what exocomp records; longhand() spells
  // one otherwise on purpose.
  const group = () => randomBytes(2).readUInt16BE(0).toString(16);
  const ula = `fd${randomBytes(1).toString('hex')}:${group()}:${group()}`;
  const outer6 = `${ula}:1`;
  const inner6 = `${ula}:2`;
  const made: string[] = [];
  const destroy = async (): Promise<void> => {
    // Deleting a namespace deletes its veth ends, and their peers with them.
    for (const ns of made.reverse()) await runProcess('ip', ['netns', 'delete', ns]);
  };
  const inNs = (ns: string, args: string[]) => ip(['-n', ns, ...args]);
  try {
    for (const ns of [runner, bastion, priv]) {
      await ip(['netns', 'add', ns]);
      made.push(ns);
      await inNs(ns, ['link', 'set', 'lo', 'up']);
    }
    await ip(['-n', runner, 'link', 'add', 'r0', 'type', 'veth', 'peer', 'name', 'b0', 'netns', bastion]);
    await ip(['-n', bastion, 'link', 'add', 'b1', 'type', 'veth', 'peer', 'name', 'p0', 'netns', priv]);
    await inNs(runner, ['addr', 'add', `${outer}.1/24`, 'dev', 'r0']);
    await inNs(runner, ['addr', 'add', `${outer6}::1/64`, 'dev', 'r0', 'nodad']);
    await inNs(bastion, ['addr', 'add', `${outer}.2/24`, 'dev', 'b0']);
    await inNs(bastion, ['addr', 'add', `${outer6}::2/64`, 'dev', 'b0', 'nodad']);
    await inNs(bastion, ['addr', 'add', `${inner}.1/24`, 'dev', 'b1']);
    await inNs(bastion, ['addr', 'add', `${inner6}::1/64`, 'dev', 'b1', 'nodad']);
    for (let i = 2; i < 2 + privateAddressCount; i += 1) {
      await inNs(priv, ['addr', 'add', `${inner}.${i}/24`, 'dev', 'p0']);
      await inNs(priv, ['addr', 'add', `${inner6}::${i}/64`, 'dev', 'p0', 'nodad']);
    }
    for (const [ns, dev] of [
      [runner, 'r0'],
      [bastion, 'b0'],
      [bastion, 'b1'],
      [priv, 'p0'],
    ] as const) {
      await inNs(ns, ['link', 'set', dev, 'up']);
    }
    // The bastion forwards nothing itself: the private hosts are reachable only through its sshd.
    await runProcess('ip', ['netns', 'exec', bastion, 'sysctl', '-qw', 'net.ipv4.ip_forward=0']);
    await runProcess('ip', ['netns', 'exec', bastion, 'sysctl', '-qw', 'net.ipv6.conf.all.forwarding=0']);
  } catch (error) {
    await destroy();
    throw error;
  }
  return {
    runner,
    bastion,
    private: priv,
    bastionOuter: `${outer}.2`,
    bastionOuter6: `${outer6}::2`,
    privateAddress: (i) => `${inner}.${i}`,
    privateAddress6: (i) => `${inner6}::${i}`,
    exec: (ns, command) => runProcess('ip', ['netns', 'exec', ns, ...command]),
    destroy,
  };
}
