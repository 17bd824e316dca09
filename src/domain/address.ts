/**
 * One spelling per IP address. ssh rewrites a literal address to its own
 * canonical text before it looks the host key up (`ssh -G` shows it: an
 * inventory's `FD9F:DBA8:0011:2::2` becomes `fd9f:dba8:11:2::2`), so a pin, a
 * known_hosts name, an ssh_config `Host` or an ansible_host in any other
 * spelling misses. Addresses are rewritten to that text when an inventory or a
 * bastion is read, and everything after uses it.
 */
import { isIPv4, isIPv6, SocketAddress } from 'node:net';

// What inet_aton (which ssh's getaddrinfo uses for a numeric host) reads as an IPv4 address: one to four parts,
// each decimal, octal with a leading 0, or hex with 0x.
const INET_ATON_FORM = /^(?:0x[0-9a-f]*|\d+)(?:\.(?:0x[0-9a-f]*|\d+)){0,3}$/i;

/**
 * The address as ssh spells it: an IPv6 address in RFC 5952 form (lower case,
 * no leading zeros, the longest run of zero groups as `::`), with ssh's own
 * mixed notation for IPv4-mapped addresses (`::ffff:192.0.2.1`); a zone
 * (`%eth0`) is kept as given. An IPv4 address or a DNS name is returned as it
 * is. Formatted by node's SocketAddress (libuv's inet_ntop, the ISC code glibc
 * also uses, so the text is byte for byte what ssh derives); the WHATWG URL
 * serialiser would write `::ffff:c000:201` there, which ssh never looks up.
 */
export function canonicalAddress(address: string): string {
  const zoneAt = address.indexOf('%');
  const bare = zoneAt === -1 ? address : address.slice(0, zoneAt);
  if (!isIPv6(bare)) return address;
  return new SocketAddress({ address: bare, family: 'ipv6' }).address + (zoneAt === -1 ? '' : address.slice(zoneAt));
}

/**
 * Why ssh would read `address` as an IPv4 address other than it looks, or
 * undefined. `010.0.0.1` is 8.0.0.1 to ssh (a leading 0 is octal), `127.1` is
 * 127.0.0.1 and `12345` is 0.0.48.57: refused rather than rewritten, as the
 * meaning the writer had in mind cannot be known.
 */
export function ambiguousIpv4(address: string): string | undefined {
  if (!INET_ATON_FORM.test(address) || isIPv4(address)) return undefined;
  return 'ssh reads it as a numeric IPv4 address, but it is not written as four decimal numbers without leading zeros (a leading 0 is octal, 0x hex, and missing parts are filled in)';
}
