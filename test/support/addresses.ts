import { randomInt } from 'node:crypto';
import { createConnection, createServer, type Socket } from 'node:net';
import { scaled } from './time.js';

/**
 * A random address in 127.100.0.1–127.199.255.254. All of 127.0.0.0/8 reaches
 * the loopback interface on Linux, so each test host gets an address of its own
 * and never collides with services on 127.0.0.1.
 */
export function randomLoopbackAddress(): string {
  return `127.${randomInt(100, 200)}.${randomInt(0, 256)}.${randomInt(1, 255)}`;
}

/** True when nothing listens on address:port yet (we can bind it ourselves). */
export function canListen(address: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen({ host: address, port, exclusive: true }, () => {
      server.close(() => resolve(true));
    });
  });
}

/** True when a TCP connection to address:port is accepted. */
export function isPortOpen(address: string, port: number, timeoutMs = 2_000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: address, port });
    const done = (open: boolean) => {
      socket.destroy();
      resolve(open);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** A connection that sends nothing: an sshd counts it as starting up (against MaxStartups) until it closes. */
export function silentConnection(target: { address: string; port: number }): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: target.address, port: target.port }, () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Polls until address:port accepts connections; false when timeoutMs passes first. */
export async function waitForPortOpen(address: string, port: number, timeoutMs = 30_000): Promise<boolean> {
  const deadline = Date.now() + scaled(timeoutMs);
  while (Date.now() < deadline) {
    if (await isPortOpen(address, port)) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return false;
}

/** Reads what an SSH server says first ("SSH-2.0-OpenSSH_…"), or undefined when nothing answers. */
export function readSshBanner(address: string, port: number, timeoutMs = 5_000): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: address, port });
    let received = '';
    const done = (banner: string | undefined) => {
      socket.destroy();
      resolve(banner);
    };
    socket.setTimeout(timeoutMs, () => done(undefined));
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      const end = received.indexOf('\n');
      if (end >= 0) done(received.slice(0, end).replace(/\r$/, ''));
    });
    socket.once('error', () => done(undefined));
    socket.once('close', () => done(undefined));
  });
}

/**
 * Two loopback endpoints whose address and port, written one after the other,
 * read the same: 127.A.B.1 port 2222 and 127.A.B.12 port 222 both read
 * "127.A.B.12222". OpenSSH's %C hashes that concatenation (with the user), so
 * they collide by construction.
 */
export function collidingLoopbackPair(): [{ address: string; port: number }, { address: string; port: number }] {
  const prefix = `127.${randomInt(100, 200)}.${randomInt(0, 256)}`;
  return [
    { address: `${prefix}.1`, port: 2222 },
    { address: `${prefix}.12`, port: 222 },
  ];
}

/** Distinct free loopback addresses, chosen before any host listens (so two hosts never draw the same one). */
export async function freeAddresses(count: number): Promise<string[]> {
  const addresses = new Set<string>();
  while (addresses.size < count) {
    const address = randomLoopbackAddress();
    if (!addresses.has(address) && (await canListen(address, 22))) addresses.add(address);
  }
  return [...addresses];
}
