import type { IncomingMessage } from "node:http";
import { describe, expect, it } from "vitest";
import {
  addressChain,
  clientAddress,
  fromThisMachine,
  normalizeAddress,
} from "../../server/http/client-address.ts";
import { ConfigError, loadConfig, parseTrustProxy } from "../../server/runtime/config.ts";

/** What the functions read of a node request: the socket's peer and the headers (lower-case, as node gives them). */
function request(peer: string | undefined, headers: Record<string, string> = {}): IncomingMessage {
  return { socket: { remoteAddress: peer }, headers } as unknown as IncomingMessage;
}

const trust = (setting: string) => ({ trustProxy: parseTrustProxy(setting) });
const OFF = trust("off");

function refusal(setting: string): string {
  try {
    loadConfig({ KONTOR_TRUST_PROXY: setting });
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error(`KONTOR_TRUST_PROXY='${setting}' was accepted`);
}

describe("KONTOR_TRUST_PROXY", () => {
  it("is off by default, and for off or an empty value", () => {
    expect(loadConfig({}).trustProxy).toEqual([]);
    expect(loadConfig({ KONTOR_TRUST_PROXY: "" }).trustProxy).toEqual([]);
    expect(loadConfig({ KONTOR_TRUST_PROXY: "off" }).trustProxy).toEqual([]);
    expect(loadConfig({ KONTOR_TRUST_PROXY: " off " }).trustProxy).toEqual([]);
  });

  it("takes loopback, addresses and CIDR ranges of both families, spaces around entries allowed", () => {
    expect(loadConfig({ KONTOR_TRUST_PROXY: "loopback" }).trustProxy).toEqual(["loopback"]);
    expect(
      loadConfig({ KONTOR_TRUST_PROXY: "loopback, 10.0.0.0/8 ,192.0.2.10,2001:db8::/32, ::1" }).trustProxy,
    ).toEqual(["loopback", "10.0.0.0/8", "192.0.2.10", "2001:db8::/32", "::1"]);
    expect(loadConfig({ KONTOR_TRUST_PROXY: "192.0.2.0/32,fd00::/128" }).trustProxy).toEqual([
      "192.0.2.0/32",
      "fd00::/128",
    ]);
  });

  it.each([
    ["1", /does not take a hop count \('1'\)/],
    ["2", /hop count/],
    ["true", /cannot trust every address/],
    ["*", /cannot trust every address/],
    ["0.0.0.0/0", /holds every address/],
    ["::/0", /holds every address/],
    ["10.0.0.0/33", /bad prefix length \(1 to 32\)/],
    ["2001:db8::/129", /bad prefix length \(1 to 128\)/],
    ["10.0.0.0/8x", /bad prefix length/],
    ["10.0.0.0/255.0.0.0", /bad prefix length/],
    ["10.0.0.0/", /bad prefix length/],
    ["proxy.internal", /'proxy.internal' is neither loopback, an IP address nor a CIDR range/],
    ["10.0.0", /neither loopback/],
    ["300.1.1.1", /neither loopback/],
    ["[::1]", /neither loopback/],
    ["10.0.0.1:8080", /neither loopback/],
    ["fe80::1%eth0", /neither loopback/],
    ["uniquelocal", /neither loopback/],
    ["Loopback", /neither loopback/],
    ["loopback,,10.0.0.1", /has an empty entry/],
    ["10.0.0.1,", /has an empty entry/],
    ["off,10.0.0.1", /cannot combine off with addresses/],
  ])("refuses %j with a ConfigError saying why", (setting, why) => {
    const message = refusal(setting);
    expect(message).toMatch(/^KONTOR_TRUST_PROXY /);
    expect(message).toMatch(why);
    expect(message).toContain("use off, loopback, or a comma-separated list");
  });
});

describe("normalizeAddress", () => {
  it("writes IPv4-mapped IPv6 as IPv4 and IPv6 in its canonical form", () => {
    expect(normalizeAddress("::ffff:192.0.2.7")).toBe("192.0.2.7");
    expect(normalizeAddress("::FFFF:c000:0207")).toBe("192.0.2.7");
    expect(normalizeAddress("2001:DB8:0:0:0:0:0:1")).toBe("2001:db8::1");
    expect(normalizeAddress("::1")).toBe("::1");
    expect(normalizeAddress("192.0.2.7")).toBe("192.0.2.7");
  });
});

describe("clientAddress", () => {
  it("is the socket's peer with trust off, whatever X-Forwarded-For says", () => {
    const req = request("127.0.0.1", { "x-forwarded-for": "203.0.113.9" });
    expect(clientAddress(req, OFF)).toBe("127.0.0.1");
    expect(clientAddress({ req }, OFF)).toBe("127.0.0.1");
    expect(addressChain(req, OFF)).toEqual(["127.0.0.1"]);
    expect(clientAddress(request("::ffff:198.51.100.4"), OFF)).toBe("198.51.100.4");
  });

  it("is the socket's peer when that peer is not a trusted proxy", () => {
    const req = request("198.51.100.4", { "x-forwarded-for": "203.0.113.9" });
    expect(clientAddress(req, trust("loopback,10.0.0.0/8"))).toBe("198.51.100.4");
  });

  it("is the rightmost address that is not a trusted proxy", () => {
    expect(clientAddress(request("127.0.0.1", { "x-forwarded-for": "203.0.113.9" }), trust("loopback"))).toBe(
      "203.0.113.9",
    );
    // The client wrote the first two itself; the proxies appended the rest.
    const req = request("10.0.0.2", { "x-forwarded-for": "1.1.1.1, 127.0.0.1, 203.0.113.9, 10.0.0.7" });
    expect(addressChain(req, trust("10.0.0.0/8"))).toEqual(["10.0.0.2", "10.0.0.7", "203.0.113.9"]);
    expect(clientAddress(req, trust("10.0.0.0/8"))).toBe("203.0.113.9");
  });

  it("stops at an untrusted hop in the middle of the chain: what it forwarded may be made up", () => {
    const req = request("127.0.0.1", { "x-forwarded-for": "203.0.113.9, 198.51.100.23, 10.1.2.3" });
    expect(clientAddress(req, trust("loopback,10.0.0.0/8"))).toBe("198.51.100.23");
    expect(clientAddress(req, trust("loopback"))).toBe("10.1.2.3");
  });

  it("is the leftmost address when every hop is trusted", () => {
    const req = request("127.0.0.1", { "x-forwarded-for": "10.0.0.9, 10.0.0.8" });
    expect(clientAddress(req, trust("loopback,10.0.0.0/8"))).toBe("10.0.0.9");
  });

  it("reads several X-Forwarded-For headers joined by node as one list", () => {
    const req = request("127.0.0.1", { "x-forwarded-for": "192.0.2.1, 203.0.113.9" });
    expect(clientAddress(req, trust("loopback"))).toBe("203.0.113.9");
  });

  it("takes a trusted proxy as the client when the entry it forwarded is no address", () => {
    for (const header of ["unknown", "203.0.113.9:4711", "[2001:db8::1]", "", " , "]) {
      expect(
        clientAddress(request("127.0.0.1", { "x-forwarded-for": header }), trust("loopback")),
        header,
      ).toBe("127.0.0.1");
    }
    const req = request("127.0.0.1", { "x-forwarded-for": "203.0.113.9, garbage, 10.0.0.7" });
    expect(clientAddress(req, trust("loopback,10.0.0.0/8"))).toBe("10.0.0.7");
  });

  it("normalizes forwarded addresses, so one client is one bucket", () => {
    expect(
      clientAddress(request("127.0.0.1", { "x-forwarded-for": "2001:DB8::0:1" }), trust("loopback")),
    ).toBe("2001:db8::1");
    expect(
      clientAddress(
        request("::ffff:127.0.0.1", { "x-forwarded-for": "::ffff:203.0.113.9" }),
        trust("loopback"),
      ),
    ).toBe("203.0.113.9");
  });

  it("matches IPv6 proxies and IPv4-mapped peers against IPv4 ranges", () => {
    expect(
      clientAddress(request("2001:db8::5", { "x-forwarded-for": "203.0.113.9" }), trust("2001:db8::/64")),
    ).toBe("203.0.113.9");
    expect(
      clientAddress(request("::ffff:10.0.0.2", { "x-forwarded-for": "203.0.113.9" }), trust("10.0.0.0/8")),
    ).toBe("203.0.113.9");
  });

  it("is undefined once the socket is gone", () => {
    expect(
      clientAddress(request(undefined, { "x-forwarded-for": "203.0.113.9" }), trust("loopback")),
    ).toBeUndefined();
    expect(clientAddress(undefined, trust("loopback"))).toBeUndefined();
    expect(clientAddress({}, trust("loopback"))).toBeUndefined();
  });
});

describe("fromThisMachine (GET /metrics without a token)", () => {
  it("with trust off: a loopback peer without forwarding headers, as before", () => {
    expect(fromThisMachine(request("127.0.0.1"), OFF)).toBe(true);
    expect(fromThisMachine(request("127.5.6.7"), OFF)).toBe(true);
    expect(fromThisMachine(request("::1"), OFF)).toBe(true);
    expect(fromThisMachine(request("::ffff:127.0.0.1"), OFF)).toBe(true);
    expect(fromThisMachine(request("192.0.2.1"), OFF)).toBe(false);
    expect(fromThisMachine(request("127.0.0.1", { "x-forwarded-for": "127.0.0.1" }), OFF)).toBe(false);
    expect(fromThisMachine(request("127.0.0.1", { forwarded: "for=127.0.0.1" }), OFF)).toBe(false);
    expect(fromThisMachine(request("127.0.0.1", { "x-real-ip": "127.0.0.1" }), OFF)).toBe(false);
    expect(fromThisMachine(request(undefined), OFF)).toBe(false);
  });

  it("with trust on: forwarded is local only when a trusted proxy vouches that every hop was loopback", () => {
    const loopback = trust("loopback");
    expect(fromThisMachine(request("127.0.0.1", { "x-forwarded-for": "127.0.0.1" }), loopback)).toBe(true);
    expect(fromThisMachine(request("127.0.0.1", { "x-forwarded-for": "::1, 127.0.0.2" }), loopback)).toBe(
      true,
    );
    // A client far away, forwarded by a local proxy; or one that wrote 127.0.0.1 itself.
    expect(fromThisMachine(request("127.0.0.1", { "x-forwarded-for": "203.0.113.9" }), loopback)).toBe(false);
    expect(
      fromThisMachine(request("127.0.0.1", { "x-forwarded-for": "127.0.0.1, 203.0.113.9" }), loopback),
    ).toBe(false);
    // What the proxy forwarded names nobody: not vouched for.
    expect(fromThisMachine(request("127.0.0.1", { "x-forwarded-for": "unknown" }), loopback)).toBe(false);
    // Headers Kontor does not read: a proxy sending only those would make every client look local.
    expect(
      fromThisMachine(
        request("127.0.0.1", { "x-forwarded-for": "127.0.0.1", "x-real-ip": "203.0.113.9" }),
        loopback,
      ),
    ).toBe(false);
    expect(fromThisMachine(request("127.0.0.1"), loopback)).toBe(true);
  });

  it("with trust on: a forwarding peer that is not trusted, or a hop through another machine, is not local", () => {
    const remote = trust("10.0.0.0/8");
    // The loopback peer is no trusted proxy: whoever forwarded this is unknown.
    expect(fromThisMachine(request("127.0.0.1", { "x-forwarded-for": "127.0.0.1" }), remote)).toBe(false);
    // A trusted proxy on another machine says its client was its own loopback: not this machine's.
    expect(fromThisMachine(request("10.0.0.2", { "x-forwarded-for": "127.0.0.1" }), remote)).toBe(false);
    const both = trust("loopback,10.0.0.0/8");
    expect(fromThisMachine(request("127.0.0.1", { "x-forwarded-for": "127.0.0.1, 10.0.0.2" }), both)).toBe(
      false,
    );
  });
});
