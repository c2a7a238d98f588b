import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AgentAuth,
  AgentAuthError,
  ClaimDeniedError,
  ClaimExpiredError,
  type FetchLike,
  type PendingPoll,
  resourceMetadataFromChallenge,
} from "../../../sdk/src/agents/index.ts";
import {
  CLAIM_GRANT_TYPE,
  decide,
  eventually,
  JWT_BEARER_GRANT_TYPE,
  ownerOf,
} from "../../support/agent-flow.ts";
import { rest } from "../../support/http.ts";
import { checkAgainstOpenApi } from "../../support/openapi-check.ts";
import { type Receiver, startReceiver } from "../../support/receiver.ts";
import { e2e } from "../../support/suite.ts";

/**
 * The SDK's agent helper (issue 13, point 8) against the real server: discovery from a 401,
 * registration, the claim grant polled while the test plays the person (approving through the
 * claim page's own decision function), slow_down, denial and expiry, the jwt-bearer exchange, and
 * the renewal shortly before expiry under an injected clock. The claim grant's `interval` is fixed
 * at 5 s by the server: one test waits it out for real; the others inject a clock and a sleep that
 * moves the server's record of the last poll back by the time "slept", so the server's own
 * slow_down check judges the helper's waits.
 */

interface Sent {
  method: string;
  url: string;
  status: number;
  body: string;
  wwwAuthenticate: string | null;
}

/** fetch that records every request and checks /v1 answers against the OpenAPI document, like the other suites. */
function recordingFetch(): { fetch: FetchLike; sent: Sent[]; to: (suffix: string) => Sent[] } {
  const sent: Sent[] = [];
  const fetcher: FetchLike = async (url, init = {}) => {
    const response = await fetch(url, init);
    const text = await response.clone().text();
    const method = init.method ?? "GET";
    await checkAgainstOpenApi(method, url, { status: response.status, headers: response.headers, text });
    sent.push({
      method,
      url,
      status: response.status,
      body: typeof init.body === "string" ? init.body : "",
      wwwAuthenticate: response.headers.get("www-authenticate"),
    });
    return response;
  };
  return { fetch: fetcher, sent, to: (suffix) => sent.filter((request) => request.url.endsWith(suffix)) };
}

/** The error `promise` rejects with. */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    (value) => {
      throw new Error(`resolved: ${JSON.stringify(value).slice(0, 200)}`);
    },
    (error: unknown) => error,
  );
}

let stranger: Receiver;
beforeAll(async () => {
  stranger = await startReceiver();
});
afterAll(async () => {
  await stranger?.close();
});

it("reads resource_metadata from a WWW-Authenticate challenge", () => {
  expect(
    resourceMetadataFromChallenge(
      'Bearer resource_metadata="https://k.example/v1/.well-known/oauth-protected-resource"',
    ),
  ).toBe("https://k.example/v1/.well-known/oauth-protected-resource");
  expect(resourceMetadataFromChallenge('Bearer error="invalid_token", resource_metadata="https://a/b"')).toBe(
    "https://a/b",
  );
  expect(resourceMetadataFromChallenge("Bearer resource_metadata=https://a/c, error=x")).toBe("https://a/c");
  expect(resourceMetadataFromChallenge('Bearer realm="kontor"')).toBeUndefined();
  expect(resourceMetadataFromChallenge(null)).toBeUndefined();
});

