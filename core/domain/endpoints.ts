/**
 * Which of a cloud's endpoints may become the server a profile's access provider names — the address
 * consumers send their credentials to — and the one spelling it is written in. Pure: the host is judged as
 * the URL parser reads it, never looked up.
 */
import { foldCase } from './naming.ts';

/** v1alpha2's limit on an access provider's `cluster.server`. */
const MAX_SERVER_LENGTH = 2048;

/**
 * Host names that only mean something inside a cluster or on one machine: never a member's API server. A `svc`
 * label anywhere (`<service>.<namespace>.svc.<cluster domain>`, whatever the cluster's domain), `cluster.local`,
 * `localhost`, `localdomain`.
 */
const LOCAL_NAMES = /(^|\.)(svc|cluster\.local|localhost|localdomain)$|(^|\.)svc\./;
/**
 * The clouds' instance metadata servers by name: Google's two, and the names AWS's resolver gives
 * 169.254.169.254 (single-label names, `metadata` and `instance-data` among them, are refused anyway).
 */
const METADATA_NAMES =
  /^(metadata\.google\.internal|metadata\.goog|instance-data(\.ec2|\.[a-z0-9-]+\.compute)\.internal)$/;

/** IPv4 ranges no server is in: [first address, prefix length]. */
const REFUSED_IPV4: ReadonlyArray<readonly [number, number]> = [
  [ipv4Number('0.0.0.0'), 8], // "this network": the unspecified address and what stands for this host
  [ipv4Number('127.0.0.0'), 8], // loopback
  [ipv4Number('169.254.0.0'), 16], // link-local, the clouds' metadata server 169.254.169.254 among them
  [ipv4Number('168.63.129.16'), 32], // Azure's platform server (WireServer), in every virtual network
  [ipv4Number('224.0.0.0'), 4], // multicast: no server
  [ipv4Number('240.0.0.0'), 4], // reserved, and the broadcast address 255.255.255.255: no server
];

/**
 * The clouds' instance services over IPv6, in the unique-local range (fc00::/7), which is otherwise kept (private
 * endpoints are there): [first address's groups, prefix length]. AWS keeps fd00:ec2::/64 for what a VPC's instances
 * reach on their own host: the metadata server (::254), the DNS resolver (::253), the time server (::123) and EKS's
 * Pod Identity agent (::23), which hands out a pod's AWS credentials; Google's metadata server is fd20:ce::254.
 */
const REFUSED_IPV6: ReadonlyArray<readonly [readonly number[], number]> = [
  [[0xfd00, 0xec2, 0, 0, 0, 0, 0, 0], 64],
  [[0xfd20, 0xce, 0, 0, 0, 0, 0, 0x254], 128],
];

/** Whether the eight groups `groups` are in the prefix of `first`'s first `bits` bits. */
function inIpv6Range(groups: readonly number[], first: readonly number[], bits: number): boolean {
  return first.every((group, i) => {
    const kept = Math.min(16, Math.max(0, bits - 16 * i));
    const mask = kept === 0 ? 0 : (0xffff << (16 - kept)) & 0xffff;
    return (groups[i]! & mask) === (group & mask);
  });
}

/**
 * IPv6 prefixes of 96 bits whose last 32 bits are an IPv4 address a host or a translator reaches:
 * IPv4-compatible `::a.b.c.d` (which holds `::` and `::1`), IPv4-mapped `::ffff:a.b.c.d`, IPv4-translated
 * `::ffff:0:a.b.c.d`, and NAT64's well-known `64:ff9b::a.b.c.d`.
 */
const IPV4_CARRYING_PREFIXES: ReadonlyArray<readonly number[]> = [
  [0, 0, 0, 0, 0, 0],
  [0, 0, 0, 0, 0, 0xffff],
  [0, 0, 0, 0, 0xffff, 0],
  [0x64, 0xff9b, 0, 0, 0, 0],
];

function ipv4Number(dotted: string): number {
  return dotted.split('.').reduce((n, part) => n * 256 + Number(part), 0);
}

/** The loopback range, allowed only for clouds the configuration reaches on this machine (`canonicalServer`). */
const LOOPBACK_IPV4 = ipv4Number('127.0.0.0');

function inRange(address: number, first: number, bits: number): boolean {
  return Math.floor(address / 2 ** (32 - bits)) === first / 2 ** (32 - bits);
}

