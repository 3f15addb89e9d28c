import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { serverProblem } from '../../../../adapters/credentials/target.ts';
import { PROVIDERS } from '../../../../core/domain/model/observedCluster.ts';
import {
  canonicalServer,
  endpointHostPort,
  refusedAddress as refusedAnswer,
} from '../../../../core/domain/endpoints.ts';

const RUNS = 500;

describe('endpoints: what may be a server', () => {
  const refused: Array<[string, string]> = [
    // The rules a server has always had.
    ['http://34.76.10.20', 'not https'],
    ['https://34.76.10.20@evil.example.com', 'a user part'],
    ['https://user:pass@api.example.com', 'a user and password'],
    ['https://@api.example.com', 'an empty user part'],
    ['https://kubernetes.default.svc', 'an in-cluster name'],
    ['https://kubernetes.default.svc.cluster.local:443', 'an in-cluster name'],
    ['https://argocd-server.argocd.svc.k8s.internal', 'an in-cluster name under a cluster domain of its own'],
    [
      'https://api.team.SVC.corp.example.com',
      'an in-cluster name under a cluster domain of its own, in capitals',
    ],
    ['https://kubernetes', 'a single-label name'],
    ['https://api.example.com/?next=https://evil.example.com', 'a query'],
    ['https://api.example.com/#x', 'a fragment'],
    [`https://api.example.com/${'a'.repeat(2048)}`, 'over 2048 characters'],
    ['javascript:alert(1)', 'another scheme'],
    ['file:///etc/passwd', 'another scheme'],
    ['https://', 'no host'],
    ['https://api.exa\tmple.com', 'a tab the parser would drop'],
    ['https://api.exa\nmple.com', 'a newline the parser would drop'],
    [' https://api.example.com', 'a space the parser would trim'],
    ['https://34.76.10.20\\@evil.example.com', 'a backslash the parser reads as a slash'],
    // Loopback, in every spelling.
    ['https://127.0.0.1', 'loopback'],
    ['https://127.255.255.254:6443', 'loopback, any of 127/8'],
    ['https://2130706433', 'loopback as a decimal number'],
    ['https://0x7f000001', 'loopback in hex'],
    ['https://0X7F000001', 'loopback in upper-case hex'],
    ['https://017700000001', 'loopback in octal'],
    ['https://0177.0.0.1', 'loopback with an octal part'],
    ['https://0x7f.1', 'loopback, hex and short'],
    ['https://127.1', 'loopback, short'],
    ['https://127.0.1', 'loopback, short'],
    ['https://127.0.0.1.', 'loopback with a trailing dot'],
    ['https://%31%32%37.0.0.1', 'loopback percent-encoded'],
    ['https://１２７．０．０．１', 'loopback in full-width digits'],
    ['https://127。0。0。1', 'loopback with ideographic full stops'],
    ['https://localhost', 'localhost'],
    ['https://LOCALHOST.', 'localhost, upper case with a trailing dot'],
    ['https://api.localhost', 'a name under localhost'],
    ['https://localhost.localdomain', 'localhost.localdomain'],
    ['https://loc%61lhost.', 'localhost percent-encoded'],
    ['https://[::1]', 'IPv6 loopback'],
    ['https://[0:0:0:0:0:0:0:1]:443', 'IPv6 loopback, uncompressed'],
    ['https://[::ffff:127.0.0.1]', 'loopback as an IPv4-mapped IPv6 address'],
    ['https://[::ffff:7f00:1]', 'loopback as an IPv4-mapped IPv6 address in hex'],
    ['https://[::127.0.0.1]', 'loopback as an IPv4-compatible IPv6 address'],
    ['https://[::ffff:0:127.0.0.1]', 'loopback as an IPv4-translated IPv6 address'],
    ['https://[64:ff9b::127.0.0.1]', 'loopback through NAT64'],
    // Unspecified.
    ['https://0.0.0.0', 'the unspecified address'],
    ['https://0', 'the unspecified address, short'],
    ['https://0.1.2.3', 'this network'],
    ['https://[::]', 'the IPv6 unspecified address'],
    ['https://[::ffff:0.0.0.0]', 'the unspecified address, mapped'],
    // Link-local and the metadata servers.
    ['https://169.254.169.254', "the clouds' metadata server"],
    ['https://2852039166', 'the metadata server as a decimal number'],
    ['https://0xa9.0xfe.0xa9.0xfe', 'the metadata server in hex parts'],
    ['https://169.254.1.1', 'link-local'],
    ['https://[fe80::1]', 'IPv6 link-local'],
    ['https://[FEBF::1]', 'IPv6 link-local, the top of fe80::/10'],
    ['https://[fd00:ec2::254]', "AWS's IPv6 metadata server"],
    ['https://[fd00:ec2::23]', "EKS's Pod Identity agent over IPv6 (a pod's AWS credentials)"],
    ['https://[fd00:ec2::253]', "AWS's IPv6 DNS resolver"],
    ['https://[fd20:ce::254]', "Google's IPv6 metadata server"],
    ['https://[fd00:0ec2:0:0:0:0:0:0254]', "AWS's IPv6 metadata server, uncompressed"],
    ['https://[::ffff:169.254.169.254]', 'the metadata server, mapped'],
    ['https://[::ffff:a9fe:a9fe]', 'the metadata server, mapped, in hex'],
    ['https://metadata.google.internal', "Google's metadata server"],
    ['https://METADATA.Google.Internal.', "Google's metadata server, in capitals with a trailing dot"],
    ['https://metadata', "Google's metadata server's short name"],
    ['https://metadata.goog', "Google's metadata server's other name"],
    ['https://instance-data', "AWS's metadata server's short name"],
    ['https://instance-data.ec2.internal', "AWS's metadata server by the VPC resolver's name"],
    [
      'https://Instance-Data.us-west-2.compute.internal.',
      "AWS's metadata server by a region's resolver name",
    ],
    ['https://168.63.129.16', "Azure's platform server (WireServer)"],
    ['https://2822734096', "Azure's platform server as a decimal number"],
    // IPv6 forms that reach an IPv4 address, or no server.
    ['https://[2002:7f00:1::1]', 'loopback through 6to4'],
    ['https://[2002:a9fe:a9fe::]', 'the metadata server through 6to4'],
    ['https://[64:ff9b:1::a9fe:a9fe]', "the metadata server through NAT64's local-use prefix"],
    [
      'https://[64:ff9b:1:7f00:1::]',
      "NAT64's local-use prefix, the IPv4 address where a /48 translator puts it",
    ],
    ['https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]', 'a Teredo address'],
    ['https://[ff02::1]', 'IPv6 multicast'],
    // Multicast, reserved, broadcast, port 0.
    ['https://224.0.0.1', 'multicast'],
    ['https://239.255.255.250', 'multicast, the top of 224/4'],
    ['https://240.0.0.1', 'reserved'],
    ['https://255.255.255.255', 'the broadcast address'],
    ['https://api.example.com:0', 'port 0'],
  ];
  for (const [endpoint, why] of refused)
    it(`refuses ${JSON.stringify(endpoint)} (${why})`, () => {
      assert.equal(canonicalServer(endpoint), undefined);
    });

  const accepted: Array<[string, string]> = [
    // Already canonical: as it came, byte for byte.
    ['https://34.76.10.20', 'https://34.76.10.20'],
    [
      'https://payments1234.gr7.us-east-1.eks.amazonaws.com',
      'https://payments1234.gr7.us-east-1.eks.amazonaws.com',
    ],
    ['https://web-dns.hcp.westeurope.azmk8s.io', 'https://web-dns.hcp.westeurope.azmk8s.io'],
    ['https://api.example.com:6443', 'https://api.example.com:6443'],
    ['https://rancher.example.com/k8s/clusters/c-m-1', 'https://rancher.example.com/k8s/clusters/c-m-1'],
    ['https://[2001:db8::1]', 'https://[2001:db8::1]'],
    // Private ranges are servers: private endpoints are.
    ['https://10.0.0.2', 'https://10.0.0.2'],
    ['https://172.16.0.1', 'https://172.16.0.1'],
    ['https://172.31.255.254', 'https://172.31.255.254'],
    ['https://192.168.1.10', 'https://192.168.1.10'],
    ['https://100.64.0.1', 'https://100.64.0.1'],
    ['https://[fd00::1]', 'https://[fd00::1]'],
    ['https://[fc00::1]', 'https://[fc00::1]'],
    // The neighbours of the clouds' IPv6 instance services (fd00:ec2::/64, fd20:ce::254).
    ['https://[fd00:ec2:0:1::254]', 'https://[fd00:ec2:0:1::254]'],
    ['https://[fd00:ec3::23]', 'https://[fd00:ec3::23]'],
    ['https://[fd20:ce::253]', 'https://[fd20:ce::253]'],
    ['https://[fd20:ce::1:254]', 'https://[fd20:ce::1:254]'],
    // The neighbours of what is refused.
    ['https://1.0.0.0', 'https://1.0.0.0'],
    ['https://126.255.255.255', 'https://126.255.255.255'],
    ['https://128.0.0.0', 'https://128.0.0.0'],
    ['https://169.253.255.255', 'https://169.253.255.255'],
    ['https://169.255.0.0', 'https://169.255.0.0'],
    ['https://[fe7f::1]', 'https://[fe7f::1]'],
    ['https://[fec0::1]', 'https://[fec0::1]'],
    ['https://168.63.129.15', 'https://168.63.129.15'],
    ['https://168.63.129.17', 'https://168.63.129.17'],
    ['https://223.255.255.255', 'https://223.255.255.255'],
    ['https://[2002:224c:a14::1]', 'https://[2002:224c:a14::1]'],
    ['https://[64:ff9b:2::1]', 'https://[64:ff9b:2::1]'],
    ['https://[2001:1::1]', 'https://[2001:1::1]'],
    ['https://[feff::1]', 'https://[feff::1]'],
    ['https://ip-10-0-0-5.ec2.internal', 'https://ip-10-0-0-5.ec2.internal'],
    ['https://metadata.goog.example.com', 'https://metadata.goog.example.com'],
    ['https://[::ffff:34.76.10.20]', 'https://[::ffff:224c:a14]'],
    ['https://metadata.example.com', 'https://metadata.example.com'],
    // Written in the canonical spelling.
    ['https://ABC.gr7.us-east-1.eks.amazonaws.com/', 'https://ABC.gr7.us-east-1.eks.amazonaws.com'],
    ['https://Api.Example.COM:443', 'https://Api.Example.COM'],
    ['HTTPS://api.example.com', 'https://api.example.com'],
    ['https://api.example.com:443/', 'https://api.example.com'],
    ['https://api.example.com:06443/', 'https://api.example.com:6443'],
    ['https://[fd00::1]:443', 'https://[fd00::1]'],
    ['https://[2001:DB8:0:0:0:0:0:1]', 'https://[2001:db8::1]'],
    ['https://575408660', 'https://34.76.10.20'],
    ['https://0x224c0a14', 'https://34.76.10.20'],
    ['https://042.0114.012.024', 'https://34.76.10.20'],
    ['https://10.1', 'https://10.0.0.1'],
    ['https://%33%34.76.10.20', 'https://34.76.10.20'],
    ['https://10.0.0.2.', 'https://10.0.0.2'],
    ['https://bücher.example', 'https://xn--bcher-kva.example'],
    ['https://api.example.com/a/../b', 'https://api.example.com/b'],
  ];
  for (const [endpoint, server] of accepted)
    it(`writes ${JSON.stringify(endpoint)} as ${server}`, () => {
      assert.equal(canonicalServer(endpoint), server);
    });

  it('takes loopback addresses as servers only of a cloud the configuration reaches on this machine, and nothing else it refuses', () => {
    for (const server of ['https://127.0.0.2', 'https://127.0.0.1:6443', 'https://[::1]:8443'])
      assert.equal(canonicalServer(server), undefined, `${server} from a cloud elsewhere`);
    assert.equal(canonicalServer('https://127.0.0.2', { loopback: true }), 'https://127.0.0.2');
    assert.equal(canonicalServer('https://2130706434', { loopback: true }), 'https://127.0.0.2');
    assert.equal(canonicalServer('https://[::1]:8443', { loopback: true }), 'https://[::1]:8443');
    for (const server of [
      'https://169.254.169.254',
      'https://[fd00:ec2::254]',
      'https://0.0.0.0',
      'https://[::]',
      'https://[fe80::1]',
      'https://localhost',
      'https://metadata.google.internal',
      'https://metadata.goog',
      'https://168.63.129.16',
      'https://[2002:a9fe:a9fe::]',
      'https://[64:ff9b:1::7f00:1]',
    ])
      assert.equal(canonicalServer(server, { loopback: true }), undefined, server);
  });

  it('spells the KEP endpoint as host:port, 443 when the server names none', () => {
    assert.equal(endpointHostPort('https://34.76.10.20'), '34.76.10.20:443');
    assert.equal(endpointHostPort('https://api.example.com:6443'), 'api.example.com:6443');
    assert.equal(endpointHostPort('https://[fd00::1]'), '[fd00::1]:443');
  });
});

