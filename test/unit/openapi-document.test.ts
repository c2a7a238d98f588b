import {
  GraphQLEnumType,
  type GraphQLFieldConfig,
  GraphQLID,
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  type GraphQLOutputType,
  GraphQLScalarType,
  GraphQLSchema,
  GraphQLString,
} from "graphql";
import { describe, expect, it } from "vitest";
import { rest, restView } from "../../schema/lib/rest.ts";
import { buildOpenApi } from "../../server/rest/openapi.ts";
import { routeTable } from "../../server/rest/view.ts";
import type { Config } from "../../server/runtime/config.ts";

type Json = Record<string, any>;

const nn = <T extends GraphQLOutputType>(type: T) => new GraphQLNonNull(type);
const JSONObject = new GraphQLScalarType({ name: "JSONObject" });
const Stage = new GraphQLEnumType({ name: "Stage", values: { open: {}, closed: {} } });

const Owner: GraphQLObjectType = new GraphQLObjectType({
  name: "Owner",
  fields: () => ({
    object: { type: nn(GraphQLString), extensions: { literal: "owner" } },
    id: { type: nn(GraphQLID) },
    name: { type: nn(GraphQLString) },
    things: { type: nn(new GraphQLList(nn(Thing))) },
  }),
});

const Thing: GraphQLObjectType = new GraphQLObjectType({
  name: "Thing",
  fields: () => ({
    object: { type: nn(GraphQLString), extensions: { literal: "thing" } },
    id: { type: nn(GraphQLID) },
    label: { type: GraphQLString },
    stage: { type: nn(Stage) },
    payload: { type: nn(JSONObject) },
    owner: { type: nn(Owner) },
    secret: { type: GraphQLString, extensions: { rest: false } },
  }),
});

/** An `object` field without the literal extension: a plain string. */
const Loose = new GraphQLObjectType({
  name: "Loose",
  fields: { object: { type: nn(GraphQLString) }, id: { type: nn(GraphQLID) } },
});

const id = { type: nn(GraphQLID) };
const field = (
  type: GraphQLOutputType,
  extensions: Json,
  args: Json = {},
): GraphQLFieldConfig<unknown, unknown> => ({ type, args, extensions });

function schema() {
  return new GraphQLSchema({
    query: new GraphQLObjectType({
      name: "Query",
      fields: {
        // A list query and a by-id query: Sofa treats Thing as a model, referenced as {id}.
        things: field(nn(new GraphQLList(nn(Thing))), rest("GET /things", "List things")),
        thing: field(Thing, rest("GET /things/:id", "Retrieve a thing"), { id }),
        owner: field(Owner, rest("GET /owners/:id", "Retrieve an owner"), { id }),
        loose: field(nn(Loose), rest("GET /loose", "The loose one")),
      },
    }),
    mutation: new GraphQLObjectType({
      name: "Mutation",
      fields: {
        createThing: field(nn(Thing), rest("POST /things", "Create a thing", 201), {
          label: { type: nn(GraphQLString), extensions: { maxLength: 5 } },
          note: { type: GraphQLString },
          stage: { type: nn(Stage), defaultValue: "open" },
        }),
        updateThing: field(
          nn(Thing),
          { ...rest("PATCH /things/:id", "Update a thing"), errors: ["sku_taken"] },
          {
            id,
            label: { type: GraphQLString, extensions: { maxLength: 5 } },
            tags: { type: new GraphQLList(nn(GraphQLString)), extensions: { maxLength: 10, maxItems: 3 } },
          },
        ),
      },
    }),
  });
}

const config = (policies = true) => ({ publicUrl: "http://127.0.0.1:4000", policies }) as Config;
const build = (policies = true) => buildOpenApi(routeTable(restView(schema())), config(policies)) as Json;

