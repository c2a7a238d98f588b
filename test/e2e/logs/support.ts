import { randomUUID } from "node:crypto";
import { ulid } from "ulid";
import { expect } from "vitest";
import { prepare } from "../../../server/control/commands.ts";
import type { RequestLogRow } from "../../../server/observability/request-log.ts";
import { DashboardClient, PASSWORD } from "../../support/dashboard-session.ts";
import { type ApiResponse, call, rest } from "../../support/http.ts";
import type { TestServer } from "../../support/server.ts";

/** What the logs suites share: the request-log suites (request-logs-*.test.ts) and the audit-log ones (audit-*.test.ts). */

export const DAY_MS = 86_400_000;

// Request logs.

export const MISSING_LEAD = "lead_01J00000000000000000000000";

export type Api = ReturnType<typeof rest>;

export const idOf = (res: { headers: Headers }) => {
  const id = res.headers.get("x-request-id");
  expect(id).toMatch(/^req_[0-9A-Z]{26}$/);
  return id!;
};

/** Every page of a list, following next_cursor. */
export async function allPages(api: Api, query: string) {
  const items: any[] = [];
  let cursor: string | null = null;
  do {
    const sep = query ? "&" : "";
    const res: ApiResponse = await api.get(
      `/request-logs?${query}${sep}limit=100${cursor ? `&cursor=${cursor}` : ""}`,
    );
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    items.push(...res.body.data);
    cursor = res.body.next_cursor;
  } while (cursor);
  return items;
}

export function oldRow(
  workspaceId: string | null,
  createdAt: Date,
  extra: Partial<RequestLogRow> = {},
): RequestLogRow {
  return {
    id: `req_${ulid(createdAt.getTime())}`,
    workspaceId,
    credentialId: null,
    method: "GET",
    route: "/v1/leads",
    status: 200,
    latencyMs: 5,
    errorCode: null,
    clientIp: "192.0.2.1",
    userAgent: "inserted-by-test",
    createdAt,
    ...extra,
  };
}

// The audit log.

/**
 * The audit log (docs/security.md "Audit log"): every change to access writes one record in its
 * own transaction, with who made it, from where, and the request that made it; GET /v1/audit-events
 * reads them (audit.read: API keys and owners only), nothing changes them, and the sweep drops them
 * after 400 days.
 */

const LOOPBACK = ["127.0.0.1", "::1"];
export const uniqueEmail = (label: string) => `${label}-${randomUUID().slice(0, 8)}@example.com`;
/** A User-Agent of its own for each change, so each record's user_agent is known. */
export const agentOf = (label: string) => `audit-test/${label} (${randomUUID().slice(0, 8)})`;

export interface AuditRecord {
  object: "audit_event";
  id: string;
  action: string;
  actor: { type: string; id: string | null; email: string | null };
  target: { type: string; id: string | null };
  client_ip: string | null;
  user_agent: string | null;
  request_id: string | null;
  created_at: string;
}

/** What a change made over HTTP must have written. */
interface Expected {
  action: string;
  actor: { type: string; id: string | null; email?: string | null };
  target: { type: string; id: string | null };
  userAgent: string;
  requestId: string;
}

export function expectRecord(record: AuditRecord | undefined, expected: Expected) {
  expect(record, `a ${expected.action} record`).toBeDefined();
  expect(record).toMatchObject({
    object: "audit_event",
    id: expect.stringMatching(/^aud_[0-9A-Z]{26}$/),
    action: expected.action,
    actor: { type: expected.actor.type, id: expected.actor.id, email: expected.actor.email ?? null },
    target: expected.target,
    user_agent: expected.userAgent,
    request_id: expected.requestId,
  });
  expect(LOOPBACK).toContain(record!.client_ip);
}

/** A workspace with its owner (signed in through the account API) and a key that reads the audit log. */
export interface Owned {
  workspaceId: string;
  email: string;
  userId: string;
  dashboard: DashboardClient;
  /** Holds audit.read, agents.*, webhooks.* and leads.read. */
  key: { id: string; key: string };
  audit: (query?: string) => Promise<AuditRecord[]>;
}

/** The helpers of an audit suite, bound to its server: called inside `e2e(...)` with its server getter. */
export function auditHelpers(server: () => TestServer) {
  const db = () => server().running.db.prisma;

  /** The records of a workspace, newest first, read through the API with a key holding audit.read. */
  const reader =
    (key: string) =>
    async (query = "") => {
      const res = await rest(server().api, key).get(`/audit-events?limit=100${query ? `&${query}` : ""}`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body.data as AuditRecord[];
    };

  async function ownedWorkspace(label: string, plan: "free" | "pro" = "pro"): Promise<Owned> {
    const email = uniqueEmail(label);
    const cli = await prepare([
      "workspace",
      "create",
      "--name",
      `Audit ${label}`,
      "--plan",
      plan,
      "--owner-email",
      email,
      "--owner-password",
      PASSWORD,
      "--json",
    ]).run(cliContext());
    const { workspace_id: workspaceId, owner_id: userId } = cli.json as {
      workspace_id: string;
      owner_id: string;
    };
    const key = await server().key(workspaceId, [
      "audit.read",
      "agents.read",
      "agents.write",
      "webhooks.read",
      "webhooks.write",
      "leads.read",
    ]);
    const dashboard = new DashboardClient(server().url);
    await dashboard.session();
    const signedIn = await dashboard.api("POST", "/sign-in", { email, password: PASSWORD });
    expect(signedIn.status, signedIn.text).toBe(200);
    dashboard.workspace = workspaceId;
    return { workspaceId, email, userId, dashboard, key, audit: reader(key.key) };
  }

  const cliContext = () => ({
    prisma: db(),
    migrate: async () => [],
    signingKeys: () => {
      throw new Error("not needed");
    },
    revocations: server().running.revocations,
  });

  /** A GraphQL request with the session of `owned`, a User-Agent of its own; answers the data and the response's request id. */
  async function asOwner(owned: Owned, query: string, variables: Record<string, unknown>, userAgent: string) {
    const res = await owned.dashboard.graphql(query, variables, { headers: { "user-agent": userAgent } });
    expect(res.status).toBe(200);
    return {
      data: res.json.data as any,
      errors: res.json.errors,
      requestId: res.headers.get("x-request-id")!,
    };
  }

  /** A /v1 call with a key and a User-Agent of its own. */
  async function withKey(key: string, method: string, path: string, body: unknown, userAgent: string) {
    const res = await call(method, `${server().api}${path}`, {
      key,
      body,
      headers: { "user-agent": userAgent },
    });
    return { ...res, requestId: res.headers.get("x-request-id")! };
  }

  return { db, reader, ownedWorkspace, cliContext, asOwner, withKey };
}
