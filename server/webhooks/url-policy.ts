import { lookup as dnsLookup } from "node:dns/promises";
import type { LookupAddress, LookupOptions } from "node:dns";
import { BlockList, isIP, type LookupFunction } from "node:net";

/**
 * Which webhook URLs Kontor may call. Production refuses every address that reaches the server's
 * own machine, its network or a cloud metadata service (SSRF); development accepts loopback and
 * private addresses so a receiver on localhost works, but never link-local or cloud metadata ones:
 * a developer's laptop or CI runner on a cloud VM has credentials there too.
 */

export type LookupAll = (hostname: string) => Promise<{ address: string; family: number }[]>;

export interface UrlPolicyOptions {
  production: boolean;
  /** Resolves a hostname to every address; default dns.lookup with all and verbatim. */
  lookup?: LookupAll;
}

export type UrlRefusal =
  | "invalid"
  | "protocol"
  | "https_required"
  | "credentials"
  | "too_long"
  | "localhost"
  | "blocked_address"
  | "unresolvable";

export class UrlNotAllowedError extends Error {
  override name = "UrlNotAllowedError";
  constructor(
    readonly reason: UrlRefusal,
    message: string,
  ) {
    super(message);
  }
}

/** What guardedLookup hands to node:net, so the failed connection names the refused address. */
export class AddressNotAllowedError extends UrlNotAllowedError {
  override name = "AddressNotAllowedError";
  readonly code = "EADDRNOTALLOWED";
  constructor(
    readonly hostname: string,
    readonly address: string | null,
    message: string,
  ) {
    super(address === null ? "localhost" : "blocked_address", message);
  }
}

export const MAX_URL_LENGTH = 2048;

const RANGES: ReadonlyArray<readonly [kind: string, cidrs: readonly string[]]> = [
  // Metadata services outside link-local: AWS IPv6 (fd00:ec2::254), GCP IPv6 (fd20:ce::254),
  // Alibaba (100.100.100.200), Azure's WireServer (168.63.129.16), Oracle Cloud Classic (192.0.0.192).
  ["cloud metadata", ["fd00:ec2::254/128", "fd20:ce::254/128", "100.100.100.200/32", "168.63.129.16/32", "192.0.0.192/32"]],
  ["unspecified", ["0.0.0.0/8", "::/128"]],
  ["loopback", ["127.0.0.0/8", "::1/128"]],
  // fc00::/7 holds AWS's IPv6 metadata address fd00:ec2::254; 64:ff9b:1::/48 is local-use NAT64 (RFC 8215).
  ["private", ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7", "64:ff9b:1::/48"]],
  ["shared (carrier-grade NAT)", ["100.64.0.0/10"]],
  // 169.254.169.254 is the metadata service of AWS, GCP and Azure.
  ["link-local", ["169.254.0.0/16", "fe80::/10"]],
  ["documentation", ["192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32"]],
  ["benchmarking", ["198.18.0.0/15"]],
  ["multicast", ["224.0.0.0/4", "ff00::/8"]],
  ["reserved", ["192.0.0.0/24", "240.0.0.0/4"]],
];

function blockList(cidrs: readonly string[]): BlockList {
  const list = new BlockList();
  for (const cidr of cidrs) {
    const [net = "", prefix = ""] = cidr.split("/");
    list.addSubnet(net, Number(prefix), isIP(net) === 6 ? "ipv6" : "ipv4");
  }
  return list;
}

const LISTS = RANGES.map(([kind, cidrs]) => [kind, blockList(cidrs)] as const);
// IPv6 forms that carry an IPv4 address in their last 32 bits: mapped, compatible, NAT64, SIIT.
const EMBEDS_IPV4_LOW = blockList(["::ffff:0:0/96", "::/96", "64:ff9b::/96", "::ffff:0:0:0/96"]);
// 6to4 carries it in bits 16..47.
const EMBEDS_IPV4_6TO4 = blockList(["2002::/16"]);

/** The eight 16-bit words of a valid IPv6 literal; null for forms the WHATWG parser refuses (zone ids). */
function ipv6Words(ip: string): number[] | null {
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
  return [...left, ...Array<string>(gap).fill("0"), ...right].map((word) => parseInt(word, 16));
}

function ipv4From(high: number, low: number): string {
  return [high >> 8, high & 0xff, low >> 8, low & 0xff].join(".");
}

/** Why production refuses an address ("loopback", "private", …), or null when it may be called. */
export function blockedKind(ip: string): string | null {
  const version = isIP(ip);
  if (version === 0) return "unparseable";
  const type = version === 4 ? "ipv4" : "ipv6";
  if (version === 6 && ipv6Words(ip) === null) return "unparseable";
  for (const [kind, list] of LISTS) if (list.check(ip, type)) return kind;
  if (version === 4) return null;
  const words = ipv6Words(ip) as number[];
  if (EMBEDS_IPV4_LOW.check(ip, "ipv6")) return blockedKind(ipv4From(words[6] ?? 0, words[7] ?? 0));
  if (EMBEDS_IPV4_6TO4.check(ip, "ipv6")) return blockedKind(ipv4From(words[1] ?? 0, words[2] ?? 0));
  return null;
}

export function isBlockedAddress(ip: string): boolean {
  return blockedKind(ip) !== null;
}

/** Kinds refused in every environment; an address that cannot be checked is one of them. */
const REFUSED_EVERYWHERE = new Set(["cloud metadata", "link-local", "unparseable"]);

/** Why this environment refuses an address, or null when it may be called. */
export function refusedKind(ip: string, production: boolean): string | null {
  const kind = blockedKind(ip);
  return kind !== null && (production || REFUSED_EVERYWHERE.has(kind)) ? kind : null;
}

export function parseWebhookUrl(raw: string, options: UrlPolicyOptions): URL {
  if (raw.length > MAX_URL_LENGTH) {
    throw new UrlNotAllowedError("too_long", `url must be at most ${MAX_URL_LENGTH} characters.`);
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UrlNotAllowedError("invalid", "url must be an absolute http or https URL.");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new UrlNotAllowedError("protocol", "url must be an absolute http or https URL.");
  }
  if (options.production && url.protocol !== "https:") {
    throw new UrlNotAllowedError("https_required", "url must use https in production.");
  }
  if (url.username !== "" || url.password !== "") {
    throw new UrlNotAllowedError("credentials", "url must not contain credentials.");
  }
  if (url.hostname === "") throw new UrlNotAllowedError("invalid", "url must name a host.");
  // Percent-encoding can lengthen what was stored.
  if (url.href.length > MAX_URL_LENGTH) {
    throw new UrlNotAllowedError("too_long", `url must be at most ${MAX_URL_LENGTH} characters.`);
  }
  return url;
}

/** The IP address a URL names literally (brackets removed), or null when its host is a DNS name. */
export function hostAddress(url: URL): string | null {
  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  return isIP(host) === 0 ? null : host;
}

function isLocalhostName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, "");
  return name === "localhost" || name.endsWith(".localhost");
}

