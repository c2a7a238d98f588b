import { readFileSync } from "node:fs";
import { APIError, Kontor, KontorError, PermissionError, ROUTE_METHODS, ValidationError } from "@kontor/sdk";
import * as documents from "@kontor/sdk/graphql";
import { CreateLeadDocument, LeadDocument, LeadsDocument, WorkspaceDocument } from "@kontor/sdk/graphql";
import {
  buildSchema,
  type GraphQLInputType,
  getNamedType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  type OperationDefinitionNode,
  typeFromAST,
} from "graphql";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { schema as codeSchema } from "../../../schema/index.ts";
import { sessionOnlyFields } from "../../../scripts/sdk-operations.ts";
import { granted, JWT_BEARER_GRANT_TYPE, registerAnonymous, tokenClient } from "../../support/agent-flow.ts";
import { startFakeOpenAI } from "../../support/fake-openai.ts";
import { checkedResponses } from "../../support/openapi-check.ts";
import type { Tenant } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";
import { checkedFetch, failure, REQUEST_ID, sdkFor } from "./support.ts";

/**
 * The SDK (`@kontor/sdk`, imported by its package name as a user would) against a live server:
 * every `/v1` route of the served OpenAPI document has a method, the client's configuration and
 * raw responses, the typed GraphQL documents, and agent access tokens as its key. Every answer the
 * SDK receives is checked against the OpenAPI document by the `fetch` it is given. The namespaces
 * and lists are in namespaces.test.ts, the error classes in errors.test.ts.
 */

const fake = await startFakeOpenAI();
afterAll(() => fake.close());

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"] as const;
const LIMIT_CODES = [
  "query_too_deep",
  "too_many_aliases",
  "too_many_tokens",
  "too_many_directives",
  "query_too_costly",
];

/** Every operation of an OpenAPI document as `METHOD /path`. */
function operations(doc: { paths: Record<string, Record<string, unknown>> }): string[] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    METHODS.filter((m) => item[m]).map((m) => `${m.toUpperCase()} ${path}`),
  );
}

/** The function at `leads.list` on a client, bound to its namespace. */
function methodAt(client: Kontor, dotted: string): ((...args: unknown[]) => unknown) | undefined {
  const parts = dotted.split(".");
  const name = parts.pop()!;
  const namespace = parts.reduce<any>((at, part) => at?.[part], client);
  const fn = namespace?.[name];
  return typeof fn === "function" ? fn.bind(namespace) : undefined;
}

/** Values for an operation's variables, built from their types (for documents run only to see they pass the limits). */
function sampleVariables(
  operation: OperationDefinitionNode,
  schema: ReturnType<typeof buildSchema>,
): Record<string, unknown> {
  const sample = (type: GraphQLInputType): unknown => {
    if (isNonNullType(type)) return sample(type.ofType);
    if (isListType(type)) return [sample(type.ofType)];
    const named = getNamedType(type);
    if (isEnumType(named)) return named.getValues()[0]!.value;
    if (isInputObjectType(named)) {
      return Object.fromEntries(
        Object.values(named.getFields())
          .filter((f) => isNonNullType(f.type))
          .map((f) => [f.name, sample(f.type)]),
      );
    }
    const scalars: Record<string, unknown> = {
      ID: "x_01J00000000000000000000000",
      String: "x",
      Int: 1,
      Float: 1,
      Boolean: true,
      Money: 1,
      Quantity: 1,
      Percent: 1,
      Date: "2026-01-01",
      DateTime: "2026-01-01T00:00:00Z",
    };
    return scalars[named.name] ?? "x";
  };
  return Object.fromEntries(
    (operation.variableDefinitions ?? []).map((definition) => [
      definition.variable.name.value,
      sample(typeFromAST(schema, definition.type as never) as GraphQLInputType),
    ]),
  );
}