function refusedIpv4(address: number, loopback: boolean): boolean {
  if (loopback && inRange(address, LOOPBACK_IPV4, 8)) return false;
  return REFUSED_IPV4.some(([first, bits]) => inRange(address, first, bits));
}

/** The eight 16-bit groups of an IPv6 address as the URL parser writes it (hex groups, at most one `::`). */
function ipv6Groups(address: string): number[] | undefined {
  const halves = address.split('::');
  if (halves.length > 2) return undefined;
  const groups = (text: string | undefined) => (text ? text.split(':').map((g) => parseInt(g, 16)) : []);
  const head = groups(halves[0]);
  const tail = groups(halves[1]);
  const all =
    halves.length === 2 ? [...head, ...Array<number>(8 - head.length - tail.length).fill(0), ...tail] : head;
  return all.length === 8 && all.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? all : undefined;
}

function refusedIpv6(address: string, loopback: boolean): boolean {
  const groups = ipv6Groups(address);
  if (!groups) return true;
  if (loopback && groups.every((g, i) => g === (i === 7 ? 1 : 0))) return false; // ::1
  if ((groups[0]! & 0xffc0) === 0xfe80) return true; // link-local fe80::/10
  if ((groups[0]! & 0xff00) === 0xff00) return true; // multicast ff00::/8: no server
  if (REFUSED_IPV6.some(([first, bits]) => inIpv6Range(groups, first, bits))) return true;
  // NAT64's local-use prefix 64:ff9b:1::/48 (RFC 8215), whose translator may carry the IPv4 address anywhere
  // its prefix length puts it, and Teredo's 2001::/32, which carries addresses obfuscated: no cloud's server.
  if (groups[0] === 0x64 && groups[1] === 0xff9b && groups[2] === 1) return true;
  if (groups[0] === 0x2001 && groups[1] === 0) return true;
  // 6to4 (2002::/16) reaches the IPv4 address in its next 32 bits.
  if (groups[0] === 0x2002) return refusedIpv4(groups[1]! * 0x10000 + groups[2]!, loopback);
  const carried = IPV4_CARRYING_PREFIXES.some((prefix) => prefix.every((g, i) => groups[i] === g));
  return carried && refusedIpv4(groups[6]! * 0x10000 + groups[7]!, loopback);
}

/** Whether `hostname` (as the URL parser wrote it) is no server's. */
function refusedHost(hostname: string, loopback: boolean): boolean {
  if (hostname.startsWith('[')) return refusedIpv6(hostname.slice(1, -1), loopback);
  // The parser writes every IPv4 address as a dotted quad, and a name that would be one is read as one.
  if (/^\d+\.\d+\.\d+\.\d+$/.test(hostname)) return refusedIpv4(ipv4Number(hostname), loopback);
  // A name: a fully qualified name's trailing dot changes nothing a resolver does with it.
  const name = hostname.replace(/\.+$/, '');
  return !name.includes('.') || LOCAL_NAMES.test(name) || METADATA_NAMES.test(name);
}

/**
 * Whether an address a resolver gave for a server's name (`dns.lookup`'s answer: dotted IPv4, or IPv6 in any
 * spelling, a zone after `%` included) is one no server is at, by the rules `canonicalServer` judges an address
 * written in the server itself. A name is judged without a lookup; this judges what the lookup answers, at
 * connect time, so a name that resolves to loopback or a metadata server is no way round the rules.
 * Anything that is not an address is refused.
 */