const LOCALHOST_REFUSED = "url must not point to localhost, which production refuses.";

function refusal(address: string, verb: string, production: boolean): string | null {
  const kind = refusedKind(address, production);
  if (kind === null) return null;
  const what = kind === "unparseable" ? "an address that cannot be checked" : `a ${kind} address`;
  return `url ${verb} ${address}, ${what}, which ${REFUSED_EVERYWHERE.has(kind) ? "is never allowed" : "production refuses"}.`;
}

const defaultLookup: LookupAll = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

/** Admission-time check. Send time repeats it on the connected address through guardedLookup. */
export async function checkWebhookTarget(url: URL, options: UrlPolicyOptions): Promise<void> {
  parseWebhookUrl(url.href, options);
  const literal = hostAddress(url);
  if (literal !== null) {
    const message = refusal(literal, "points to", options.production);
    if (message !== null) throw new UrlNotAllowedError("blocked_address", message);
    return;
  }
  if (isLocalhostName(url.hostname)) {
    if (options.production) throw new UrlNotAllowedError("localhost", LOCALHOST_REFUSED);
    return;
  }
  let addresses: { address: string }[] = [];
  try {
    addresses = await (options.lookup ?? defaultLookup)(url.hostname);
  } catch {
    // reported below like an empty answer
  }
  if (addresses.length === 0) {
    // Development takes a name it cannot resolve yet; sending reports dns_failure if it still cannot.
    if (!options.production) return;
    throw new UrlNotAllowedError("unresolvable", `url host ${url.hostname} could not be resolved.`);
  }
  for (const { address } of addresses) {
    const message = refusal(address, "resolves to", options.production);
    if (message !== null) throw new UrlNotAllowedError("blocked_address", message);
  }
}

function notFound(hostname: string, cause: unknown): NodeJS.ErrnoException {
  if (cause instanceof Error && typeof (cause as NodeJS.ErrnoException).code === "string") return cause;
  const detail = cause instanceof Error ? `: ${cause.message}` : "";
  return Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}${detail}`), {
    code: "ENOTFOUND",
    syscall: "getaddrinfo",
    hostname,
  });
}

function wantedFamily(family: LookupOptions["family"]): number {
  if (family === "IPv4") return 4;
  if (family === "IPv6") return 6;
  return family ?? 0;
}

async function resolveGuarded(
  hostname: string,
  lookupOptions: LookupOptions,
  options: UrlPolicyOptions,
): Promise<LookupAddress[]> {
  if (options.production && isLocalhostName(hostname)) {
    throw new AddressNotAllowedError(hostname, null, LOCALHOST_REFUSED);
  }
  let answer: { address: string; family: number }[];
  try {
    answer = await (options.lookup ?? defaultLookup)(hostname);
  } catch (error) {
    throw notFound(hostname, error);
  }
  const family = wantedFamily(lookupOptions.family);
  const addresses = answer.filter((a) => family === 0 || a.family === family);
  if (addresses.length === 0) throw notFound(hostname, undefined);
  // Any refused address refuses the host, as checkWebhookTarget does: both checks always agree.
  for (const { address } of addresses) {
    const message = refusal(address, "resolves to", options.production);
    if (message !== null) throw new AddressNotAllowedError(hostname, address, message);
  }
  return addresses;
}

/**
 * A `lookup` for http.request / net.connect: the socket connects to exactly the addresses checked
 * here, so a DNS answer that changes after checkWebhookTarget (rebinding) cannot slip through.
 * Node 20 asks with `all: true` when autoSelectFamily is on (its default), else for one address.
 * IP literals never reach a lookup function: callers must check those themselves (hostAddress).
 */
export function guardedLookup(options: UrlPolicyOptions): LookupFunction {
  return (hostname, lookupOptions, callback) => {
    resolveGuarded(hostname, lookupOptions, options).then(
      (addresses) => {
        const first = addresses[0] as LookupAddress;
        if (lookupOptions.all) callback(null, addresses);
        else callback(null, first.address, first.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, lookupOptions.all ? [] : ""),
    );
  };
}