function deref(doc: Json, node: Json): Json {
  let current = node;
  while (typeof current?.$ref === "string")
    current = current.$ref
      .replace(/^#\//, "")
      .split("/")
      .reduce((at: Json, key: string) => at[key], doc);
  return current;
}

const success = (doc: Json, path: string, method: string) => {
  const op = doc.paths[path][method];
  const status = Object.keys(op.responses).find((s) => /^2/.test(s))!;
  return op.responses[status].content["application/json"].schema as Json;
};

describe("buildOpenApi", () => {
  it("declares `object` as its literal when the field has one, else a plain string", () => {
    const doc = build();
    expect(doc.components.schemas.Thing.properties.object).toMatchObject({ type: "string", enum: ["thing"] });
    expect(doc.components.schemas.Loose.properties.object).toEqual({ type: "string" });
  });

  it("maps JSONObject to an object with any properties", () => {
    expect(build().components.schemas.Thing.properties.payload).toEqual({
      type: "object",
      additionalProperties: true,
    });
  });

  it("describes the selection Sofa runs: models referenced as {id}, a type met below itself cut off, rest: false left out", () => {
    const doc = build();
    const owner = deref(doc, success(doc, "/owners/{id}", "get"));
    expect(owner.properties.things.items).toEqual({ $ref: "#/components/schemas/ThingReference" });
    expect(doc.components.schemas.ThingReference).toEqual({
      type: "object",
      properties: { id: { type: "string" } },
      required: ["id"],
      additionalProperties: false,
    });
    const thing = deref(doc, success(doc, "/things/{id}", "get"));
    expect(Object.keys(thing.properties)).toEqual(["object", "id", "label", "stage", "payload", "owner"]);
    expect(thing.properties.owner).toEqual({ $ref: "#/components/schemas/OwnerWithoutThings" });
    expect(Object.keys(doc.components.schemas.OwnerWithoutThings.properties)).toEqual([
      "object",
      "id",
      "name",
    ]);
    expect(thing.additionalProperties).toBe(false);
  });

  it("types every success body as non-nullable, retrieves included", () => {
    const doc = build();
    expect(success(doc, "/things/{id}", "get")).toEqual({ $ref: "#/components/schemas/Thing" });
    for (const [path, item] of Object.entries(doc.paths as Record<string, Json>)) {
      for (const method of Object.keys(item))
        expect(success(doc, path, method).nullable, `${method} ${path}`).toBeUndefined();
    }
  });

  it("requires a body only when a body argument is required without a default, with the limits the arguments publish", () => {
    const doc = build();
    const create = doc.paths["/things"].post.requestBody;
    expect(create.required).toBe(true);
    const createSchema = create.content["application/json"].schema;
    expect(createSchema.required).toEqual(["label"]);
    expect(createSchema.properties.label).toMatchObject({ type: "string", maxLength: 5 });
    expect(createSchema.properties.note).toEqual({ type: "string", nullable: true });
    expect(createSchema.additionalProperties).toBe(false);

    const update = doc.paths["/things/{id}"].patch.requestBody;
    expect(update.required).toBe(false);
    const tags = update.content["application/json"].schema.properties.tags;
    expect(tags).toMatchObject({ type: "array", maxItems: 3, items: { type: "string", maxLength: 10 } });
    expect(tags.items.maxItems).toBeUndefined();
  });

  it("declares the statuses each route can answer, with the Error schema and its codes", () => {
    const doc = build();
    const statuses = (path: string, method: string) => Object.keys(doc.paths[path][method].responses);
    expect(statuses("/things", "get")).toEqual([
      "200",
      "400",
      "401",
      "403",
      "405",
      "408",
      "414",
      "429",
      "500",
      "503",
    ]);
    expect(statuses("/things/{id}", "get")).toEqual([
      "200",
      "400",
      "401",
      "403",
      "404",
      "405",
      "408",
      "414",
      "429",
      "500",
      "503",
    ]);
    expect(statuses("/things", "post")).toEqual([
      "201",
      "400",
      "401",
      "403",
      "405",
      "408",
      "409",
      "413",
      "414",
      "415",
      "429",
      "500",
      "503",
    ]);
    expect(statuses("/things/{id}", "patch")).toEqual([
      "200",
      "400",
      "401",
      "403",
      "404",
      "405",
      "408",
      "409",
      "413",
      "414",
      "415",
      "429",
      "500",
      "503",
    ]);

    const response = (path: string, method: string, status: string) =>
      deref(doc, doc.paths[path][method].responses[status]);
    const codes = (r: Json) =>
      r.content["application/json"].schema.allOf[1].properties.error.properties.code.enum;
    expect(codes(response("/things/{id}", "patch", "409"))).toEqual(["sku_taken"]);
    expect(codes(response("/things", "post", "409"))).toEqual([
      "idempotency_conflict",
      "idempotency_in_progress",
      "idempotency_not_replayable",
    ]);
    expect(codes(response("/things", "get", "400"))).toEqual(["validation_failed"]);
    expect(codes(response("/things", "post", "400"))).toContain("idempotency_key_invalid");
    for (const [path, item] of Object.entries(doc.paths as Record<string, Json>)) {
      for (const [method, op] of Object.entries(item as Record<string, Json>)) {
        for (const [status, raw] of Object.entries(op.responses as Record<string, Json>)) {
          if (/^2/.test(status)) continue;
          const r = deref(doc, raw);
          expect(r.content["application/json"].schema.allOf[0], `${method} ${path} ${status}`).toEqual({
            $ref: "#/components/schemas/Error",
          });
          for (const code of codes(r))
            expect(r.description, `${method} ${path} ${status}`).toContain(`\`${code}\``);
        }
      }
    }
  });

  it("refuses a route that declares an error code it does not know", () => {
    const broken = new GraphQLSchema({
      query: new GraphQLObjectType({
        name: "Query",
        fields: {
          loose: field(nn(Loose), { ...rest("GET /loose", "The loose one"), errors: ["no_such_code"] }),
        },
      }),
    });
    expect(() => buildOpenApi(routeTable(restView(broken)), config())).toThrow(/no_such_code/);
  });

  it("declares the headers: Idempotency-Key on POST, the common ones everywhere, Retry-After on 429 and 503, Allow on 405, WWW-Authenticate on 401 and 403", () => {
    const doc = build();
    for (const [path, item] of Object.entries(doc.paths as Record<string, Json>)) {
      for (const [method, op] of Object.entries(item as Record<string, Json>)) {
        const params = (op.parameters as Json[]).map((p) => deref(doc, p));
        expect(
          params.some((p) => p.in === "header" && p.name === "Idempotency-Key"),
          `${method} ${path}`,
        ).toBe(method === "post");
        for (const [status, raw] of Object.entries(op.responses as Record<string, Json>)) {
          const names = Object.keys(deref(doc, raw).headers);
          const where = `${method} ${path} ${status}`;
          // A 408 (slow headers, an idle body) is answered before any policy counted the request.
          if (status === "408") expect(names, where).toEqual(["X-Request-Id"]);
          else
            expect(names, where).toEqual(
              expect.arrayContaining([
                "X-Request-Id",
                "X-RateLimit-Limit",
                "X-RateLimit-Remaining",
                "X-RateLimit-Reset",
                "X-RateLimit-Plan",
              ]),
            );
          expect(names.includes("Retry-After"), where).toBe(status === "429" || status === "503");
          expect(names.includes("Allow"), where).toBe(status === "405");
          // 401: the challenge; 403: the insufficient_scope challenge, sent with that code only.
          expect(names.includes("WWW-Authenticate"), where).toBe(status === "401" || status === "403");
          if (method !== "post") expect(names, where).not.toContain("Idempotent-Replay");
        }
        if (method === "post")
          expect(Object.keys(deref(doc, op.responses["201"]).headers)).toContain("Idempotent-Replay");
      }
    }
    expect(doc.components.headers.RetryAfter).toMatchObject({
      required: true,
      schema: { type: "integer", minimum: 1 },
    });
    expect(doc.components.headers.WWWAuthenticate.schema.pattern).toContain("127\\.0\\.0\\.1:4000");
  });

  it("leaves the rate-limit headers out when the policies are off", () => {
    const doc = build(false);
    const headers = deref(doc, doc.paths["/things"].get.responses["200"]).headers;
    expect(Object.keys(headers)).toEqual(["X-Request-Id"]);
  });
});
