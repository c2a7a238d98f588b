import { GraphQLError } from "graphql";
import { beforeAll, describe, expect, it } from "vitest";
import { ApiError } from "../../../schema/lib/errors.ts";
import { newId } from "../../../schema/lib/ids.ts";
import { startClaimAttempt } from "../../../server/agents/claims.ts";
import { maskError } from "../../../server/graphql/errors.ts";
import { decide, ownerNamed, registerServiceAuth } from "../../support/agent-flow.ts";
import {
  type ApiSession,
  createUser,
  sessionGraphql,
  sessionGraphqlRaw,
  signInApi,
  type TestUser,
} from "../../support/dashboard.ts";
import { type ApiResponse, rest } from "../../support/http.ts";
import type { Tenant } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";

/**
 * Concurrent requests on one object leave exactly the state one of them would: for every state
 * change, N calls at once make one change (one success, the rest the documented error, or all
 * answering the one change when it is idempotent), one created object and one event or audit
 * record of each kind; for every DELETE route, N at once answer one 200 and N-1 404 not_found.
 * The property matters on PostgreSQL, where the requests really run side by side. (A webhook
 * delivery's replay is not in the table: it has no state to change, each replay is a new delivery.)
 */

const N = 10;

type Api = ReturnType<typeof rest>;

/** What one call answered: the HTTP status and, for an error (REST or GraphQL), its code. */
interface Outcome {
  status: number;
  code: string | undefined;
  body: any;
}

const fromRest = (res: ApiResponse): Outcome => ({
  status: res.status,
  code: res.body?.error?.code,
  body: res.body,
});

/** A count that must be exactly 1 once the N calls are done. */
interface Once {
  what: string;
  count: () => Promise<number>;
}

interface Action<T> {
  name: string;
  /** Makes a fresh object for the action to work on. */
  setup: () => Promise<T>;
  act: (target: T) => Promise<Outcome>;
  /** The status of the one call that makes the change. */
  status: number;
  /** What the other N-1 answer: an error, or "same" when the change is idempotent and they all succeed. */
  others: { status: number; code: string } | "same";
  once: (target: T, winner: Outcome) => Once[];
  /** Further checks of the state left behind. */
  after?: (target: T, outcomes: Outcome[]) => Promise<void>;
}

/** Erases an action's target type, so that actions of different targets share one table. */
const action = <T>(spec: Action<T>) => spec as unknown as Action<unknown>;

/** `call` N times at once. */
const atOnce = <T>(call: () => Promise<T>) => Promise.all(Array.from({ length: N }, () => call()));

const unique = (label: string) => `${label}-${newId("lead").slice(-10)}`;

