/** The OpenAPI document (checked by Redocly and against what REST returns); GraphQL over HTTP and GraphiQL: compliance-graphql.test.ts. */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, rest } from "../../support/http.ts";
import type { Tenant } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";

const run = promisify(execFile);
const ROOT = new URL("../../..", import.meta.url).pathname;
const REDOCLY = join(ROOT, "node_modules/.bin/redocly");

type Json = Record<string, any>;
const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"] as const;

/** Every operation of an OpenAPI document as `METHOD /path` with its object. */
function operations(doc: Json): { method: string; path: string; op: Json; pathItem: Json }[] {
  return Object.entries(doc.paths as Record<string, Json>).flatMap(([path, pathItem]) =>
    METHODS.filter((m) => pathItem[m]).map((m) => ({
      method: m.toUpperCase(),
      path,
      op: pathItem[m] as Json,
      pathItem,
    })),
  );
}

/** Follows a local `$ref` (`#/components/...`). */
function deref(doc: Json, schema: Json): Json {
  let current = schema;
  while (current && typeof current.$ref === "string") {
    current = current.$ref
      .replace(/^#\//, "")
      .split("/")
      .reduce((node: Json, key: string) => node?.[key], doc);
  }
  return current;
}

/** The named schema behind `{$ref}` or `{allOf: [{$ref}], nullable}`. */
function resolved(doc: Json, schema: Json): Json {
  const direct = deref(doc, schema);
  if (direct?.allOf?.length === 1) return { ...deref(doc, direct.allOf[0]), nullable: direct.nullable };
  return direct;
}

e2e("compliance: OpenAPI", (server) => {
  let tenant: Tenant;

  beforeAll(async () => {
    tenant = await server().tenant();
  });

  describe("OpenAPI document", () => {
    let doc: Json;
    let dir: string;
    let file: string;

    beforeAll(async () => {
      const res = await call("GET", `${server().api}/openapi.json`);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toMatch(/^application\/json/);
      doc = res.body;
      dir = mkdtempSync(join(tmpdir(), "kontor-openapi-"));
      file = join(dir, "openapi.json");
      writeFileSync(file, JSON.stringify(doc, null, 2));
    });

    afterAll(() => {
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it("is served without a credential as OpenAPI 3", () => {
      expect(doc.openapi).toMatch(/^3\.\d+\.\d+$/);
      expect(doc.info?.title).toBeTruthy();
      expect(doc.info?.version).toBeTruthy();
    });

    it("passes `redocly lint --extends recommended` with zero errors", async () => {
      let stdout: string;
      let exitCode = 0;
      try {
        ({ stdout } = await run(REDOCLY, ["lint", "--extends", "recommended", "--format=json", file], {
          cwd: ROOT,
          env: {
            ...process.env,
            REDOCLY_TELEMETRY: "off",
            REDOCLY_SUPPRESS_UPDATE_NOTICE: "true",
            NO_COLOR: "1",
          },
          maxBuffer: 32 * 1024 * 1024,
          timeout: 60_000,
        }));
      } catch (error) {
        // redocly exits non-zero when it reports errors; the JSON report is still on stdout.
        const failure = error as { stdout?: string; stderr?: string; code?: number };
        stdout = failure.stdout ?? "";
        exitCode = typeof failure.code === "number" ? failure.code : 1;
        if (!stdout.trim().startsWith("{"))
          throw new Error(`redocly failed to run: ${failure.stderr ?? String(error)}`);
      }
      const report = JSON.parse(stdout.slice(stdout.indexOf("{"))) as {
        totals: { errors: number; warnings: number; ignored: number };
        problems: { ruleId: string; severity: string; message: string; location?: { pointer?: string }[] }[];
      };
      const show = (p: (typeof report.problems)[number]) =>
        `${p.severity} ${p.ruleId} at ${p.location?.[0]?.pointer ?? "?"}: ${p.message}`;
      const errors = report.problems.filter((p) => p.severity === "error");
      const warnings = report.problems.filter((p) => p.severity !== "error");
      if (warnings.length > 0) {
        console.info(
          `redocly lint [${server().stack}]: ${warnings.length} warning(s) (allowed):\n${warnings.map((p) => `  - ${show(p)}`).join("\n")}`,
        );
      }
      expect(errors.map(show), `redocly lint errors:\n${errors.map(show).join("\n")}`).toEqual([]);
      expect(report.totals.errors).toBe(0);
      expect(exitCode).toBe(0);
    });

    it("publishes exactly the REST routes", () => {
      const routes = operations(doc)
        .map(({ method, path }) => `${method} ${path}`)
        .sort();
      expect(routes).toEqual(
        [
          "GET /leads",
          "POST /leads",
          "GET /leads/{id}",
          "PATCH /leads/{id}",
          "DELETE /leads/{id}",
          "POST /leads/{id}/convert",
          "GET /clients",
          "POST /clients",
          "GET /clients/{id}",
          "PATCH /clients/{id}",
          "DELETE /clients/{id}",
          "GET /workspace",
          "GET /summary",
          "GET /inventory/items",
          "POST /inventory/items",
          "GET /inventory/items/{id}",
          "PATCH /inventory/items/{id}",
          "DELETE /inventory/items/{id}",
          "GET /invoices",
          "POST /invoices",
          "GET /invoices/{id}",
          "PATCH /invoices/{id}",
          "POST /invoices/{id}/send",
          "POST /invoices/{id}/void",
          "POST /invoices/{id}/accept",
          "POST /invoices/{id}/decline",
          "POST /invoices/{id}/convert",
          "POST /invoices/{invoice_id}/payments",
          "GET /projects",
          "POST /projects",
          "GET /projects/{id}",
          "PATCH /projects/{id}",
          "DELETE /projects/{id}",
          "GET /projects/{project_id}/tasks",
          "POST /projects/{project_id}/tasks",
          "GET /tasks/{id}",
          "PATCH /tasks/{id}",
          "DELETE /tasks/{id}",
          "GET /request-logs",
          "GET /request-logs/stats",
          "GET /webhook-endpoints",
          "POST /webhook-endpoints",
          "GET /webhook-endpoints/{id}",
          "PATCH /webhook-endpoints/{id}",
          "DELETE /webhook-endpoints/{id}",
          "POST /webhook-endpoints/{id}/rotate-secret",
          "POST /webhook-endpoints/{id}/test",
          "GET /webhook-deliveries",
          "GET /webhook-deliveries/{id}",
          "POST /webhook-deliveries/{id}/replay",
          "GET /events",
          "GET /events/{id}",
          "GET /agent-settings",
          "PATCH /agent-settings",
          "GET /trusted-providers",
          "POST /trusted-providers",
          "GET /trusted-providers/{id}",
          "DELETE /trusted-providers/{id}",
          "GET /agent-registrations",
          "GET /agent-registrations/{id}",
          "POST /agent-registrations/{id}/revoke",
          "GET /audit-events",
          "GET /audit-events/{id}",
          "GET /buckets",
          "POST /buckets",
          "GET /buckets/{id}",
          "DELETE /buckets/{id}",
          "GET /buckets/{bucket_id}/objects",
          "POST /buckets/{bucket_id}/objects",
          "GET /objects/{id}",
          "DELETE /objects/{id}",
          "GET /objects/{id}/content",
          "GET /storage",
          "GET /models",
          "GET /models/{model}",
          "POST /chat/completions",
          "POST /responses",
        ].sort(),
      );
    });

    it("gives every operation a summary and a unique operationId", () => {
      const ids = new Set<string>();
      for (const { method, path, op } of operations(doc)) {
        const label = `${method} ${path}`;
        expect(
          typeof op.summary === "string" && op.summary.trim().length > 0,
          `${label} has no summary`,
        ).toBe(true);
        expect(
          typeof op.operationId === "string" && /^[A-Za-z][A-Za-z0-9_]*$/.test(op.operationId),
          `${label} has no operationId`,
        ).toBe(true);
        expect(ids.has(op.operationId), `${label}: duplicate operationId ${op.operationId}`).toBe(false);
        ids.add(op.operationId);
        expect(
          Object.keys(op.responses ?? {}).some((s) => /^2\d\d$/.test(s)),
          `${label} documents no success response`,
        ).toBe(true);
      }
    });

    it("takes POST and PATCH arguments only in the body, never in the query string", () => {
      for (const { method, path, op, pathItem } of operations(doc)) {
        if (method !== "POST" && method !== "PATCH") continue;
        const params = [...(pathItem.parameters ?? []), ...(op.parameters ?? [])].map((p: Json) =>
          deref(doc, p),
        );
        const inQuery = params.filter((p) => p.in === "query").map((p) => p.name);
        // A raw upload's body is the file: its name and type can only travel in the query string.
        const rawForm = Object.keys(op.requestBody?.content ?? {}).some((type) => !type.includes("json"));
        expect(inQuery, `${method} ${path} declares query parameters`).toEqual(
          rawForm ? ["file_name", "content_type"] : [],
        );
        const hasBodyArgs = !/\/(convert|send|void|accept|decline|rotate-secret|test|replay|revoke)$/.test(
          path,
        );
        if (hasBodyArgs) {
          const schema = deref(doc, op.requestBody?.content?.["application/json"]?.schema ?? {});
          expect(
            Object.keys(schema.properties ?? {}).length,
            `${method} ${path} has no JSON body`,
          ).toBeGreaterThan(0);
        }
      }
    });

    it("declares every path parameter, and only those, as required path parameters", () => {
      for (const { method, path, op, pathItem } of operations(doc)) {
        const inTemplate = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!).sort();
        const params = [...(pathItem.parameters ?? []), ...(op.parameters ?? [])].map((p: Json) =>
          deref(doc, p),
        );
        const declared = params.filter((p) => p.in === "path");
        expect(declared.map((p) => p.name).sort(), `${method} ${path}`).toEqual(inTemplate);
        for (const p of declared) {
          expect(p.required, `${method} ${path}: path parameter ${p.name} must be required`).toBe(true);
          expect(p.schema, `${method} ${path}: path parameter ${p.name} needs a schema`).toBeTruthy();
        }
      }
    });

    it("requires an http bearer scheme for the whole document", () => {
      const schemes = (doc.components?.securitySchemes ?? {}) as Record<string, Json>;
      const bearer = Object.entries(schemes)
        .filter(([, s]) => s.type === "http" && String(s.scheme).toLowerCase() === "bearer")
        .map(([name]) => name);
      expect(bearer.length, "components.securitySchemes has no http bearer scheme").toBeGreaterThan(0);
      expect(
        Array.isArray(doc.security) && doc.security.length > 0,
        "the document has no top-level security",
      ).toBe(true);
      for (const requirement of doc.security as Json[]) {
        expect(
          Object.keys(requirement).some((name) => bearer.includes(name)),
          `security ${JSON.stringify(requirement)} does not use the bearer scheme`,
        ).toBe(true);
      }
      for (const { method, path, op } of operations(doc)) {
        if (op.security === undefined) continue;
        expect(op.security.length, `${method} ${path} opts out of authentication`).toBeGreaterThan(0);
      }
    });

    it("describes REST calls that work as documented (POST /leads, then GET /leads/{id})", async () => {
      const base = doc.servers?.[0]?.url as string;
      expect(base, "servers[0].url").toBe(server().api);
      const schemeName = Object.keys(doc.security[0])[0]!;
      const scheme = doc.components.securitySchemes[schemeName];
      expect(scheme).toMatchObject({ type: "http", scheme: "bearer" });
      const auth = { authorization: `Bearer ${tenant.key}` };

      const create = doc.paths["/leads"].post as Json;
      const bodySchema = deref(doc, create.requestBody.content["application/json"].schema);
      const properties = bodySchema.properties as Record<string, Json>;
      expect(Object.keys(properties)).toEqual(expect.arrayContaining(["first_name", "last_name"]));

      // A body built only from the document: a value per property, chosen by its declared type.
      const body: Record<string, unknown> = { first_name: "Documented", last_name: "Caller" };
      for (const [name, raw] of Object.entries(properties)) {
        const schema = resolved(doc, raw);
        if (schema.enum) body[name] = schema.enum[schema.enum.length - 1];
        else if (schema.format === "date") body[name] = "2026-06-30";
        else if (schema.format === "date-time") body[name] = "2026-06-30T12:00:00Z";
        else if (schema.type === "number" && schema.multipleOf === 0.01) body[name] = 1234.56;
      }
      for (const name of bodySchema.required ?? [])
        expect(body, `required body field ${name}`).toHaveProperty(name);
      const success = Object.keys(create.responses).find((s) => /^2\d\d$/.test(s))!;

      const created = await call("POST", `${base}/leads`, { headers: auth, body });
      expect(created.status, JSON.stringify(created.body)).toBe(Number(success));
      expect(created.headers.get("x-request-id")).toBeTruthy();
      const responseSchema = resolved(doc, create.responses[success].content["application/json"].schema);
      for (const name of responseSchema.required ?? [])
        expect(created.body, `response field ${name}`).toHaveProperty(name);
      const undocumented = Object.keys(created.body).filter((name) => !(name in responseSchema.properties));
      expect(undocumented, "response fields the document does not describe").toEqual([]);
      for (const [name, value] of Object.entries(body))
        expect(created.body[name], name).toEqual(
          value === "2026-06-30T12:00:00Z" ? "2026-06-30T12:00:00.000Z" : value,
        );

      const retrieve = doc.paths["/leads/{id}"].get as Json;
      const idParam = retrieve.parameters.map((p: Json) => deref(doc, p)).find((p: Json) => p.in === "path");
      const path = "/leads/{id}".replace(`{${idParam.name}}`, encodeURIComponent(created.body.id));
      const read = await call("GET", `${base}${path}`, { headers: auth });
      expect(read.status).toBe(Number(Object.keys(retrieve.responses).find((s) => /^2\d\d$/.test(s))));
      expect(read.body).toEqual(created.body);

      // The documented 401 for a call without the bearer scheme.
      expect(retrieve.responses["401"] ?? doc.components.responses?.Error401).toBeTruthy();
      const anonymous = await call("GET", `${base}${path}`);
      expect(anonymous.status).toBe(401);
      expect(anonymous.body.error).toMatchObject({ type: "authentication_error" });

      // And a documented list read with its query parameters.
      const list = await rest(base, tenant.key).get(`/leads?limit=1`);
      expect(list.status).toBe(200);
      expect(list.body.data[0].id).toBe(created.body.id);
    });
  });

  describe("OpenAPI response schemas match what REST returns", () => {
    it("documents no property that REST responses never carry (fields marked `rest: false`)", async () => {
      const doc = (await call("GET", `${server().api}/openapi.json`)).body as Json;
      const api = rest(server().api, tenant.key);
      const lead = (await api.post("/leads", { full_name: "Schema Check", company_name: "Docs Inc" })).body;
      const converted = (await api.post(`/leads/${lead.id}/convert`)).body;
      expect(converted.client_id).toMatch(/^cli_/);
      const client = (await api.get(`/clients/${converted.client_id}`)).body;
      const workspace = (await api.get("/workspace")).body;
      const samples: [string, string, Json][] = [
        ["/leads/{id}", "get", converted],
        ["/clients/{id}", "get", client],
        ["/workspace", "get", workspace],
      ];
      for (const [path, method, body] of samples) {
        const op = doc.paths[path][method] as Json;
        const success = Object.keys(op.responses).find((s) => /^2\d\d$/.test(s))!;
        const schema = resolved(doc, op.responses[success].content["application/json"].schema);
        const phantom = Object.keys(schema.properties).filter((name) => !(name in body));
        expect(
          phantom,
          `${method.toUpperCase()} ${path}: documented properties the REST response never has`,
        ).toEqual([]);
      }
    });
  });
});