e2e(
  "sdk: client",
  (server) => {
    let tenant: Tenant;
    let kontor: Kontor;
    const sdk = sdkFor(server);

    beforeAll(async () => {
      tenant = await server().tenant({ plan: "pro" });
      kontor = sdk(tenant.key);
    });

    describe("the route map", () => {
      it("has a method for every /v1 route of the served OpenAPI document, and no other", async () => {
        const doc = await (await fetch(`${server().api}/openapi.json`)).json();
        const routes = operations(doc).sort();
        expect(routes.length).toBeGreaterThan(70);
        expect(Object.keys(ROUTE_METHODS).sort()).toEqual(routes);
      });

      it("each mapped method calls exactly its route, with an Idempotency-Key on every POST", async () => {
        const seen: { method: string; path: string; key: string | null }[] = [];
        const recording: typeof fetch = async (input, init) => {
          const url = new URL(
            typeof input === "string" ? input : input instanceof URL ? input.href : input.url,
          );
          seen.push({
            method: init?.method ?? "GET",
            path: url.pathname,
            key: new Headers(init?.headers).get("idempotency-key"),
          });
          // Any JSON will do for this check; a list envelope also lets list methods build their page.
          return Response.json({ object: "list", data: [], has_more: false, next_cursor: null });
        };
        const offline = new Kontor({
          apiKey: "ktr_live_recording",
          baseUrl: "http://127.0.0.1:9/v1",
          fetch: recording,
        });
        for (const [route, dotted] of Object.entries(ROUTE_METHODS)) {
          const [method, template] = route.split(" ") as [string, string];
          const fn = methodAt(offline, dotted);
          expect(fn, `${dotted} for ${route}`).toBeTypeOf("function");
          const pathValues = [...template.matchAll(/\{(\w+)\}/g)].map((m) => `${m[1]}_value`);
          seen.length = 0;
          await fn!(...pathValues, {});
          expect(seen, `${dotted} for ${route}`).toHaveLength(1);
          const call = seen[0]!;
          expect(`${call.method} ${call.path}`, dotted).toBe(
            `${method} /v1${template.replace(/\{(\w+)\}/g, "$1_value")}`,
          );
          if (method === "POST")
            expect(call.key, `${dotted} sends an Idempotency-Key`).toMatch(/^kontor-sdk-[0-9a-f-]{32,36}$/);
          else expect(call.key, `${dotted} sends no Idempotency-Key`).toBeNull();
        }
      });
    });

    describe("the client", () => {
      it("falls back to KONTOR_API_KEY and KONTOR_BASE_URL, and refuses to start without a key", async () => {
        const saved = { key: process.env.KONTOR_API_KEY, base: process.env.KONTOR_BASE_URL };
        try {
          process.env.KONTOR_API_KEY = tenant.key;
          process.env.KONTOR_BASE_URL = server().api;
          const fromEnv = new Kontor({ fetch: checkedFetch });
          expect(fromEnv.baseUrl).toBe(server().api);
          expect(fromEnv.graphqlUrl).toBe(`${server().url}/graphql`);
          expect((await fromEnv.workspace.retrieve()).id).toBe(tenant.workspaceId);
          delete process.env.KONTOR_API_KEY;
          expect(() => new Kontor({ baseUrl: server().api })).toThrow(KontorError);
        } finally {
          if (saved.key === undefined) delete process.env.KONTOR_API_KEY;
          else process.env.KONTOR_API_KEY = saved.key;
          if (saved.base === undefined) delete process.env.KONTOR_BASE_URL;
          else process.env.KONTOR_BASE_URL = saved.base;
        }
      });

      it("withResponse() gives the raw response, the request id and the rate-limit headers", async () => {
        const before = checkedResponses();
        const { data, response, requestId, rateLimit } = await kontor.workspace.retrieve().withResponse();
        expect(data).toMatchObject({ object: "workspace", id: tenant.workspaceId, plan: "pro" });
        expect(response.status).toBe(200);
        expect(requestId).toMatch(REQUEST_ID);
        expect(requestId).toBe(response.headers.get("x-request-id"));
        expect(rateLimit).toMatchObject({ limit: 600, plan: "pro" });
        expect(rateLimit!.remaining).toBeLessThan(600);
        expect(rateLimit!.reset).toBeGreaterThan(Date.now() / 1000 - 1);
        expect(checkedResponses()).toBe(before + 1);
      });
    });

    describe("GraphQL", () => {
      it("runs typed documents: queries and mutations", async () => {
        const { createLead } = await kontor.graphql(CreateLeadDocument, {
          full_name: "Grace Hopper",
          stage: "contacted",
        });
        expect(createLead).toMatchObject({
          object: "lead",
          full_name: "Grace Hopper",
          stage: "contacted",
          client: null,
        });
        const { leads } = await kontor.graphql(LeadsDocument, { search: "hopper", limit: 5 });
        expect(leads.data.map((l) => l.id)).toEqual([createLead.id]);
        const { workspace } = await kontor.graphql(WorkspaceDocument);
        expect(workspace.limits.requests_per_minute).toBe(600);
        const text = await kontor.graphql<{ lead: { full_name: string } }>(
          "query ($id: ID!) { lead(id: $id) { full_name } }",
          { id: createLead.id },
        );
        expect(text.lead.full_name).toBe("Grace Hopper");
      });

      it("throws the error class of a field error, with every error and the partial data", async () => {
        const lead = await kontor.leads.create({ full_name: "Partial Lead" });
        const converted = await kontor.leads.convert(lead.id);
        const leadsOnly = await server().key(tenant.workspaceId, ["leads.read"]);
        const error = await failure(sdk(leadsOnly.key).graphql(LeadDocument, { id: lead.id }));
        expect(error).toBeInstanceOf(PermissionError);
        expect(error).toMatchObject({
          code: "insufficient_scope",
          requiredScope: "clients.read",
          status: 403,
        });
        expect(error.graphqlErrors?.[0]?.path).toEqual(["lead", "client"]);
        expect(error.data).toMatchObject({
          lead: { id: lead.id, client_id: converted.client_id, client: null },
        });

        const invalid = await failure(kontor.graphql("{ lead(id: 1) { nope } }"));
        expect(invalid).toBeInstanceOf(ValidationError);
        expect(invalid.code).toBe("validation_failed");
      });

      it("every generated document stays within the server's GraphQL limits", async () => {
        const schema = buildSchema(
          readFileSync(new URL("../../../schema/schema.graphql", import.meta.url), "utf8"),
        );
        const scopeless = sdk((await server().key(tenant.workspaceId, ["logs.write"])).key);
        const all = Object.entries(documents).filter(([name]) => name.endsWith("Document"));
        // Every root field but the dashboard's session-only ones, which no SDK credential may ask.
        const sessionOnly = sessionOnlyFields(codeSchema).size;
        expect(all.length).toBe(
          Object.keys(schema.getQueryType()!.getFields()).length +
            Object.keys(schema.getMutationType()!.getFields()).length -
            sessionOnly,
        );
        for (const [name, document] of all) {
          const operation = (document as unknown as { definitions: OperationDefinitionNode[] })
            .definitions[0]!;
          const variables = sampleVariables(operation, schema);
          const outcome = await scopeless.graphql(document as never, variables as never).then(
            () => null,
            (error: unknown) => error,
          );
          if (outcome === null) continue;
          expect(outcome, name).toBeInstanceOf(APIError);
          const codes = ((outcome as APIError).graphqlErrors ?? []).map((e) => e.extensions?.code);
          for (const code of [(outcome as APIError).code, ...codes])
            expect(LIMIT_CODES, `${name}: ${(outcome as APIError).message}`).not.toContain(code);
        }
      });
    });

    describe("agent access tokens", () => {
      it("work as apiKey on REST and GraphQL", async () => {
        const agent = await registerAnonymous(server(), "SDK agent");
        const token = granted(
          await tokenClient(server().url)(JWT_BEARER_GRANT_TYPE, { assertion: agent.identity_assertion }),
        ).access_token;
        expect(token).toMatch(/^ktr_agt_/);
        const asAgent = sdk(token);
        const workspace = await asAgent.workspace.retrieve();
        expect(workspace.id).toMatch(/^ws_/);
        expect(workspace.id).not.toBe(tenant.workspaceId);
        const lead = await asAgent.leads.create({ full_name: "Agent Lead" });
        expect((await asAgent.graphql(LeadDocument, { id: lead.id })).lead?.full_name).toBe("Agent Lead");
        expect((await failure(kontor.leads.retrieve(lead.id))).status).toBe(404);
      });
    });
  },
  { AI_UPSTREAM_URL: fake.url, AI_UPSTREAM_API_KEY: "sk-sdk-upstream" },
);
