import type { LookupAddress, LookupOptions } from "node:dns";
import { lookup as dnsLookup } from "node:dns/promises";
import { isIP, type LookupFunction } from "node:net";
import { maxTextLength } from "../../schema/lib/limits.ts";
import { classifyAddress, REFUSED_EVERYWHERE, refusedKind } from "./address-policy.ts";

export { blockedKind, classifyAddress, isBlockedAddress, refusedKind } from "./address-policy.ts";

/**
 * Which URLs Kontor may call for a tenant: webhook targets, and trusted ID-JAG providers' issuer
 * and JWKS URLs. Production refuses every address that reaches the server's own machine, its
 * network or a cloud metadata service (SSRF); development accepts loopback and private addresses
 * so a receiver on localhost works, but never link-local or cloud metadata ones: a developer's
 * laptop or CI runner on a cloud VM has credentials there too. Every address, literal or resolved,
 * is judged by the one address policy (address-policy.ts) on what it decodes to.
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

/** A webhook endpoint's `url` as stored (percent-encoded): the API's limit of the field (schema/lib/limits.ts). */
export const MAX_URL_LENGTH = maxTextLength("Mutation.createWebhookEndpoint", "url");

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
  if (refusedKind(address, production) === null) return null;
  const { kind, carried } = classifyAddress(address)!;
  const what = kind === "unparseable" ? "an address that cannot be checked" : `a ${kind} address`;
  const decoded = carried ? ` (${carried.address} in ${carried.form} form)` : "";
  return `url ${verb} ${address}${decoded}, ${what}, which ${REFUSED_EVERYWHERE.has(kind) ? "is never allowed" : "production refuses"}.`;
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