/** 32-bit IPv4 addresses and their spellings, as a URL parser or a resolver reads them. */
const REFUSED_RANGES: Array<[number, number]> = [
  [0x00000000, 8], // this network
  [0x7f000000, 8], // loopback
  [0xa9fe0000, 16], // link-local
  [0xa83f8110, 32], // Azure's WireServer, 168.63.129.16
  [0xe0000000, 4], // multicast
  [0xf0000000, 4], // reserved, broadcast
];
const inRefusedRange = (address: number) =>
  REFUSED_RANGES.some(([first, bits]) => Math.floor(address / 2 ** (32 - bits)) === first / 2 ** (32 - bits));

const refusedAddress = fc
  .tuple(fc.constantFrom(...REFUSED_RANGES), fc.nat({ max: 2 ** 24 - 1 }))
  .map(([[first, bits], host]) => first + (host % 2 ** (32 - bits)));
const keptAddress = fc.oneof(
  // Private ranges: 10/8, 172.16/12, 192.168/16, 100.64/10.
  fc.nat({ max: 2 ** 24 - 1 }).map((h) => 0x0a000000 + h),
  fc.nat({ max: 2 ** 20 - 1 }).map((h) => 0xac100000 + h),
  fc.nat({ max: 2 ** 16 - 1 }).map((h) => 0xc0a80000 + h),
  fc.nat({ max: 2 ** 22 - 1 }).map((h) => 0x64400000 + h),
  // Any other address.
  fc.nat({ max: 2 ** 32 - 1 }).filter((a) => !inRefusedRange(a)),
);

