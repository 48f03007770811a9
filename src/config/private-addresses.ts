import { BlockList, isIP } from 'node:net';

/**
 * Where a webhook receiver may not resolve unless WEBHOOK_ALLOW_PRIVATE_ADDRESSES is on: IANA's
 * special-purpose ranges (BlockList also matches IPv4-mapped IPv6 forms).
 */
const privateRanges = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 3],
  ['::', 128],
  ['::1', 128],
  ['64:ff9b::', 96],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const) {
  privateRanges.addSubnet(network, prefix, isIP(network) === 4 ? 'ipv4' : 'ipv6');
}

/** True for an IP literal in one of the ranges above ("[::1]" as a URL writes it counts). */
export function isPrivateAddress(address: string): boolean {
  const bare = address.replace(/^\[(.*)\]$/, '$1');
  const family = isIP(bare);
  if (family === 0) return false;
  return privateRanges.check(bare, family === 4 ? 'ipv4' : 'ipv6');
}

/** A URL's host that is private before any DNS: an IP literal in the ranges, or localhost. */
export function namesPrivateHost(url: URL): boolean {
  const host = url.hostname.toLowerCase();
  return host === 'localhost' || host.endsWith('.localhost') || isPrivateAddress(host);
}
