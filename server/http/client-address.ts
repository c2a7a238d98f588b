import type { IncomingMessage } from "node:http";
import { isIP } from "node:net";
import proxyaddr from "proxy-addr";
import type { Config } from "../runtime/config.ts";

type Trust = (address: string, hop: number) => boolean;

/** KONTOR_TRUST_PROXY compiled once per Config (server/runtime/config.ts has already checked that it compiles). */
const compiled = new WeakMap<readonly string[], Trust>();

function trustOf(list: readonly string[]): Trust | undefined {
  if (list.length === 0) return undefined;
  let trust = compiled.get(list);
  if (!trust) compiled.set(list, (trust = proxyaddr.compile([...list])));
  return trust;
}

/**
 * One spelling per address, so one client is one bucket: IPv6 in its canonical form (lower case,
 * zeros compressed, as the WHATWG URL parser writes it), and IPv4-mapped IPv6 (`::ffff:1.2.3.4`,
 * the peer of an IPv4 client on a dual-stack socket) as plain IPv4.
 */
export function normalizeAddress(address: string): string {
  if (isIP(address) !== 6) return address;
  let canonical: string;
  try {
    canonical = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  } catch {
    return address.toLowerCase(); // a zone id (fe80::1%eth0), which URLs do not take
  }
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(canonical);
  if (!mapped) return canonical;
  const high = parseInt(mapped[1]!, 16);
  const low = parseInt(mapped[2]!, 16);
  return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
}

export const isLoopbackAddress = (address: string) =>
  address === "::1" || /^127\.\d+\.\d+\.\d+$/.test(address);

/**
 * The addresses a request passed through, nearest first: the socket's peer, then, while the last
 * one is a trusted proxy, the next address from the right of X-Forwarded-For (proxy-addr's `all`).
 * The last is the client: the first address that is not a trusted proxy, or the leftmost one when
 * every hop is trusted. An entry that is no IP address (a port, `unknown`) names nobody: the proxy
 * that wrote it is then the client. Without KONTOR_TRUST_PROXY the header is never read.
 */
export function addressChain(req: IncomingMessage, config: Pick<Config, "trustProxy">): string[] {
  const peer = req.socket?.remoteAddress;
  if (!peer) return [];
  const trust = trustOf(config.trustProxy);
  if (!trust) return [normalizeAddress(peer)];
  const chain = proxyaddr.all(req, trust);
  while (chain.length > 1 && isIP(chain[chain.length - 1]!) === 0) chain.pop();
  return chain.map(normalizeAddress);
}

/**
 * Whether `address` (normalised) is a proxy KONTOR_TRUST_PROXY names: its connections carry many
 * clients, so what is counted per connection (server/policies/early-limits.ts) does not count it.
 */
export function isTrustedProxy(address: string, config: Pick<Config, "trustProxy">): boolean {
  return trustOf(config.trustProxy)?.(address, 0) ?? false;
}

/** The node request behind Yoga's server context on node:http (which holds it as `req`), or the node request itself. */
export const nodeRequest = (source: unknown): IncomingMessage | undefined => {
  if (!source || typeof source !== "object") return undefined;
  return "socket" in source ? (source as IncomingMessage) : (source as { req?: IncomingMessage }).req;
};

/**
 * The client's address: every per-address decision (rate limits of requests without a
 * credential, sign-in, sign-up and anonymous-agent limits, request logs) asks this. It is the
 * socket's peer unless that peer is a proxy named by KONTOR_TRUST_PROXY; then X-Forwarded-For
 * decides (see addressChain). Takes the node request or Yoga's server context; undefined when the
 * socket is already gone.
 */
export function clientAddress(source: unknown, config: Pick<Config, "trustProxy">): string | undefined {
  const req = nodeRequest(source);
  if (!req) return undefined;
  const chain = addressChain(req, config);
  return chain[chain.length - 1];
}

/**
 * Whether a request comes from this machine (GET /metrics without a token): its peer is loopback,
 * and so is every hop of X-Forwarded-For that trusted proxies vouch for. X-Forwarded-For from a
 * peer that is not a trusted proxy (or with KONTOR_TRUST_PROXY off) means a proxy forwarded it
 * (or a client made it up), so it is not local; nor is a request with `Forwarded` or `X-Real-IP`,
 * which Kontor never reads: a proxy that sends only those would make every client look local.
 */
export function fromThisMachine(req: IncomingMessage, config: Pick<Config, "trustProxy">): boolean {
  if (req.headers.forwarded || req.headers["x-real-ip"]) return false;
  const chain = addressChain(req, config);
  if (chain.length === 0) return false;
  if (req.headers["x-forwarded-for"] && chain.length < 2) return false;
  return chain.every(isLoopbackAddress);
}
