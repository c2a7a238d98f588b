import * as oauth from "oauth4webapi";
import { expect } from "vitest";
import { newId } from "../../schema/lib/ids.ts";
import { decideClaim, findClaimAttempt } from "../../server/agents/claims.ts";
import { CLAIM_GRANT_TYPE, JWT_BEARER_GRANT_TYPE } from "../../server/agents/token.ts";
import { raw } from "./http.ts";
import type { TestServer } from "./server.ts";

export { CLAIM_GRANT_TYPE, JWT_BEARER_GRANT_TYPE };

export type GrantResult =
  | { ok: true; body: oauth.TokenEndpointResponse }
  | { ok: false; status: number; error: string; body: Record<string, unknown>; headers: Headers };

/** The token endpoint through oauth4webapi: every answer must pass its response processing. */
export function tokenClient(url: string) {
  const as: oauth.AuthorizationServer = { issuer: url, token_endpoint: `${url}/oauth2/token` };
  const client: oauth.Client = { client_id: "kontor-test-agent" };
  return async (grantType: string, parameters: Record<string, string>): Promise<GrantResult> => {
    const response = await oauth.genericTokenEndpointRequest(
      as,
      client,
      oauth.None(),
      grantType,
      parameters,
      {
        [oauth.allowInsecureRequests]: true,
      },
    );
    const headers = response.headers;
    try {
      return { ok: true, body: await oauth.processGenericTokenEndpointResponse(as, client, response) };
    } catch (error) {
      if (error instanceof oauth.ResponseBodyError)
        return { ok: false, status: error.status, error: error.error, body: error.cause, headers };
      throw error;
    }
  };
}

/** A granted token answer, or a failing expectation that shows the error. */
export function granted(result: GrantResult): oauth.TokenEndpointResponse {
  expect(result.ok ? "granted" : result.body).toBe("granted");
  return (result as { body: oauth.TokenEndpointResponse }).body;
}

/** A refused grant, checked for its RFC 6749 shape. */
export function refused(result: GrantResult, status: number, error: string) {
  expect(result.ok, "grant refused").toBe(false);
  const failure = result as Extract<GrantResult, { ok: false }>;
  expect({ status: failure.status, error: failure.error }).toEqual({ status, error });
  expect(typeof failure.body.error_description).toBe("string");
  expect(failure.headers.get("cache-control")).toBe("no-store");
  return failure.body;
}

export const identity = (server: TestServer, body: unknown, path = "/agent/identity") =>
  raw(`${server.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });

export async function registerAnonymous(server: TestServer, agentName = "Test agent") {
  const res = await identity(server, { type: "anonymous", agent_name: agentName });
  expect(res.status, res.text).toBe(200);
  return res.json as {
    registration_id: string;
    identity_assertion: string;
    assertion_expires: string;
    claim_token: string;
    claim_token_expires: string;
    pre_claim_scopes: string[];
    post_claim_scopes: string[];
    claim_url: string;
  };
}

export interface ClaimBlock {
  user_code: string;
  verification_uri: string;
  expires_in: number;
  interval: number;
}

export async function registerServiceAuth(
  server: TestServer,
  loginHint: string,
  extra: Record<string, unknown> = {},
) {
  const res = await identity(server, {
    type: "service_auth",
    login_hint: loginHint,
    agent_name: "Service agent",
    ...extra,
  });
  expect(res.status, res.text).toBe(200);
  return res.json as {
    registration_id: string;
    claim_token: string;
    claim_token_expires: string;
    post_claim_scopes: string[];
    claim: ClaimBlock;
  };
}

/** The owner of a workspace made by tenant(). */
export async function ownerOf(server: TestServer, workspaceId: string) {
  const membership = await server.running.db.prisma.membership.findFirstOrThrow({
    where: { workspaceId, role: "owner" },
    include: { user: true },
  });
  return { userId: membership.userId, email: membership.user.email };
}

/**
 * The account with `email` (made when missing, with an unusable password) as an owner of the
 * workspace: the person a claim names, who alone may approve it into that workspace.
 */
export async function ownerNamed(server: TestServer, workspaceId: string, email: string) {
  const db = server.running.db.prisma;
  const address = email.trim().toLowerCase();
  const user = await db.user.upsert({
    where: { email: address },
    create: { id: newId("user"), email: address, passwordHash: "-" },
    update: {},
  });
  await db.membership.upsert({
    where: { workspaceId_userId: { workspaceId, userId: user.id } },
    create: { workspaceId, userId: user.id, role: "owner" },
    update: { role: "owner" },
  });
  return { userId: user.id, email: address };
}

/** What the claim page does when the user types `code` (default: the right one) and approves or denies. */
export async function decide(
  server: TestServer,
  claim: ClaimBlock,
  userId: string,
  options: { approve?: boolean; code?: string; workspaceId?: string } = {},
) {
  const attemptToken = new URL(claim.verification_uri).searchParams.get("claim_attempt_token")!;
  const attempt = await findClaimAttempt(server.running.db.prisma, attemptToken);
  expect(attempt, "claim attempt").not.toBeNull();
  return decideClaim(
    server.running.db.prisma,
    {
      attemptId: attempt!.attemptId,
      userId,
      approve: options.approve ?? true,
      code: options.code ?? claim.user_code,
      ...(options.workspaceId && { workspaceId: options.workspaceId }),
    },
    server.running.revocations,
  );
}

/** Lets the next claim-grant poll through at once (instead of waiting out `interval`). */
export const forgetLastPoll = (server: TestServer, registrationId: string) =>
  server.running.db.prisma.agentRegistration.update({
    where: { id: registrationId },
    data: { lastPolledAt: null },
  });

/** Polls `probe` until `done` holds, within a bound (credential caches make revocation take a few seconds). */
export async function eventually<T>(
  probe: () => Promise<T>,
  done: (value: T) => boolean,
  boundMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + boundMs;
  for (;;) {
    const value = await probe();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
