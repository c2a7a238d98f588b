import { expect, it } from "vitest";
import { PLAN_LIMITS } from "../../../schema/lib/plans.ts";
import { raw } from "../../support/http.ts";
import { e2e } from "../../support/suite.ts";

const FREE = PLAN_LIMITS.free.requests_per_minute;

/** One refused request to each endpoint, as an agent (or anyone) without a credential sends it. */
const ENDPOINTS = {
  "/oauth2/token": { type: "application/x-www-form-urlencoded", body: "grant_type=urn%3Anope" },
  "/agent/identity": { type: "application/json", body: '{"type":"nope"}' },
  "/agent/identity/claim": { type: "application/json", body: "{}" },
  "/agent/event/notify": { type: "application/secevent+jwt", body: "not-a-jwt" },
} as const;

type Path = keyof typeof ENDPOINTS;
const PATHS = Object.keys(ENDPOINTS) as Path[];

const send = (url: string, path: Path) =>
  raw(`${url}${path}`, {
    method: "POST",
    headers: { "content-type": ENDPOINTS[path].type },
    body: ENDPOINTS[path].body,
  });

/**
 * The agent protocol's endpoints count against the per-address limit like any request without a
 * credential; past it they answer 429 in their own error shape, as their handlers answer every
 * other error: RFC 6749's `{error, error_description}` (RFC 8935's `{err, description}` for the
 * SET receiver), never cached, with Retry-After.
 */
e2e("agent endpoints past the per-address limit", (server) => {
  it("answer 429 in their own shape, with Retry-After and Cache-Control: no-store", async () => {
    const url = server().url;
    // The address's minute, spent on these endpoints' own (refused) requests.
    for (let i = 0; i < FREE; i += PATHS.length) {
      const answers = await Promise.all(PATHS.slice(0, FREE - i).map((path) => send(url, path)));
      for (const [j, answer] of answers.entries()) {
        expect(answer.status, `${PATHS[j]}: ${answer.text}`).toBe(400);
        expect(answer.headers.get("cache-control"), PATHS[j]).toBe("no-store");
      }
    }

    for (const path of PATHS) {
      const refused = await send(url, path);
      expect(refused.status, `${path}: ${refused.text}`).toBe(429);
      const retryAfter = Number(refused.headers.get("retry-after"));
      expect(
        Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60,
        `${path} Retry-After ${retryAfter}`,
      ).toBe(true);
      expect(refused.headers.get("cache-control"), path).toBe("no-store");
      expect(refused.headers.get("content-type"), path).toMatch(/^application\/json/);
      expect(refused.headers.get("x-ratelimit-remaining"), path).toBe("0");
      if (path === "/agent/event/notify") {
        expect(refused.json).toEqual({
          err: "rate_limit_exceeded",
          description: expect.stringContaining("Retry after"),
        });
      } else {
        expect(refused.headers.get("pragma"), path).toBe("no-cache");
        expect(refused.json, path).toEqual({
          error: "rate_limit_exceeded",
          error_description: expect.stringContaining("Retry after"),
          request_id: refused.headers.get("x-request-id"),
        });
      }
    }
  });
});