export function refusedAddress(address: string, { loopback = false } = {}): boolean {
  // Dotted decimal as a resolver writes it: four parts of 0–255, no leading zero (which another reader takes for octal).
  if (/^((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/.test(address))
    return refusedIpv4(ipv4Number(address), loopback);
  // IPv6: hex groups, colons and an IPv4 tail, then a zone after `%`; nothing the URL parser would read otherwise.
  const [groups = '', ...zone] = address.split('%');
  if (!/^[0-9a-f:.]+$/i.test(groups) || !groups.includes(':') || zone.length > 1) return true;
  let hostname: string;
  try {
    // The URL parser writes every IPv6 spelling (an IPv4 tail, upper case, leading zeros) in one form.
    hostname = new URL(`https://[${groups}]`).hostname;
  } catch {
    return true;
  }
  return refusedIpv6(hostname.slice(1, -1), loopback);
}

/**
 * The server a cloud's endpoint is written as, or undefined when consumers must not be sent there.
 *
 * Accepted: an absolute `https://` URL with a host, no user part (`https://34.76.10.20@evil.example` goes to
 * evil.example), no query or fragment, within v1alpha2's 2048 characters, whose host is neither an in-cluster
 * or single-label name (`kubernetes.default.svc`, `localhost`), nor a metadata server's name
 * (`metadata.google.internal`, `metadata.goog`, `instance-data.ec2.internal`), nor a loopback (127.0.0.0/8, ::1),
 * link-local (169.254.0.0/16, fe80::/10), unspecified (0.0.0.0/8, ::), metadata or platform (169.254.169.254;
 * AWS's instance services fd00:ec2::/64, its metadata server and EKS's Pod Identity agent among them; Google's
 * fd20:ce::254; Azure's 168.63.129.16), multicast, reserved or broadcast (224.0.0.0/3, ff00::/8) address — also
 * as an IPv4-mapped, -compatible, -translated, NAT64 or 6to4 IPv6 address (NAT64's local-use 64:ff9b:1::/48 and
 * Teredo's 2001::/32 are refused whole) — nor port 0. The host is judged as the URL parser reads it, so every spelling of an address (decimal
 * `2130706433`, hex `0x7f000001`, octal `017700000001`, short `127.1`, a trailing dot, upper case, percent-encoding)
 * is judged as the address it spells. Private addresses (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7)
 * are servers: private endpoints are.
 *
 * Written in one canonical form, the URL parser's: `https://`, the host (IDNA's ASCII form for a name, in the
 * case the cloud gave it; dotted decimal for IPv4; compressed lower-case hex in brackets for IPv6), `:port`
 * unless 443, and the path only when there is one — never a trailing `/` alone. A canonical URL comes back
 * as it was.
 *
 * `loopback`: the cloud is one the configuration reaches on this machine (a local emulator, whose clusters
 * run here too): loopback addresses (127.0.0.0/8, ::1) are its servers. Nothing a cloud reports turns it on.
 */
export function canonicalServer(endpoint: string, { loopback = false } = {}): string | undefined {
  if (endpoint.length > MAX_SERVER_LENGTH) return undefined;
  // What no cloud's endpoint holds and the parser would silently drop or reinterpret: controls, spaces, `\`.
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u0020\u007f\\]/.test(endpoint) || /[?#]/.test(endpoint)) return undefined;
  if (!/^https:\/\//i.test(endpoint) || endpoint.slice('https://'.length).split('/')[0]!.includes('@'))
    return undefined;
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'https:' || url.hostname === '' || url.username !== '' || url.password !== '')
    return undefined;
  if (url.search !== '' || url.hash !== '' || url.port === '0' || refusedHost(url.hostname, loopback))
    return undefined;
  // A name keeps the case the cloud gave it (DNS ignores case, and consumers such as Argo CD match servers as
  // exact strings: a profile written before must not change for it); everything else is the parser's.
  const given = /^https:\/\/([^/:]+)/i.exec(endpoint)?.[1];
  const name = !url.hostname.startsWith('[') && !/^\d+\.\d+\.\d+\.\d+$/.test(url.hostname);
  const host = name && given !== undefined && foldCase(given) === url.hostname ? given : url.hostname;
  const server = `https://${host}${url.port ? `:${url.port}` : ''}${url.pathname === '/' ? '' : url.pathname}`;
  return server.length <= MAX_SERVER_LENGTH ? server : undefined;
}

/**
 * Whether `server` is one cpsync writes for a cluster of `provider`: its canonical spelling, a loopback address only
 * for a cloud the configuration reaches on this machine (`localClouds`). What is sent credentials (cpsync's own
 * member connections, the Argo CD subscriber's Secrets) is judged by this, whoever wrote the profile.
 */
export function serverCpsyncWrites(
  server: string,
  provider: string,
  localClouds: readonly string[] = [],
): boolean {
  return canonicalServer(server, { loopback: localClouds.includes(provider) }) === server;
}

/**
 * A server as KEP-4322's `cluster-endpoints.k8s.io` spells it: `host:port`, no scheme (443 when the URL
 * names no port). The access provider keeps the full URL.
 */
export function endpointHostPort(server: string): string {
  const url = new URL(server);
  return `${url.hostname}:${url.port || '443'}`;
}