const octets = (address: number) => [
  address >>> 24,
  (address >>> 16) & 255,
  (address >>> 8) & 255,
  address & 255,
];
const dotted = (address: number) => octets(address).join('.');

type Base = 'decimal' | 'hex' | 'HEX' | 'octal';
const inBase = (n: number, base: Base) =>
  base === 'decimal'
    ? String(n)
    : base === 'hex'
      ? `0x${n.toString(16)}`
      : base === 'HEX'
        ? `0X${n.toString(16).toUpperCase()}`
        : `0${n.toString(8)}`;
const base = fc.constantFrom<Base>('decimal', 'hex', 'HEX', 'octal');

/** Every spelling of `address` that names it: whole numbers, mixed parts, short forms, IPv6 forms. */
const spelling = (address: number) =>
  fc.oneof(
    fc.constant(dotted(address)),
    base.map((b) => inBase(address, b)),
    fc.tuple(base, base, base, base).map((bases) =>
      octets(address)
        .map((o, i) => inBase(o, bases[i]!))
        .join('.'),
    ),
    // a.b.c with c 16 bits; a.b with b 24 bits.
    fc.tuple(base, base, base).map(([x, y, z]) => {
      const [a, b] = octets(address);
      return `${inBase(a!, x)}.${inBase(b!, y)}.${inBase(address & 0xffff, z)}`;
    }),
    fc.tuple(base, base).map(([x, y]) => `${inBase(address >>> 24, x)}.${inBase(address & 0xffffff, y)}`),
    fc.constant(`${dotted(address)}.`),
    fc.constant(`[::ffff:${dotted(address)}]`),
    fc.constant(`[::ffff:${(address >>> 16).toString(16)}:${(address & 0xffff).toString(16)}]`),
    fc.constant(`[0:0:0:0:0:FFFF:${dotted(address)}]`),
    fc.constant(`[::${dotted(address)}]`),
    fc.constant(`[64:ff9b::${dotted(address)}]`),
    // 6to4, with any host part.
    fc
      .nat({ max: 0xffff })
      .map(
        (h) =>
          `[2002:${(address >>> 16).toString(16)}:${(address & 0xffff).toString(16)}::${h.toString(16)}]`,
      ),
    // Percent-encoded, whole.
    fc.constant(
      [...dotted(address)].map((c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`).join(''),
    ),
  );

describe('endpoints: properties', () => {
  it('refuses every spelling of every loopback, link-local, metadata, platform, multicast, reserved and unspecified IPv4 address', () => {
    fc.assert(
      fc.property(
        refusedAddress.chain((address) => spelling(address)),
        fc.constantFrom('', ':443', ':6443', '/', '/api'),
        (host, rest) => {
          assert.equal(canonicalServer(`https://${host}${rest}`), undefined);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('keeps private and public IPv4 addresses, written as the dotted quad, whatever the spelling', () => {
    fc.assert(
      fc.property(keptAddress, (address) => {
        const server = `https://${dotted(address)}`;
        assert.equal(canonicalServer(server), server, 'a canonical server comes back as it was');
        assert.equal(canonicalServer(`https://${inBase(address, 'hex')}/`), server);
        assert.equal(canonicalServer(`https://${address}:443`), server);
      }),
      { numRuns: RUNS },
    );
  });

  it('writes a server whose canonical form is itself (normalising twice changes nothing)', () => {
    const host = fc.oneof(
      keptAddress.chain((a) => spelling(a)),
      refusedAddress.chain((a) => spelling(a)),
      fc.domain(),
      fc.string({ unit: 'binary', maxLength: 30 }),
    );
    const endpoint = fc.oneof(
      fc
        .tuple(
          fc.constantFrom('https://', 'HTTPS://', 'http://', ''),
          host,
          fc.constantFrom('', ':443', ':6443', ':0', '/', '/a/b/', '/%7e', '?q', '#f'),
        )
        .map(([scheme, h, rest]) => `${scheme}${h}${rest}`),
      fc.webUrl({ withQueryParameters: true, withFragments: true }),
      fc.string({ unit: 'binary' }),
    );
    fc.assert(
      fc.property(endpoint, (given) => {
        const server = canonicalServer(given);
        if (server === undefined) return;
        assert.equal(canonicalServer(server), server);
        assert.ok(server.length <= 2048);
        const url = new URL(server);
        assert.equal(url.protocol, 'https:');
        assert.equal(`${url.username}${url.password}${url.search}${url.hash}`, '');
      }),
      { numRuns: RUNS * 4 },
    );
  });
});