e2e("SDK agent helper", (server) => {
  let workspaceId: string;
  let owner: { userId: string; email: string };
  const prisma = () => server().running.db.prisma;

  beforeAll(async () => {
    const tenant = await server().tenant();
    workspaceId = tenant.workspaceId;
    owner = await ownerOf(server(), workspaceId);
  });

  /** The person approves (or denies) on the claim page with the code the agent showed them. */
  const approve = (claim: {
    user_code: string;
    verification_uri: string;
    expires_in: number;
    interval: number;
  }) => decide(server(), claim, owner.userId, { workspaceId });

  /**
   * An injected clock and sleep: sleeping `ms` advances the clock and moves the server's last poll
   * of `registration()` back by `ms`, as if that time had passed for the server too.
   */
  function simulatedTime(registration: () => string | undefined) {
    const state = { clock: Date.now(), slept: [] as number[] };
    return {
      state,
      now: () => state.clock,
      sleep: async (ms: number) => {
        state.slept.push(ms);
        state.clock += ms;
        const id = registration();
        if (!id) return;
        const row = await prisma().agentRegistration.findUniqueOrThrow({
          where: { id },
          select: { lastPolledAt: true },
        });
        if (row.lastPolledAt) {
          await prisma().agentRegistration.update({
            where: { id },
            data: { lastPolledAt: new Date(row.lastPolledAt.getTime() - ms) },
          });
        }
      },
    };
  }

  const workspaceOf = async (token: string) => {
    const res = await rest(server().api, token).get("/workspace");
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body as { id: string };
  };

  describe("discovery", () => {
    it("finds the endpoints from the 401 of the API URL, or of the host URL", async () => {
      const { fetch, sent } = recordingFetch();
      const agent = new AgentAuth({ fetch });
      const found = await agent.discover(server().api);
      expect(sent[0]).toMatchObject({ method: "GET", url: server().api, status: 401 });
      expect(sent[0]!.wwwAuthenticate).toContain("resource_metadata=");
      expect(found.resourceMetadataUrl).toBe(`${server().api}/.well-known/oauth-protected-resource`);
      expect(found.resource).toMatchObject({ resource: server().api, authorization_servers: [server().url] });
      expect(found.authorizationServer).toMatchObject({
        issuer: server().url,
        token_endpoint: `${server().url}/oauth2/token`,
        revocation_endpoint: `${server().url}/oauth2/revoke`,
        grant_types_supported: [CLAIM_GRANT_TYPE, JWT_BEARER_GRANT_TYPE],
        agent_auth: {
          identity_endpoint: `${server().url}/agent/identity`,
          claim_endpoint: `${server().url}/agent/identity/claim`,
          claim_grant_type: CLAIM_GRANT_TYPE,
          identity_types_supported: expect.arrayContaining(["service_auth", "anonymous"]),
        },
      });
      expect(sent.map((request) => request.url)).toEqual([
        server().api,
        `${server().api}/.well-known/oauth-protected-resource`,
        `${server().url}/.well-known/oauth-authorization-server`,
      ]);
      // From the host URL: its root is no 401, so the helper asks /v1, and finds the same.
      expect(await new AgentAuth({ fetch }).discover(`${server().url}/`)).toEqual(found);
    });

    it("fails with discovery_failed on a URL that is not Kontor", async () => {
      const error = await rejection(new AgentAuth().discover(stranger.url("/v1")));
      expect(error).toBeInstanceOf(AgentAuthError);
      expect((error as AgentAuthError).code).toBe("discovery_failed");
    });
  });

  describe("service_auth", () => {
    it("on the real clock: pending, the person approves, the poll one interval later yields the tokens; then exchange", async () => {
      const { fetch, to } = recordingFetch();
      const agent = new AgentAuth({ baseUrl: server().api, fetch });
      const registration = await agent.register({
        type: "service_auth",
        loginHint: owner.email,
        agentName: "SDK bot",
        scope: ["leads.read", "leads.write"],
      });
      expect(registration).toMatchObject({
        registration_id: expect.stringMatching(/^areg_/),
        registration_type: "service_auth",
        claim_token: expect.stringMatching(/^clm_/),
        post_claim_scopes: ["leads.read", "leads.write"],
        claim: { user_code: expect.stringMatching(/^\d{6}$/), interval: 5, expires_in: 600 },
      });
      expect(registration.claim.verification_uri).toMatch(
        new RegExp(`^${server().url}/agent/claim\\?claim_attempt_token=cat_`),
      );
      expect(registration.claim.verification_uri).not.toContain(registration.claim.user_code);

      const pending: (PendingPoll & { at: number })[] = [];
      const tokens = await agent.waitForClaim({
        onPending: async (poll) => {
          pending.push({ ...poll, at: Date.now() });
          if (pending.length === 1)
            expect(await approve(registration.claim)).toMatchObject({ outcome: "approved" });
        },
      });
      const grantedAt = Date.now();
      expect(pending.map(({ at, ...poll }) => poll)).toEqual([
        { reason: "authorization_pending", interval: 5, polls: 1 },
      ]);
      const waited = grantedAt - pending[0]!.at;
      expect(waited).toBeGreaterThanOrEqual(5_000);
      expect(waited).toBeLessThan(7_000);
      const polls = to("/oauth2/token");
      expect(
        polls.map((request) => [new URLSearchParams(request.body).get("grant_type"), request.status]),
      ).toEqual([
        [CLAIM_GRANT_TYPE, 400],
        [CLAIM_GRANT_TYPE, 200],
      ]);
      expect(tokens).toMatchObject({
        access_token: expect.stringMatching(/^ktr_agt_/),
        token_type: "Bearer",
        expires_in: 3600,
        scope: "leads.read leads.write",
        identity_assertion: expect.stringMatching(/^eyJ/),
      });

      // The token held is the one returned, without another request; it works like an API key.
      expect(await agent.accessToken()).toBe(tokens.access_token);
      expect(to("/oauth2/token")).toHaveLength(2);
      expect((await workspaceOf(tokens.access_token)).id).toBe(workspaceId);

      // The jwt-bearer exchange: a new token from the identity assertion, narrowed on request.
      const renewed = await agent.exchange();
      expect(renewed.access_token).not.toBe(tokens.access_token);
      expect(renewed.identity_assertion).toBeUndefined();
      expect(new URLSearchParams(to("/oauth2/token")[2]!.body).get("grant_type")).toBe(JWT_BEARER_GRANT_TYPE);
      expect(await agent.accessToken()).toBe(renewed.access_token);
      expect((await workspaceOf(renewed.access_token)).id).toBe(workspaceId);
      const narrow = await agent.exchange({ scope: "leads.read" });
      expect(narrow.scope).toBe("leads.read");
      expect(
        (await rest(server().api, narrow.access_token).post("/leads", { first_name: "No" })).status,
      ).toBe(403);

      // The claim token is spent: there is nothing left to wait for.
      expect(await rejection(agent.waitForClaim())).toMatchObject({ code: "not_registered" });
    });

    it("honours slow_down: 5 s more between every later poll, judged by the server's own check (simulated clock)", async () => {
      // An agent polls once, then is stopped (the wait is aborted at once, not after 5 s).
      const first = new AgentAuth({ baseUrl: server().api });
      const registration = await first.register({
        type: "service_auth",
        loginHint: owner.email,
        agentName: "Restarted bot",
      });
      const controller = new AbortController();
      const started = Date.now();
      const aborted = await rejection(
        first.waitForClaim({ signal: controller.signal, onPending: () => controller.abort() }),
      );
      expect((aborted as Error).name).toBe("AbortError");
      expect(Date.now() - started).toBeLessThan(2_000);

      // Restarted from its saved state, it polls at once: too soon for the server, which says slow_down.
      const time = simulatedTime(() => registration.registration_id);
      const { fetch, to } = recordingFetch();
      const agent = new AgentAuth({
        baseUrl: server().api,
        fetch,
        now: time.now,
        sleep: time.sleep,
        state: first.state,
      });
      const pending: PendingPoll[] = [];
      const tokens = await agent.waitForClaim({
        onPending: async (poll) => {
          pending.push(poll);
          if (poll.reason === "authorization_pending")
            expect(await approve(registration.claim)).toMatchObject({ outcome: "approved" });
        },
      });
      expect(pending).toEqual([
        { reason: "slow_down", interval: 10, polls: 1 },
        { reason: "authorization_pending", interval: 10, polls: 2 },
      ]);
      expect(time.state.slept).toEqual([10_000, 10_000]);
      expect(to("/oauth2/token").map((request) => request.status)).toEqual([400, 400, 200]);
      expect(agent.state.pollInterval).toBe(10);
      expect((await workspaceOf(tokens.access_token)).id).toBe(workspaceId);
    });

    it("re-exchanges the identity assertion when the token is within 60 s of expiry (injected clock), once for concurrent callers", async () => {
      let agentId: string | undefined;
      const time = simulatedTime(() => agentId);
      const { fetch, to } = recordingFetch();
      const agent = new AgentAuth({ baseUrl: server().api, fetch, now: time.now, sleep: time.sleep });
      const registration = await agent.register({
        type: "service_auth",
        loginHint: owner.email,
        agentName: "Long-running bot",
        scope: "leads.read",
      });
      agentId = registration.registration_id;
      expect(await approve(registration.claim)).toMatchObject({ outcome: "approved" });
      const tokens = await agent.waitForClaim();
      expect(time.state.slept).toEqual([]);
      expect(tokens.expires_at).toBe(time.state.clock + 3600_000);
      const grants = () =>
        to("/oauth2/token").map((request) => new URLSearchParams(request.body).get("grant_type"));
      expect(grants()).toEqual([CLAIM_GRANT_TYPE]);

      time.state.clock += 3600_000 - 61_000; // 61 s left: still good
      expect(await agent.accessToken()).toBe(tokens.access_token);
      expect(grants()).toEqual([CLAIM_GRANT_TYPE]);

      time.state.clock += 2_000; // 59 s left: renewed
      const renewed = await agent.accessToken();
      expect(renewed).not.toBe(tokens.access_token);
      expect(grants()).toEqual([CLAIM_GRANT_TYPE, JWT_BEARER_GRANT_TYPE]);
      expect((await workspaceOf(renewed)).id).toBe(workspaceId);
      expect(await agent.accessToken()).toBe(renewed);

      time.state.clock += 3600_000; // expired: concurrent callers share one exchange
      const together = await Promise.all([agent.accessToken(), agent.accessToken(), agent.accessToken()]);
      expect(new Set(together).size).toBe(1);
      expect(together[0]).not.toBe(renewed);
      expect(grants()).toEqual([CLAIM_GRANT_TYPE, JWT_BEARER_GRANT_TYPE, JWT_BEARER_GRANT_TYPE]);

      // The saved state resumes elsewhere: the same token while it is good.
      const resumed = new AgentAuth({ baseUrl: server().api, now: time.now, state: agent.state });
      expect(await resumed.accessToken()).toBe(together[0]);
    });

    it("stops with ClaimDeniedError when the person denies", async () => {
      const agent = new AgentAuth({ baseUrl: server().api });
      const registration = await agent.register({ type: "service_auth", loginHint: owner.email });
      expect(await decide(server(), registration.claim, owner.userId, { approve: false })).toEqual({
        outcome: "denied",
      });
      const error = await rejection(
        agent.waitForClaim({ onPending: () => expect.unreachable("no pending poll") }),
      );
      expect(error).toBeInstanceOf(ClaimDeniedError);
      expect(error).toMatchObject({ code: "access_denied", status: 400 });
    });

    it("stops with ClaimExpiredError after five wrong codes; startClaim makes a new code that then works", async () => {
      let agentId: string | undefined;
      const time = simulatedTime(() => agentId);
      const agent = new AgentAuth({ baseUrl: server().api, now: time.now, sleep: time.sleep });
      const registration = await agent.register({ type: "service_auth", loginHint: owner.email });
      agentId = registration.registration_id;
      const wrong = registration.claim.user_code === "000000" ? "111111" : "000000";
      for (let i = 0; i < 5; i++)
        await decide(server(), registration.claim, owner.userId, { code: wrong, workspaceId });
      const error = await rejection(agent.waitForClaim());
      expect(error).toBeInstanceOf(ClaimExpiredError);
      expect(error).toMatchObject({ code: "expired_token", status: 400 });

      const restarted = await agent.startClaim(owner.email);
      expect(restarted.claim.user_code).toMatch(/^\d{6}$/);
      expect(restarted.claim.verification_uri).not.toBe(registration.claim.verification_uri);
      expect(await approve(restarted.claim)).toMatchObject({ outcome: "approved" });
      const tokens = await agent.waitForClaim();
      // The helper kept its interval since its last poll before polling again.
      expect(time.state.slept).toEqual([5_000]);
      expect((await workspaceOf(tokens.access_token)).id).toBe(workspaceId);
    });
  });

  describe("anonymous", () => {
    it("works at once in its sandbox, is claimed by a person, gets the post-claim scopes; then revokes", async () => {
      let agentId: string | undefined;
      const time = simulatedTime(() => agentId);
      const agent = new AgentAuth({ baseUrl: server().api, now: time.now, sleep: time.sleep });
      const registration = await agent.register({ type: "anonymous", agentName: "Scout" });
      agentId = registration.registration_id;
      expect(registration).toMatchObject({
        registration_type: "anonymous",
        identity_assertion: expect.stringMatching(/^eyJ/),
      });
      expect(await rejection(agent.waitForClaim())).toMatchObject({ code: "no_claim_started" });

      const sandboxToken = await agent.accessToken();
      const sandbox = await workspaceOf(sandboxToken);
      expect(sandbox.id).not.toBe(workspaceId);
      expect((await rest(server().api, sandboxToken).get("/webhook-endpoints")).status).toBe(403);

      const started = await agent.startClaim(owner.email);
      expect(started).toMatchObject({
        registration_id: registration.registration_id,
        status: "initiated",
        claim: { interval: 5 },
      });
      expect(await decide(server(), started.claim, owner.userId)).toMatchObject({ outcome: "approved" });
      const claimed = await agent.waitForClaim();
      expect(claimed.scope.split(" ")).toEqual(expect.arrayContaining(registration.post_claim_scopes));
      expect(claimed.access_token).not.toBe(sandboxToken);
      expect(await agent.accessToken()).toBe(claimed.access_token);
      expect((await rest(server().api, claimed.access_token).get("/webhook-endpoints")).status).toBe(200);

      // Revoking the token held: that token stops working (the earlier one not); the assertion gets a new one.
      const held = (await agent.exchange()).access_token;
      await agent.revokeToken();
      const revoked = await eventually(
        () => rest(server().api, held).get("/workspace"),
        (res) => res.status === 401,
      );
      expect(revoked.status).toBe(401);
      expect((await workspaceOf(claimed.access_token)).id).toBe(sandbox.id);
      const next = await agent.accessToken();
      expect([held, claimed.access_token]).not.toContain(next);
      expect((await workspaceOf(next)).id).toBe(sandbox.id);

      // Revoking the registration: the assertion is void too.
      const saved = agent.state;
      await agent.revokeRegistration();
      expect(await rejection(agent.accessToken())).toMatchObject({ code: "no_identity_assertion" });
      const stale = new AgentAuth({ baseUrl: server().api, state: { ...saved, accessToken: undefined } });
      const refused = await rejection(stale.exchange());
      expect(refused).toBeInstanceOf(AgentAuthError);
      expect(refused).toMatchObject({ code: "invalid_grant", status: 400 });
    });
  });
});
