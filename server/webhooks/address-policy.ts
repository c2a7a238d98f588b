import { BlockList, isIP } from "node:net";

/**
 * The one address policy: what an IP address is, judged on the address it decodes to. Every
 * outbound call Kontor makes to an address a tenant chose (webhook targets when registered and at
 * each send, trusted ID-JAG providers' issuer and JWKS URLs when saved and when fetched) asks
 * `refusedKind` about the literal host or each resolved address. An IPv6 form that carries an
 * IPv4 address (mapped, compatible, translated, NAT64, 6to4, Teredo) is judged by the IPv4
 * addresses it carries, with the same IPv4 rules, so no spelling reaches what another refuses.
 */

/** Kinds refused in every environment; an address that cannot be checked is one of them. */
export const REFUSED_EVERYWHERE: ReadonlySet<string> = new Set([
  "cloud metadata",
  "link-local",
  "unparseable",
]);

const RANGES: ReadonlyArray<readonly [kind: string, cidrs: readonly string[]]> = [
  // Metadata services outside link-local: AWS IPv6 (fd00:ec2::254), GCP IPv6 (fd20:ce::254),
  // Alibaba (100.100.100.200), Azure's WireServer (168.63.129.16), Oracle Cloud Classic (192.0.0.192).
  [
    "cloud metadata",
    ["fd00:ec2::254/128", "fd20:ce::254/128", "100.100.100.200/32", "168.63.129.16/32", "192.0.0.192/32"],
  ],
  ["unspecified", ["0.0.0.0/8", "::/128"]],
  ["loopback", ["127.0.0.0/8", "::1/128"]],
  // fc00::/7 holds AWS's IPv6 metadata address fd00:ec2::254.
  ["private", ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7"]],
  ["shared (carrier-grade NAT)", ["100.64.0.0/10"]],
  // 169.254.169.254 is the metadata service of AWS, GCP and Azure.
  ["link-local", ["169.254.0.0/16", "fe80::/10"]],
  ["documentation", ["192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32", "3fff::/20"]],
  ["benchmarking", ["198.18.0.0/15", "2001:2::/48"]],
  ["multicast", ["224.0.0.0/4", "ff00::/8"]],
  // 100::/64 is IPv6's discard-only prefix (RFC 6666).
  ["reserved", ["192.0.0.0/24", "240.0.0.0/4", "100::/64"]],
];

function blockList(cidrs: readonly string[]): BlockList {
  const list = new BlockList();
  for (const cidr of cidrs) {
    const [net = "", prefix = ""] = cidr.split("/");
    list.addSubnet(net, Number(prefix), isIP(net) === 6 ? "ipv6" : "ipv4");
  }
  return list;
}

const IPV4_LISTS = RANGES.map(
  ([kind, cidrs]) => [kind, blockList(cidrs.filter((c) => isIP(c.split("/")[0]!) === 4))] as const,
);
const IPV6_LISTS = RANGES.map(
  ([kind, cidrs]) => [kind, blockList(cidrs.filter((c) => isIP(c.split("/")[0]!) === 6))] as const,
);

type Bytes = readonly number[];
const ipv4At = (b: Bytes, i: number, j: number, k: number, l: number) => [b[i], b[j], b[k], b[l]].join(".");
const low32 = (b: Bytes) => ipv4At(b, 12, 13, 14, 15);

/** An IPv6 form that carries IPv4 addresses: its prefix, and where in its 16 bytes they sit. */
export interface Embedding {
  form: string;
  cidr: string;
  /** The IPv4 addresses it carries, each judged by the IPv4 rules. */
  carried(bytes: Bytes): string[];
  /** Where else a translator may have put one: counted only when refused in every environment. */
  alternatives?(bytes: Bytes): string[];
  /** The kind of the form itself when nothing it carries is refused. */
  otherwise?: string;
}

/** Every IPv6 form that is decoded. */
export const EMBEDDINGS: readonly Embedding[] = [
  { form: "IPv4-mapped", cidr: "::ffff:0:0/96", carried: (b) => [low32(b)] },
  { form: "IPv4-compatible", cidr: "::/96", carried: (b) => [low32(b)] },
  { form: "IPv4-translated", cidr: "::ffff:0:0:0/96", carried: (b) => [low32(b)] },
  { form: "NAT64", cidr: "64:ff9b::/96", carried: (b) => [low32(b)] },
  {
    // RFC 8215: the last 32 bits; RFC 6052 also allows a /48, /56 or /64 prefix, around byte 8.
    // It reaches only the operator's own network, whatever it carries: private.
    form: "NAT64 local-use",
    cidr: "64:ff9b:1::/48",
    carried: (b) => [low32(b)],
    alternatives: (b) => [ipv4At(b, 6, 7, 9, 10), ipv4At(b, 7, 9, 10, 11), ipv4At(b, 9, 10, 11, 12)],
    otherwise: "private",
  },
  { form: "6to4", cidr: "2002::/16", carried: (b) => [ipv4At(b, 2, 3, 4, 5)] },
  {
    // RFC 4380: the Teredo server's address in bits 32–63, the client's inverted in the last 32.
    form: "Teredo",
    cidr: "2001::/32",
    carried: (b) => [
      ipv4At(b, 4, 5, 6, 7),
      b
        .slice(12, 16)
        .map((x) => x ^ 0xff)
        .join("."),
    ],
  },
];

const EMBEDDING_LISTS = EMBEDDINGS.map((embedding) => [embedding, blockList([embedding.cidr])] as const);

/** The 16 bytes of a valid IPv6 literal; null for forms the WHATWG URL parser refuses (zone ids). */
function ipv6Bytes(ip: string): number[] | null {
  let canonical: string;
  try {
    canonical = new URL(`http://[${ip}]/`).hostname.slice(1, -1);
  } catch {
    return null;
  }
  const [head = "", tail] = canonical.split("::");
  const left = head === "" ? [] : head.split(":");
  const right = tail === undefined || tail === "" ? [] : tail.split(":");
  const gap = tail === undefined ? 0 : 8 - left.length - right.length;
  return [...left, ...Array<string>(gap).fill("0"), ...right].flatMap((word) => {
    const value = parseInt(word, 16);
    return [value >> 8, value & 0xff];
  });
}

/** What an address is; `carried` names the IPv4 address (and its form) that decided, if one did. */
export interface AddressKind {
  kind: string;
  carried?: { address: string; form: string };
}

const rangeKind = (lists: typeof IPV4_LISTS, ip: string, type: "ipv4" | "ipv6") =>
  lists.find(([, list]) => list.check(ip, type))?.[0] ?? null;

/** The worst of several verdicts: one refused everywhere first, else the first refused at all. */
function worst(kinds: (AddressKind | null)[]): AddressKind | null {
  const found = kinds.filter((k): k is AddressKind => k !== null);
  return found.find((k) => REFUSED_EVERYWHERE.has(k.kind)) ?? found[0] ?? null;
}

/**
 * The address policy's one function: the kind of address `ip` is ("loopback", "private", …), or
 * null for a public address. IPv6 forms carrying IPv4 addresses are judged by those addresses
 * (the worst of them); anything that is not a plain IPv4 or IPv6 address (zone ids included) is
 * "unparseable".
 */
export function classifyAddress(ip: string): AddressKind | null {
  const version = isIP(ip);
  if (version === 0) return { kind: "unparseable" };
  if (version === 4) {
    const kind = rangeKind(IPV4_LISTS, ip, "ipv4");
    return kind === null ? null : { kind };
  }
  const bytes = ipv6Bytes(ip);
  if (bytes === null) return { kind: "unparseable" };
  const native = rangeKind(IPV6_LISTS, ip, "ipv6");
  const verdicts: (AddressKind | null)[] = [native === null ? null : { kind: native }];
  for (const [embedding, list] of EMBEDDING_LISTS) {
    if (!list.check(ip, "ipv6")) continue;
    const judged = (address: string) => {
      const kind = rangeKind(IPV4_LISTS, address, "ipv4");
      return kind === null ? null : { kind, carried: { address, form: embedding.form } };
    };
    verdicts.push(...embedding.carried(bytes).map(judged));
    verdicts.push(
      ...(embedding.alternatives?.(bytes) ?? [])
        .map(judged)
        .filter((v) => v !== null && REFUSED_EVERYWHERE.has(v.kind)),
    );
    if (embedding.otherwise) verdicts.push({ kind: embedding.otherwise });
  }
  return worst(verdicts);
}

/** Why production refuses an address ("loopback", "private", …), or null when it may be called. */
export function blockedKind(ip: string): string | null {
  return classifyAddress(ip)?.kind ?? null;
}

/** Whether production refuses an address. */
export function isBlockedAddress(ip: string): boolean {
  return blockedKind(ip) !== null;
}

/** Why this environment refuses an address, or null when it may be called. */
export function refusedKind(ip: string, production: boolean): string | null {
  const kind = blockedKind(ip);
  return kind !== null && (production || REFUSED_EVERYWHERE.has(kind)) ? kind : null;
}
