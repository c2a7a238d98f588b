import { createRemoteJWKSet, jwtVerify } from "jose";
import * as oauth from "oauth4webapi";
import { expect, it } from "vitest";
import { createWorkspace } from "../../../server/accounts/workspaces.ts";
import {
  CLAIM_GRANT_TYPE,
  forgetLastPoll,
  granted,
  JWT_BEARER_GRANT_TYPE,
  refused,
  tokenClient,
} from "../../support/agent-flow.ts";
import { useChromium } from "../../support/chromium.ts";
import { graphql } from "../../support/graphql.ts";
import { raw, rest } from "../../support/http.ts";
import { e2e } from "../../support/suite.ts";

const PASSWORD = "correct horse battery staple";

/**
 * The whole journey through nothing but what Kontor publishes: an agent that knows only the API's
 * URL discovers the endpoints, registers for a person, the person approves it on the claim page in
 * a real browser, the agent's poll turns into a token, the token works on /v1 and /graphql, is
 * renewed with the identity assertion, and is revoked.
 */
e2e("an agent's journey, end to end", (server) => {
  const browser = useChromium();

  it("discover → register → the user approves in a browser → poll → call /v1 and /graphql → renew → revoke", {
    timeout: 60_000,
  }, async () => {
    const email = `journey-${Date.now()}@example.com`;
    const workspace = await createWorkspace(server().running.db.prisma, {
      name: "Journey Ltd",
      plan: "pro",
      ownerEmail: email,
      ownerPassword: PASSWORD,
    });

    // Discover from a 401, as a client that knows only the API's URL.
    const challenge = await raw(`${server().api}/leads`);
    expect(challenge.status).toBe(401);
    const metadataUrl = /resource_metadata="([^"]+)"/.exec(
      challenge.headers.get("www-authenticate") ?? "",
    )![1]!;
    const resource = (await raw(metadataUrl)).json;
    const issuer = new URL(resource.authorization_servers[0]);
    const as = await oauth.processDiscoveryResponse(
      issuer,
      await oauth.discoveryRequest(issuer, { algorithm: "oauth2", [oauth.allowInsecureRequests]: true }),
    );
    const agentAuth = (
      as as unknown as { agent_auth: { identity_endpoint: string; claim_grant_type: string } }
    ).agent_auth;
    expect(agentAuth.claim_grant_type).toBe(CLAIM_GRANT_TYPE);

    // Register for the person; the agent shows them the link and the code.
    const registered = await raw(agentAuth.identity_endpoint, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        type: "service_auth",
        login_hint: email,
        agent_name: "Journey bot",
        scope: "leads.read leads.write",
      }),
    });
    expect(registered.status, registered.text).toBe(200);
    const {
      claim_token: claimToken,
      claim,
      registration_id: registrationId,
    } = registered.json as {
      claim_token: string;
      registration_id: string;
      claim: { verification_uri: string; user_code: string };
    };
    const token = tokenClient(as.issuer);
    refused(await token(CLAIM_GRANT_TYPE, { claim_token: claimToken }), 400, "authorization_pending");

    // The person approves on the claim page.
    const context = await browser().newContext({ viewport: { width: 390, height: 844 } });
    await context.route("**/*", (route) =>
      route.request().url().startsWith(server().url) ? route.continue() : route.abort(),
    );
    const page = await context.newPage();
    await page.goto(claim.verification_uri);
    await page.fill("#email", email);
    await page.fill("#password", PASSWORD);
    await page.click("button:has-text('Sign in')");
    await page.waitForSelector("#code");
    expect(await page.locator("main").innerText()).toContain("Journey bot");
    await page.fill("#code", claim.user_code);
    await page.click("button:has-text('Approve')");
    await expect(page.locator("h1").textContent()).resolves.toBe("Agent approved");
    await context.close();

    // The next poll (`interval` seconds later: the wait is skipped by forgetting the last poll) yields the token.
    await forgetLastPoll(server(), registrationId);
    const tokens = granted(await token(CLAIM_GRANT_TYPE, { claim_token: claimToken }));
    expect(tokens).toMatchObject({ token_type: "bearer", scope: "leads.read leads.write" });
    const accessToken = tokens.access_token;
    expect(accessToken).toMatch(/^ktr_agt_/);
    const assertion = tokens.identity_assertion as string;
    const checked = await jwtVerify(assertion, createRemoteJWKSet(new URL(as.jwks_uri!)), {
      issuer: as.issuer,
      audience: as.issuer,
    });
    expect(checked.payload.sub).toMatch(/^areg_/);

    // The token works like an API key, on REST and GraphQL, in the person's workspace, at its scopes.
    const api = rest(server().api, accessToken);
    expect((await api.get("/workspace")).body).toMatchObject({
      id: workspace.workspace_id,
      name: "Journey Ltd",
    });
    expect((await api.post("/leads", { full_name: "Ada Lovelace" })).status).toBe(201);
    const listed = await graphql(server().url, accessToken)(`{ leads { data { full_name } } }`);
    expect(listed.data.leads.data).toEqual([{ full_name: "Ada Lovelace" }]);
    expect((await api.get("/clients")).body.error).toMatchObject({
      code: "insufficient_scope",
      required_scope: "clients.read",
    });

    // Renewed with the assertion (RFC 7523), then revoked (RFC 7009) through oauth4webapi.
    const renewed = granted(await token(JWT_BEARER_GRANT_TYPE, { assertion }));
    expect(renewed.refresh_token).toBeUndefined();
    const client: oauth.Client = { client_id: "journey-bot" };
    const revocation = await oauth.revocationRequest(as, client, oauth.None(), assertion, {
      [oauth.allowInsecureRequests]: true,
    });
    await oauth.processRevocationResponse(revocation);
    const deadline = Date.now() + 6_000;
    let status = 200;
    while (
      Date.now() < deadline &&
      (status = (await rest(server().api, renewed.access_token).get("/workspace")).status) !== 401
    ) {
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(status).toBe(401);
    refused(await token(JWT_BEARER_GRANT_TYPE, { assertion }), 400, "invalid_grant");
  });
});