e2e("concurrent requests", (server) => {
  let tenant: Tenant;
  let api: Api;

  beforeAll(async () => {
    // max: the highest request rate, so the bursts below are never rate limited.
    tenant = await server().tenant({ plan: "max" });
    api = rest(server().api, tenant.key);
  });

  const ok = async (res: Promise<ApiResponse>) => {
    const answered = await res;
    expect(answered.status, JSON.stringify(answered.body)).toBeLessThan(300);
    return answered.body;
  };

  /** Every page of a list route. */
  async function everything(path: string): Promise<any[]> {
    const rows: any[] = [];
    let cursor: string | null = null;
    do {
      const separator = path.includes("?") ? "&" : "?";
      const page: any = await ok(
        api.get(`${path}${separator}limit=30${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`),
      );
      rows.push(...page.data);
      cursor = page.has_more ? page.next_cursor : null;
    } while (cursor);
    return rows;
  }

  /** How many events of `type` are about an object that `about` picks. */
  const events = (type: string, about: (object: any) => boolean): Once => ({
    what: `${type} events`,
    count: async () =>
      (await everything(`/events?type=${type}`)).filter((event) => about(event.data.object)).length,
  });
  const eventOf = (type: string, id: string) => events(type, (object) => object.id === id);

  /** How many audit records of `action` name `targetId`, in the workspace `client` reads. */
  const audits = (action: string, targetId: string, client: Api = api): Once => ({
    what: `${action} audit records`,
    count: async () => {
      const page = await ok(client.get(`/audit-events?action=${action}&target_id=${targetId}&limit=100`));
      return page.data.length;
    },
  });

  const counted = (what: string, count: () => Promise<number>): Once => ({ what, count });

  const document = async (body: Record<string, unknown>) => {
    const client = await ok(api.post("/clients", { name: unique("Billed") }));
    return ok(
      api.post("/invoices", {
        client_id: client.id,
        items: [{ description: "Work", quantity: 1, unit_price: 100 }],
        ...body,
      }),
    );
  };
  const sentInvoice = async () => {
    const invoice = await document({});
    return ok(api.post(`/invoices/${invoice.id}/send`));
  };

  /** A member-to-be invited into a new owner's workspace, signed in: what an invitation accept needs. */
  async function invitation() {
    const owner = await createUser(server(), { label: "race-owner", plan: "plus" });
    const invitee = await createUser(server(), { label: "race-invitee" });
    const ownerSession = await signInApi(server(), owner.email);
    const { inviteMember } = await sessionGraphql<{
      inviteMember: { invitation: { id: string }; accept_url: string };
    }>(
      server(),
      ownerSession,
      "mutation($input: InviteMemberInput!) { inviteMember(input: $input) { invitation { id } accept_url } }",
      { input: { email: invitee.email, role: "member" } },
      owner.workspaceId,
    );
    const audit = rest(server().api, (await server().key(owner.workspaceId, ["audit.read"])).key);
    return {
      owner,
      ownerSession,
      inviteeSession: await signInApi(server(), invitee.email),
      id: inviteMember.invitation.id,
      token: new URL(inviteMember.accept_url).hash.replace(/^#token=/, ""),
      audit,
    };
  }

  const accept = async (session: ApiSession, token: string): Promise<Outcome> => {
    const response = await fetch(`${server().url}/dashboard/api/invitations/accept`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Cookie: session.cookie, "X-CSRF-Token": session.csrf },
      body: JSON.stringify({ token }),
    });
    const body: any = await response.json();
    return { status: response.status, code: body?.error?.code, body };
  };

  /** A dashboard GraphQL mutation as an outcome: a field error is data (200) with its code. */
  const sessionMutation = async (
    owner: TestUser,
    session: ApiSession,
    query: string,
    variables: Record<string, unknown>,
  ): Promise<Outcome> => {
    const { status, body } = await sessionGraphqlRaw(server(), session, query, variables, owner.workspaceId);
    return { status, code: body.errors?.[0]?.extensions.code as string | undefined, body };
  };

  const INVALID_STATE = { status: 400, code: "invalid_state" } as const;

  const ACTIONS: Action<unknown>[] = [
    action({
      name: "POST /leads/{id}/convert",
      setup: async () => {
        const last = unique("Convert");
        return {
          last,
          lead: await ok(api.post("/leads", { first_name: "Race", last_name: last, stage: "qualified" })),
        };
      },
      act: async ({ lead }) => fromRest(await api.post(`/leads/${lead.id}/convert`)),
      status: 200,
      others: INVALID_STATE,
      once: ({ last, lead }, winner) => [
        counted("clients made", async () => (await everything(`/clients?search=${last}`)).length),
        eventOf("client.created", winner.body.client_id),
        eventOf("lead.stage_changed", lead.id),
      ],
      after: async ({ lead }, outcomes) => {
        const now = await ok(api.get(`/leads/${lead.id}`));
        expect(now).toMatchObject({
          stage: "won",
          client_id: outcomes.find((o) => o.status === 200)!.body.client_id,
        });
      },
    }),
    action({
      name: "PATCH /leads/{id} to another stage",
      setup: () => ok(api.post("/leads", { first_name: "Stage", last_name: unique("Stage") })),
      act: async (lead: any) => fromRest(await api.patch(`/leads/${lead.id}`, { stage: "lost" })),
      status: 200,
      others: "same",
      once: (lead: any) => [eventOf("lead.stage_changed", lead.id)],
      after: async (_lead, outcomes) => {
        expect(
          new Set(outcomes.map((o) => o.body.stage_changed_at)).size,
          "one stage change, one stage_changed_at",
        ).toBe(1);
      },
    }),
    action({
      name: "POST /invoices/{id}/send (invoice)",
      setup: () => document({}),
      act: async (doc: any) => fromRest(await api.post(`/invoices/${doc.id}/send`)),
      status: 200,
      others: INVALID_STATE,
      once: (doc: any) => [eventOf("invoice.sent", doc.id)],
    }),
    action({
      name: "POST /invoices/{id}/send (quote)",
      setup: () => document({ document_type: "quote" }),
      act: async (doc: any) => fromRest(await api.post(`/invoices/${doc.id}/send`)),
      status: 200,
      others: INVALID_STATE,
      once: (doc: any) => [eventOf("quote.sent", doc.id)],
    }),
    action({
      name: "POST /invoices/{id}/void",
      setup: sentInvoice,
      act: async (doc: any) => fromRest(await api.post(`/invoices/${doc.id}/void`)),
      status: 200,
      others: INVALID_STATE,
      once: (doc: any) => [eventOf("invoice.voided", doc.id)],
    }),
    action({
      name: "POST /invoices/{id}/accept",
      setup: () => document({ document_type: "quote" }),
      act: async (doc: any) => fromRest(await api.post(`/invoices/${doc.id}/accept`)),
      status: 200,
      others: INVALID_STATE,
      once: (doc: any) => [eventOf("quote.accepted", doc.id)],
    }),
    action({
      name: "POST /invoices/{id}/decline",
      setup: () => document({ document_type: "quote" }),
      act: async (doc: any) => fromRest(await api.post(`/invoices/${doc.id}/decline`)),
      status: 200,
      others: INVALID_STATE,
      once: (doc: any) => [eventOf("quote.declined", doc.id)],
    }),
    action({
      name: "POST /invoices/{id}/convert",
      setup: async () => {
        const quote = await document({ document_type: "quote" });
        return ok(api.post(`/invoices/${quote.id}/accept`));
      },
      act: async (quote: any) => fromRest(await api.post(`/invoices/${quote.id}/convert`)),
      status: 201,
      others: INVALID_STATE,
      once: (quote: any) => [
        counted(
          "invoices made from the quote",
          async () =>
            (await everything(`/invoices?document_type=invoice&client_id=${quote.client_id}`)).filter(
              (doc) => doc.quote_id === quote.id,
            ).length,
        ),
        events("invoice.created", (object) => object.quote_id === quote.id),
      ],
      after: async (quote: any) =>
        expect((await ok(api.get(`/invoices/${quote.id}`))).status).toBe("converted"),
    }),
    action({
      name: "POST /invoices/{id}/payments of the whole balance",
      setup: sentInvoice,
      act: async (doc: any) =>
        fromRest(await api.post(`/invoices/${doc.id}/payments`, { amount: 100, payment_method: "cash" })),
      status: 201,
      others: INVALID_STATE,
      once: (doc: any) => [
        events("payment.recorded", (object) => object.invoice_id === doc.id),
        eventOf("invoice.paid", doc.id),
      ],
      after: async (doc: any) =>
        expect(await ok(api.get(`/invoices/${doc.id}`))).toMatchObject({
          status: "paid",
          amount_paid: 100,
          balance_due: 0,
        }),
    }),
    action({
      name: "POST /invoices/{id}/payments that together would overpay",
      setup: sentInvoice,
      act: async (doc: any) =>
        fromRest(await api.post(`/invoices/${doc.id}/payments`, { amount: 60, payment_method: "card" })),
      status: 201,
      others: { status: 400, code: "amount_exceeds_balance" },
      once: (doc: any) => [events("payment.recorded", (object) => object.invoice_id === doc.id)],
      after: async (doc: any) =>
        expect(await ok(api.get(`/invoices/${doc.id}`))).toMatchObject({
          status: "partially_paid",
          amount_paid: 60,
        }),
    }),
    action({
      name: "PATCH /tasks/{id} to done",
      setup: async () => {
        const project = await ok(api.post("/projects", { name: unique("Race project") }));
        return ok(api.post(`/projects/${project.id}/tasks`, { title: "Finish" }));
      },
      act: async (task: any) => fromRest(await api.patch(`/tasks/${task.id}`, { status: "done" })),
      status: 200,
      others: "same",
      once: (task: any) => [eventOf("task.completed", task.id)],
      after: async (_task, outcomes) => {
        expect(new Set(outcomes.map((o) => o.body.completed_at)).size, "done once, one completed_at").toBe(1);
      },
    }),
    action({
      name: "POST /agent-registrations/{id}/revoke",
      setup: async () => {
        const id = newId("agentRegistration");
        await server().running.db.prisma.agentRegistration.create({
          data: {
            id,
            workspaceId: tenant.workspaceId,
            type: "service_auth",
            status: "active",
            scopes: ["leads.read"],
            postClaimScopes: ["leads.read"],
          },
        });
        return id;
      },
      act: async (id: string) => fromRest(await api.post(`/agent-registrations/${id}/revoke`)),
      status: 200,
      others: "same",
      once: (id: string) => [audits("agent_registration.revoked", id)],
      after: async (_id, outcomes) =>
        expect(new Set(outcomes.map((o) => o.body.revoked_at)).size, "revoked once").toBe(1),
    }),
    action({
      name: "claim approvals of one agent through two attempts started at once (the claim page's decideClaim)",
      setup: async () => {
        const email = `${unique("claimer").toLowerCase()}@example.com`;
        const registration = await registerServiceAuth(server(), email);
        const owner = await ownerNamed(server(), tenant.workspaceId, email);
        // Two attempts started at once can both be pending: the second start has not seen the first.
        const second = await startClaimAttempt(server().running.db.prisma, {
          registrationId: registration.registration_id,
          loginHint: email,
          hostUrl: server().url,
        });
        await server().running.db.prisma.claimAttempt.updateMany({
          where: { registrationId: registration.registration_id },
          data: { status: "pending" },
        });
        return {
          id: registration.registration_id,
          owner,
          claims: [registration.claim, second.claim],
          calls: 0,
        };
      },
      act: async (target) => {
        const claim = target.claims[target.calls++ % 2]!;
        const decision = await decide(server(), claim, target.owner.userId, {
          workspaceId: tenant.workspaceId,
        });
        return {
          status: 200,
          code:
            decision.outcome === "approved"
              ? undefined
              : `${decision.outcome}:${"reason" in decision ? decision.reason : ""}`,
          body: decision,
        };
      },
      status: 200,
      others: { status: 200, code: "closed:decided" },
      once: ({ id }) => [audits("agent_registration.approved", id)],
    }),
    action({
      name: "POST /dashboard/api/invitations/accept",
      setup: invitation,
      act: (invite) => accept(invite.inviteeSession, invite.token),
      status: 200,
      others: { status: 400, code: "invitation_invalid" },
      once: (invite) => [audits("invitation.accepted", invite.id, invite.audit)],
    }),
    action({
      name: "revokeInvitation (dashboard GraphQL)",
      setup: invitation,
      act: (invite) =>
        sessionMutation(
          invite.owner,
          invite.ownerSession,
          "mutation($id: ID!) { revokeInvitation(id: $id) { id } }",
          { id: invite.id },
        ),
      status: 200,
      others: "same",
      once: (invite) => [audits("invitation.revoked", invite.id, invite.audit)],
    }),
    action({
      name: "rotateApiKey (dashboard GraphQL)",
      setup: async () => {
        const owner = await createUser(server(), { label: "race-keys", plan: "plus" });
        const key = await server().key(owner.workspaceId, ["leads.read"]);
        const audit = rest(server().api, (await server().key(owner.workspaceId, ["audit.read"])).key);
        return { owner, session: await signInApi(server(), owner.email), id: key.id, audit };
      },
      act: (key) =>
        sessionMutation(
          key.owner,
          key.session,
          "mutation($id: ID!) { rotateApiKey(id: $id) { api_key { id } } }",
          { id: key.id },
        ),
      status: 200,
      others: { status: 200, code: "invalid_state" },
      once: (key) => [audits("api_key.rotated", key.id, key.audit)],
    }),
    action({
      name: "revokeApiKey (dashboard GraphQL)",
      setup: async () => {
        const owner = await createUser(server(), { label: "race-revoke", plan: "plus" });
        const key = await server().key(owner.workspaceId, ["leads.read"]);
        const audit = rest(server().api, (await server().key(owner.workspaceId, ["audit.read"])).key);
        return { owner, session: await signInApi(server(), owner.email), id: key.id, audit };
      },
      act: (key) =>
        sessionMutation(key.owner, key.session, "mutation($id: ID!) { revokeApiKey(id: $id) { id } }", {
          id: key.id,
        }),
      status: 200,
      others: "same",
      once: (key) => [audits("api_key.revoked", key.id, key.audit)],
    }),
  ];

  describe("a state change made N times at once happens once", () => {
    for (const spec of ACTIONS) {
      it(`${spec.name} ×${N}: ${spec.others === "same" ? "all answer the one change" : `one ${spec.status}, the rest ${spec.others.code}`}, each effect once`, async () => {
        const target = await spec.setup();
        const outcomes = await atOnce(() => spec.act(target));
        const summary = JSON.stringify(outcomes.map((o) => `${o.status} ${o.code ?? ""}`));
        const winners = outcomes.filter((o) => o.code === undefined);
        if (spec.others === "same") {
          expect(winners.length, summary).toBe(N);
          for (const outcome of outcomes) expect(outcome.status, summary).toBe(spec.status);
        } else {
          expect(winners.length, summary).toBe(1);
          expect(winners[0]!.status, summary).toBe(spec.status);
          const losers = outcomes.filter((o) => o.code !== undefined);
          for (const loser of losers)
            expect({ status: loser.status, code: loser.code }, summary).toEqual(spec.others);
        }
        for (const once of spec.once(target, winners[0]!)) expect(await once.count(), once.what).toBe(1);
        await spec.after?.(target, outcomes);
      });
    }
  });

  /** Every DELETE route, with how to make what it deletes. */
  const DELETES: { path: string; make: () => Promise<string> }[] = [
    { path: "/clients", make: async () => (await ok(api.post("/clients", { name: unique("Doomed") }))).id },
    { path: "/leads", make: async () => (await ok(api.post("/leads", { first_name: "Doomed" }))).id },
    { path: "/projects", make: async () => (await ok(api.post("/projects", { name: unique("Doomed") }))).id },
    {
      path: "/tasks",
      make: async () => {
        const project = await ok(api.post("/projects", { name: unique("Doomed tasks") }));
        return (await ok(api.post(`/projects/${project.id}/tasks`, { title: "Doomed" }))).id;
      },
    },
    {
      path: "/inventory/items",
      make: async () => (await ok(api.post("/inventory/items", { name: "Doomed", quantity: 5 }))).id,
    },
    {
      path: "/webhook-endpoints",
      make: async () =>
        (
          await ok(
            api.post("/webhook-endpoints", { url: "http://127.0.0.1:9/doomed", events: ["client.updated"] }),
          )
        ).id,
    },
    {
      path: "/buckets",
      make: async () => (await ok(api.post("/buckets", { name: unique("doomed").toLowerCase() }))).id,
    },
    {
      path: "/objects",
      make: async () => {
        const bucket = await ok(api.post("/buckets", { name: unique("files").toLowerCase() }));
        const body = {
          file_name: "doomed.txt",
          content_type: "text/plain",
          content_base64: Buffer.from("doomed").toString("base64"),
        };
        return (await ok(api.post(`/buckets/${bucket.id}/objects`, body))).id;
      },
    },
    {
      path: "/trusted-providers",
      make: async () => {
        const issuer = `https://127.0.0.1:9/${unique("idp")}`;
        return (await ok(api.post("/trusted-providers", { issuer, jwks_url: `${issuer}/jwks` }))).id;
      },
    },
  ];

  describe("a DELETE made N times at once deletes once", () => {
    for (const route of DELETES) {
      it(`DELETE ${route.path}/{id} ×${N}: one 200, the rest 404 not_found, never a 500`, async () => {
        const id = await route.make();
        const outcomes = (await atOnce(() => api.delete(`${route.path}/${id}`))).map(fromRest);
        const summary = JSON.stringify(outcomes.map((o) => `${o.status} ${o.code ?? ""}`));
        expect(outcomes.filter((o) => o.status === 200).length, summary).toBe(1);
        expect(outcomes.find((o) => o.status === 200)!.body).toMatchObject({ id, deleted: true });
        for (const loser of outcomes.filter((o) => o.status !== 200)) {
          expect({ status: loser.status, code: loser.code, param: loser.body.error.param }, summary).toEqual({
            status: 404,
            code: "not_found",
            param: "id",
          });
        }
        expect((await api.delete(`${route.path}/${id}`)).status).toBe(404);
      });
    }
  });
});

describe("the error masking's net for a row deleted under a write", () => {
  it("answers a Prisma P2025 that escaped a route as 404 not_found, never 500 internal_error", () => {
    const prismaError = Object.assign(new Error("No record was found for a delete."), {
      code: "P2025",
      meta: { modelName: "InventoryItem" },
    });
    const masked = maskError(
      new GraphQLError(prismaError.message, { path: ["deleteInventoryItem"], originalError: prismaError }),
      null,
    );
    const shown = (masked as GraphQLError).originalError;
    expect(shown).toBeInstanceOf(ApiError);
    expect(shown).toMatchObject({
      status: 404,
      code: "not_found",
      message: "No such inventory_item: it does not exist, or was deleted at the same time.",
    });
    expect(masked.message).not.toContain("No record was found");
  });
});
