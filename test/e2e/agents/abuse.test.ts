import { expect, it } from "vitest";
import { identity } from "../../support/agent-flow.ts";
import { e2e } from "../../support/suite.ts";

/** Each anonymous registration makes a workspace, so one address gets only so many an hour (default 10). */
e2e("anonymous registrations per address", (server) => {
  it("takes 10 an hour from one address, then 429 rate_limit_exceeded in the OAuth shape with Retry-After; service_auth is not counted", async () => {
    for (let i = 0; i < 10; i++) {
      const res = await identity(server(), { type: "anonymous", agent_name: `Agent ${i}` });
      expect(res.status, res.text).toBe(200);
    }
    const before = await server().running.db.prisma.workspace.count();
    const refused = await identity(server(), { type: "anonymous", agent_name: "One too many" });
    expect(refused.status).toBe(429);
    expect(refused.json).toMatchObject({
      error: "rate_limit_exceeded",
      error_description: expect.stringContaining("10 anonymous registrations"),
    });
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await server().running.db.prisma.workspace.count()).toBe(before);
    const other = await identity(server(), { type: "service_auth", login_hint: "someone@example.com" });
    expect(other.status, other.text).toBe(200);
  });
});

e2e(
  "registration types a deployment turns off",
  (server) => {
    it("answers anonymous_not_enabled and service_auth_not_enabled, and makes nothing", async () => {
      const before = await server().running.db.prisma.agentRegistration.count();
      const anonymous = await identity(server(), { type: "anonymous", agent_name: "Nope" });
      expect(anonymous.status).toBe(400);
      expect(anonymous.json).toMatchObject({
        error: "anonymous_not_enabled",
        error_description: expect.any(String),
      });
      const serviceAuth = await identity(server(), {
        type: "service_auth",
        login_hint: "someone@example.com",
      });
      expect(serviceAuth.status).toBe(400);
      expect(serviceAuth.json).toMatchObject({
        error: "service_auth_not_enabled",
        error_description: expect.any(String),
      });
      expect(await server().running.db.prisma.agentRegistration.count()).toBe(before);
    });
  },
  { KONTOR_ANONYMOUS_AGENTS_PER_HOUR: "0", KONTOR_SERVICE_AUTH_AGENTS: "off" },
);
