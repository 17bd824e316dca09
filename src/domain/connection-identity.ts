/**
 * Which SSH connection a control socket, or any other per-connection file,
 * stands for. OpenSSH's `%C` hashes host, port and user concatenated with no
 * separator, so 127.0.1.1 port 2222 and 127.0.1.122 port 22 (same user) share
 * one socket and a play meant for one host rides the other's connection without
 * its host key being checked. Here every part is length-prefixed (the port is
 * digits between two separators), so two different connections never have the
 * same encoding, and the name is a hash of that encoding.
 */
import { createHash } from 'node:crypto';

export interface ConnectionEndpoint {
  address: string;
  port: number;
  /** Absent: whatever user ssh picks (the same for every host of one run). */
  user?: string | undefined;
}

/** Hex characters of the SHA-256 kept: 160 bits, and a socket path that still fits sun_path (107 bytes). */
export const CONNECTION_ID_LENGTH = 40;

/** `<len>:<address>,<port>,<len>:<user>`: one reading only (addresses and user names are ASCII, checked by inventory.ts). */
export function connectionEncoding({ address, port, user = '' }: ConnectionEndpoint): string {
  return `${address.length}:${address},${port},${user.length}:${user}`;
}

/** The name of the connection's control socket (and of anything else kept per connection). */
export function connectionId(endpoint: ConnectionEndpoint): string {
  return createHash('sha256').update(connectionEncoding(endpoint)).digest('hex').slice(0, CONNECTION_ID_LENGTH);
}

/**
 * The same name computed by ansible for each task, from the connection variables
 * it connects with (the templated `ansible_ssh_args` of ansible.ts): ansible
 * templates connection variables per host, with a delegated host's own
 * variables when a task is delegated. An unset `ansible_user` is the empty
 * user, as above. Kept identical to connectionId (test/adapters/connection-identity.test.ts).
 */
export const CONNECTION_ID_TEMPLATE = [
  '{% set h = (ansible_host | default(inventory_hostname)) | string %}',
  '{% set p = (ansible_port | default(22)) | int | string %}',
  "{% set u = (ansible_user | default('')) | string %}",
  "{{ (((h | length | string) ~ ':' ~ h ~ ',' ~ p ~ ',' ~ (u | length | string) ~ ':' ~ u) | hash('sha256'))" +
    `[:${CONNECTION_ID_LENGTH}] }}`,
].join('');