/** An address as a resolver (getaddrinfo, `dns.lookup`) writes it: dotted IPv4, or IPv6 as inet_ntop or a zone gives it. */
const resolverSpelling = (address: number) =>
  fc.oneof(
    fc.constant(dotted(address)),
    fc.constant(`::ffff:${dotted(address)}`),
    fc.constant(`::FFFF:${(address >>> 16).toString(16)}:${(address & 0xffff).toString(16)}`),
    fc.constant(`0:0:0:0:0:ffff:${dotted(address)}`),
    fc.constant(`64:ff9b::${dotted(address)}`),
    fc.constant(`2002:${(address >>> 16).toString(16)}:${(address & 0xffff).toString(16)}::1%eth0`),
  );

describe("endpoints: what a server's name resolves to", () => {
  it('refuses every answer a resolver can give for a refused IPv4 address, and keeps every kept one', () => {
    fc.assert(
      fc.property(
        fc.oneof(refusedAddress, keptAddress).chain((a) => fc.tuple(fc.constant(a), resolverSpelling(a))),
        ([address, answer]) => {
          assert.equal(refusedAnswer(answer), inRefusedRange(address), answer);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('judges an answer as the same address written as the server is judged', () => {
    const group = fc.oneof(
      fc.constantFrom(0, 1, 0xffff, 0x64, 0xff9b, 0x2002, 0x2001, 0xfe80, 0xff02, 0xfd00, 0xec2, 0x254),
      fc.nat({ max: 0xffff }),
    );
    const ipv6 = fc
      .array(group, { minLength: 8, maxLength: 8 })
      .map((groups) => groups.map((g) => g.toString(16)).join(':'));
    fc.assert(
      fc.property(
        fc.oneof(fc.nat({ max: 2 ** 32 - 1 }).map(dotted), ipv6),
        fc.boolean(),
        (answer, loopback) => {
          const server = answer.includes(':') ? `https://[${answer}]` : `https://${answer}`;
          assert.equal(
            refusedAnswer(answer, { loopback }),
            canonicalServer(server, { loopback }) === undefined,
            answer,
          );
        },
      ),
      { numRuns: RUNS * 2 },
    );
  });

  it('keeps loopback answers only for a cloud on this machine, and refuses what is not an address', () => {
    for (const answer of ['127.0.0.1', '127.3.2.1', '::1', '::ffff:127.0.0.1', '0:0:0:0:0:0:0:1']) {
      assert.equal(refusedAnswer(answer), true, answer);
      assert.equal(refusedAnswer(answer, { loopback: true }), false, answer);
    }
    for (const answer of [
      '169.254.169.254',
      'fd00:ec2::254',
      '0.0.0.0',
      '::',
      'fe80::1%eth0',
      '168.63.129.16',
    ])
      assert.equal(refusedAnswer(answer, { loopback: true }), true, answer);
    for (const answer of [
      '',
      'localhost',
      'member.example.com',
      '256.1.1.1',
      '1.2.3',
      '[::1]',
      'fd00::1::2',
      '0177.0.0.1',
      '034.76.10.20',
      '::1]@[2600::1',
      '2600::1]/x',
      '2600::1]#',
      'fd00::1%a%b',
    ])
      assert.equal(refusedAnswer(answer), true, JSON.stringify(answer));
    for (const answer of ['34.76.10.20', '10.0.0.1', 'fd00::1', '2600:1f18::1'])
      assert.equal(refusedAnswer(answer), false, answer);
  });
});

/** The clouds' IPv6 instance services: AWS's fd00:ec2::/64 (any address in it), Google's fd20:ce::254. */
const instanceService = fc.oneof(
  fc
    .array(fc.nat({ max: 0xffff }), { minLength: 4, maxLength: 4 })
    .map((host) => [0xfd00, 0xec2, 0, 0, ...host]),
  fc.constantFrom([0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254], [0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x23]),
  fc.constant([0xfd20, 0xce, 0, 0, 0, 0, 0, 0x254]),
);
/** Addresses beside them, in the unique-local range kept for private endpoints. */
const besideInstanceService = fc.oneof(
  fc
    .tuple(
      fc.integer({ min: 1, max: 0xffff }),
      fc.array(fc.nat({ max: 0xffff }), { minLength: 4, maxLength: 4 }),
    )
    .map(([subnet, host]) => [0xfd00, 0xec2, 0, subnet, ...host]),
  fc
    .integer({ min: 0, max: 0xffff })
    .filter((g) => g !== 0x254)
    .map((last) => [0xfd20, 0xce, 0, 0, 0, 0, 0, last]),
  fc.integer({ min: 1, max: 0xffff }).map((g) => [0xfd20, 0xce, 0, 0, 0, 0, g, 0x254]),
);

/**
 * Every way an IPv6 address of eight `groups` may be written: each group in either case, with leading zeros or
 * without, one run of zero groups (any of them, whole or in part) written `::`, the last 32 bits as an IPv4 tail.
 */
const ipv6Spelling = (groups: readonly number[]) =>
  fc
    .tuple(
      fc.array(fc.boolean(), { minLength: 8, maxLength: 8 }),
      fc.array(fc.nat({ max: 3 }), { minLength: 8, maxLength: 8 }),
      fc.boolean(),
      fc.nat({ max: 7 }),
      fc.nat({ max: 7 }),
    )
    .map(([upper, zeros, tail, from, length]) => {
      const hex = groups.map((g, i) => {
        const digits = g.toString(16);
        const padded = digits.padStart(Math.min(4, digits.length + zeros[i]!), '0');
        return upper[i] ? padded.toUpperCase() : padded;
      });
      const last = tail
        ? [`${groups[6]! >> 8}.${groups[6]! & 255}.${groups[7]! >> 8}.${groups[7]! & 255}`]
        : hex.slice(6);
      const head = hex.slice(0, 6);
      const all = [...head, ...last];
      // A run of zero groups within the hex part, written `::` (at most one).
      const hexCount = tail ? 6 : 8;
      let end = from;
      while (end < hexCount && end - from < length + 1 && groups[end] === 0) end += 1;
      if (end === from) return all.join(':');
      return `${all.slice(0, from).join(':')}::${all.slice(from + (end - from)).join(':')}`;
    });

describe("endpoints: the clouds' IPv6 instance services", () => {
  it('refuses every spelling of every address of them, as a server, as a name’s answer and as a credential target; keeps their neighbours', () => {
    fc.assert(
      fc.property(
        fc
          .oneof(
            instanceService.map((g) => ({ groups: g, refused: true })),
            besideInstanceService.map((g) => ({ groups: g, refused: false })),
          )
          .chain(({ groups, refused }) => fc.tuple(fc.constant(refused), ipv6Spelling(groups))),
        fc.constantFrom('', ':443', ':6443', '/', '/api'),
        fc.constantFrom('', '%eth0'),
        ([refused, written], rest, zone) => {
          const server = `https://[${written}]${rest}`;
          assert.equal(canonicalServer(server) === undefined, refused, server);
          assert.equal(canonicalServer(server, { loopback: true }) === undefined, refused, server);
          assert.equal(refusedAnswer(`${written}${zone}`), refused, `${written}${zone}`);
          for (const target of [
            { provider: 'gke' as const },
            { provider: 'eks' as const, cluster: 'c', region: 'us-east-1' },
          ])
            if (refused) assert.ok(serverProblem(server, target), `${server} for ${target.provider}`);
        },
      ),
      { numRuns: RUNS },
    );
  });
});

describe('where an AKS token may go', () => {
  const aks = { provider: 'aks' as const };
  const label = fc.stringMatching(/^[a-z][a-z0-9-]{0,20}[a-z0-9]$/);
  const region = fc.constantFrom('westeurope', 'usgovvirginia', 'usgovarizona', 'chinaeast2', 'chinanorth3');

  it("sends it under AKS's own zones, in each cloud, public and private clusters", () => {
    fc.assert(
      fc.property(label, region, fc.constantFrom('hcp', 'privatelink'), (name, at, kind) => {
        for (const zone of ['azmk8s.io', 'cx.prod.service.azk8s.cn', 'cx.aks.containerservice.azure.us'])
          assert.equal(serverProblem(`https://${name}.${kind}.${at}.${zone}`, aks), undefined, zone);
      }),
      { numRuns: RUNS },
    );
  });

  it("never to another service's host in a sovereign cloud's domain, nor to a name that only ends or begins like AKS's", () => {
    const service = fc.constantFrom(
      'openai.azure.us',
      'cognitiveservices.azure.us',
      'eventgrid.azure.us',
      'azurewebsites.us',
      'azure.us',
      'aks.containerservice.azure.us',
      'containerservice.azure.us',
      'service.azk8s.cn',
      'azk8s.cn',
      'mirror.azk8s.cn',
      'chinacloudapp.cn',
    );
    fc.assert(
      fc.property(
        label,
        service,
        fc.constantFrom('', '.evil.example', 'x'),
        fc.boolean(),
        (name, domain, after, upper) => {
          const host = `${name}.${domain}${after}`;
          const server = `https://${upper ? host.toUpperCase() : host}`;
          assert.match(serverProblem(server, aks) ?? '', /is not an AKS endpoint/, server);
        },
      ),
      { numRuns: RUNS },
    );
    for (const server of [
      'https://evilcx.aks.containerservice.azure.us',
      'https://x.cx.aks.containerservice.azure.us.evil.example',
      'https://x.hcp.westeurope.azmk8s.io.evil.example',
      'https://xazmk8s.io',
    ])
      assert.match(serverProblem(server, aks) ?? '', /is not an AKS endpoint/, server);
  });
});

describe('a cloud that runs on this machine (localClouds)', () => {
  /** Loopback addresses, spelled as a kubeconfig may: dotted, one number, hexadecimal, short, IPv6. */
  const loopback = fc.oneof(
    fc
      .tuple(fc.nat(255), fc.nat(255), fc.nat(255))
      .chain(([a, b, c]) =>
        fc.constantFrom(
          `127.${a}.${b}.${c}`,
          String(0x7f000000 + a * 0x10000 + b * 0x100 + c),
          `0x${(0x7f000000 + a * 0x10000 + b * 0x100 + c).toString(16)}`,
        ),
      ),
    fc.constantFrom('127.1', '[::1]', '[0:0:0:0:0:0:0:1]'),
  );
  /** Hosts that are no loopback address: names, other addresses, other clouds' and regions' endpoints. */
  const elsewhere = fc.oneof(
    fc.domain(),
    fc.ipV4().filter((address) => !address.startsWith('127.')),
    fc.constantFrom(
      '169.254.169.254',
      'metadata.google.internal',
      '0a1b.gr7.eu-west-1.eks.amazonaws.com',
      '0a1b.gr7.us-east-1.eks.amazonaws.com',
      '0a1b.gr7.us-east-1.eks.amazonaws.com.evil.example',
      'web-dns-abc123.hcp.westeurope.azmk8s.io',
      'web-dns-abc123.hcp.westeurope.azmk8s.io.evil.example',
    ),
  );
  const target = fc.constantFrom(
    { provider: 'eks' as const, cluster: 'payments', region: 'us-east-1' },
    { provider: 'aks' as const, cluster: 'web' },
    { provider: 'gke' as const, cluster: 'shop' },
  );
  const rest = fc.constantFrom('', ':443', ':6443', '/');

  it('adds its loopback servers and nothing else: any other server is judged as it is for a cloud in the clouds', () => {
    fc.assert(
      fc.property(target, loopback, rest, (to, host, after) => {
        const server = `https://${host}${after}`;
        assert.equal(serverProblem(server, to, [to.provider]), undefined, server);
        assert.ok(serverProblem(server, to), `${server}: refused for a cloud that does not run here`);
        assert.ok(
          serverProblem(
            server,
            to,
            PROVIDERS.filter((p) => p !== to.provider),
          ),
          server,
        );
      }),
      { numRuns: RUNS },
    );
    fc.assert(
      fc.property(target, elsewhere, rest, (to, host, after) => {
        const server = `https://${host}${after}`;
        assert.equal(serverProblem(server, to, [to.provider]), serverProblem(server, to), server);
      }),
      { numRuns: RUNS },
    );
    // Named: an EKS token for another region's or another cloud's server stays refused with EKS local.
    const eks = { provider: 'eks' as const, cluster: 'payments', region: 'us-east-1' };
    for (const server of [
      'https://0a1b.gr7.eu-west-1.eks.amazonaws.com',
      'https://web-dns-abc123.hcp.westeurope.azmk8s.io',
      'https://attacker.example.com',
    ])
      assert.match(serverProblem(server, eks, ['eks']) ?? '', /is not an EKS endpoint in us-east-1/, server);
    assert.match(
      serverProblem('https://attacker.example.com', { provider: 'aks' }, ['aks']) ?? '',
      /is not an AKS endpoint/,
    );
  });
});
