import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { PLAN_LIMITS } from "../../schema/lib/plans.ts";
import { isTrustedProxy } from "../../server/http/client-address.ts";
import { MAX_BODY_BYTES } from "../../server/http/request-body.ts";
import { BODY_LIMITS, bodyLimitOf, sizeLabel } from "../../server/policies/body-limits.ts";
import { checkIntervalMs } from "../../server/policies/early-limits.ts";
import { ConfigError, loadConfig } from "../../server/runtime/config.ts";

describe("each route's body limit, from its path alone", () => {
  it.each([
    ["/oauth2/token", BODY_LIMITS.protocol],
    ["/oauth2/revoke", BODY_LIMITS.protocol],
    ["/agent/identity", BODY_LIMITS.protocol],
    ["/agent/event/notify", BODY_LIMITS.protocol],
    ["/dashboard/api", BODY_LIMITS.protocol],
    ["/dashboard/api/sign-in", BODY_LIMITS.protocol],
    ["/v1/responses", BODY_LIMITS.ai],
    ["/v1/responses/", BODY_LIMITS.ai],
    ["/v1/chat/completions", BODY_LIMITS.ai],
    ["/v1/leads", BODY_LIMITS.api],
    ["/v1/responses/extra", BODY_LIMITS.api],
    ["/graphql", BODY_LIMITS.api],
    ["/dashboard/apiary", BODY_LIMITS.api],
    ["/oauth2x", BODY_LIMITS.api],
  ])("%s: %i bytes", (path, limit) => {
    expect(bodyLimitOf(path)).toBe(limit);
  });

  it("is 64 KiB, 1 MiB and 25 MiB, the largest being every other route's", () => {
    expect([BODY_LIMITS.protocol, BODY_LIMITS.ai, BODY_LIMITS.api].map(sizeLabel)).toEqual([
      "64 KiB",
      "1 MiB",
      "25 MiB",
    ]);
    expect(MAX_BODY_BYTES).toBe(BODY_LIMITS.api);
    expect(sizeLabel(1000)).toBe("1000 bytes");
  });
});

describe("the early limits' settings", () => {
  it("default to 6 000 requests a minute per address (five times the max plan's), 128 connections, 15 s, 30 s and 5 s", () => {
    expect(loadConfig({}).early).toEqual({
      addressRequestsPerMinute: 6_000,
      connectionsPerAddress: 128,
      headersTimeoutMs: 15_000,
      bodyIdleTimeoutMs: 30_000,
      keepAliveTimeoutMs: 5_000,
    });
    expect(loadConfig({}).early.addressRequestsPerMinute).toBe(5 * PLAN_LIMITS.max.requests_per_minute);
  });

  it("are whole positive numbers", () => {
    const env = {
      KONTOR_ADDRESS_REQUESTS_PER_MINUTE: "50",
      KONTOR_CONNECTIONS_PER_ADDRESS: "4",
      KONTOR_HEADERS_TIMEOUT_MS: "500",
      KONTOR_BODY_IDLE_TIMEOUT_MS: "700",
      KONTOR_KEEP_ALIVE_TIMEOUT_MS: "900",
    };
    expect(loadConfig(env).early).toEqual({
      addressRequestsPerMinute: 50,
      connectionsPerAddress: 4,
      headersTimeoutMs: 500,
      bodyIdleTimeoutMs: 700,
      keepAliveTimeoutMs: 900,
    });
    for (const name of Object.keys(env)) {
      for (const bad of ["0", "-1", "1.5", "many"])
        expect(() => loadConfig({ [name]: bad }), `${name}=${bad}`).toThrow(ConfigError);
    }
  });

  it("take the address and connection limits and the keep-alive in production, the request timeouts only in tests", () => {
    const production = { KONTOR_ENV: "production", PUBLIC_URL: "https://api.example.com" };
    expect(
      loadConfig({
        ...production,
        KONTOR_ADDRESS_REQUESTS_PER_MINUTE: "20000",
        KONTOR_CONNECTIONS_PER_ADDRESS: "512",
        // Above a load balancer's 60 s idle timeout (docs/operations/deploy.md#load-balancer).
        KONTOR_KEEP_ALIVE_TIMEOUT_MS: "65000",
      }).early,
    ).toMatchObject({
      addressRequestsPerMinute: 20_000,
      connectionsPerAddress: 512,
      keepAliveTimeoutMs: 65_000,
    });
    for (const name of ["KONTOR_HEADERS_TIMEOUT_MS", "KONTOR_BODY_IDLE_TIMEOUT_MS"]) {
      expect(() => loadConfig({ ...production, [name]: "1000" })).toThrow(/refused in production/);
    }
  });

  it("look at connections often enough: a quarter of the shorter timeout, at most every second", () => {
    expect(checkIntervalMs({ headersTimeoutMs: 15_000, bodyIdleTimeoutMs: 30_000 })).toBe(1_000);
    expect(checkIntervalMs({ headersTimeoutMs: 1_000, bodyIdleTimeoutMs: 2_000 })).toBe(250);
    expect(checkIntervalMs({ headersTimeoutMs: 5, bodyIdleTimeoutMs: 5 })).toBe(10);
  });

  it("do not count a trusted proxy's connections as one client's", () => {
    const config = { trustProxy: ["loopback", "10.0.0.0/8"] };
    expect(isTrustedProxy("127.0.0.1", config)).toBe(true);
    expect(isTrustedProxy("10.1.2.3", config)).toBe(true);
    expect(isTrustedProxy("203.0.113.9", config)).toBe(false);
    expect(isTrustedProxy("127.0.0.1", { trustProxy: [] })).toBe(false);
  });
});

describe("docs/api/limits.md states the early limits", () => {
  const page = readFileSync(new URL("../../docs/api/limits.md", import.meta.url), "utf8");
  // The limits table, before the traffic policies.
  const limits = page.slice(0, page.indexOf("\n## "));
  const row = (what: string) =>
    new RegExp(`^\\| ${what.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} \\| (.+) \\|$`, "m").exec(limits)?.[1];

  it("in the Limits table, with the numbers the server holds", () => {
    const early = loadConfig({}).early;
    expect(row("a request body on `/oauth2/*`, `/agent/*`, `/dashboard/api/*`")).toMatch(
      new RegExp(`^${sizeLabel(BODY_LIMITS.protocol)} `),
    );
    expect(row("a request body on the AI routes (`/v1/chat/completions`, `/v1/responses`)")).toMatch(
      new RegExp(`^${sizeLabel(BODY_LIMITS.ai)} `),
    );
    expect(row("request line and headers")).toMatch(new RegExp(`^${early.headersTimeoutMs / 1000} s `));
    expect(row("a request body sending nothing")).toMatch(
      new RegExp(`^${early.bodyIdleTimeoutMs / 1000} s `),
    );
    expect(row("open connections of one client address")).toMatch(
      new RegExp(`^${early.connectionsPerAddress} `),
    );
    expect(row("requests of one client address, with a key or without")).toMatch(/^6 000 a minute /);
  });
});
