import { beforeAll, expect } from "vitest";
import { SigningKeys } from "../../../server/agents/keys.ts";
import { SecretBox, serverSecret } from "../../../server/webhooks/secrets.ts";
import { type GrantResult, ownerOf, tokenClient } from "../../support/agent-flow.ts";
import type { Tenant, TestServer } from "../../support/server.ts";
import { SCOPE_CATALOG } from "../auth/support.ts";

/** Helpers shared by the agent suites. */

/** The catalogue of docs/api/scopes.md without agents.* and audit.read: what an agent token may hold. */
export const AGENT_SCOPE_CATALOG = SCOPE_CATALOG.filter(
  (scope) => !scope.startsWith("agents.") && scope !== "audit.read",
);

/** An RFC 6749-shaped refusal: the status, the code, a description, never cached. */
export function expectOAuthError(
  res: { status: number; json: any; headers: Headers },
  status: number,
  error: string,
) {
  expect({ status: res.status, error: res.json?.error }).toEqual({ status, error });
  expect(typeof res.json.error_description).toBe("string");
  expect(res.headers.get("cache-control")).toBe("no-store");
}

/** The SigningKeys every process of this server's database signs with (its own cache). */
export function signingKeys(server: TestServer): SigningKeys {
  return new SigningKeys(
    server.running.db.prisma,
    new SecretBox(serverSecret(server.config), "kontor/agent-signing-keys"),
  );
}

/**
 * A new tenant and its owner, made before the suite's tests, and the server's token endpoint:
 * returns their getters and `grant`. Call it in the body of e2e(...).
 */
export function useAgentTenant(server: () => TestServer) {
  let tenant: Tenant | undefined;
  let owner: { userId: string; email: string } | undefined;
  beforeAll(async () => {
    tenant = await server().tenant();
    owner = await ownerOf(server(), tenant.workspaceId);
  });
  const made = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error("the agent tenant is made in beforeAll: use it inside a test");
    return value;
  };
  return {
    tenant: () => made(tenant),
    owner: () => made(owner),
    grant: (grantType: string, parameters: Record<string, string>): Promise<GrantResult> =>
      tokenClient(server().url)(grantType, parameters),
  };
}
