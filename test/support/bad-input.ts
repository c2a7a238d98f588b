/**
 * The bad-input sweep's machinery: reads the OpenAPI document, builds fixtures from it, generates
 * malformed variants of every operation and judges the answers. Nothing here knows a route by name;
 * what a resource needs beyond its schema comes in through `FixtureHints`.
 */

export interface Schema {
  type?: string;
  format?: string;
  enum?: string[];
  items?: Schema;
  properties?: Record<string, Schema>;
  required?: string[];
  nullable?: boolean;
  allOf?: Schema[];
  oneOf?: Schema[];
  anyOf?: Schema[];
  $ref?: string;
  minimum?: number;
  maximum?: number;
  multipleOf?: number;
  minLength?: number;
  maxLength?: number;
  maxItems?: number;
  pattern?: string;
}

interface Parameter {
  name: string;
  in: "path" | "query" | "header";
  required?: boolean;
  schema: Schema;
}

interface Operation {
  operationId: string;
  parameters?: (Parameter | { $ref: string })[];
  requestBody?: { required?: boolean; content: Record<string, { schema: Schema }> };
}

export interface OpenApiDoc {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema>; parameters?: Record<string, Parameter> };
}

export interface Endpoint {
  method: string;
  /** The document's template, `/leads/{id}`. */
  path: string;
  label: string;
  pathParams: Parameter[];
  queryParams: Parameter[];
  headerParams: Parameter[];
  body: { required: boolean; schema: Schema } | undefined;
}

export function endpointsOf(doc: OpenApiDoc): Endpoint[] {
  return Object.entries(doc.paths).flatMap(([path, operations]) =>
    Object.entries(operations).map(([method, op]) => {
      const parameters = (op.parameters ?? [])
        .map((p) => ("$ref" in p ? doc.components.parameters?.[p.$ref.split("/").pop()!] : p))
        .filter((p) => p !== undefined);
      const json = op.requestBody?.content["application/json"];
      return {
        method: method.toUpperCase(),
        path,
        label: `${method.toUpperCase()} ${path}`,
        pathParams: parameters.filter((p) => p.in === "path"),
        queryParams: parameters.filter((p) => p.in === "query"),
        headerParams: parameters.filter((p) => p.in === "header"),
        body: json ? { required: op.requestBody?.required ?? false, schema: json.schema } : undefined,
      };
    }),
  );
}

/** `$ref` and `allOf` folded into one schema, keeping the outer `nullable` and bounds. */
export function resolve(doc: OpenApiDoc, schema: Schema): Schema {
  if (schema.$ref) {
    const name = schema.$ref.split("/").pop()!;
    return resolve(doc, doc.components.schemas[name] ?? {});
  }
  if (!schema.allOf) return schema;
  const { allOf, ...own } = schema;
  return Object.assign({}, ...allOf.map((part) => resolve(doc, part)), own);
}

const segments = (path: string) => path.split("/").filter(Boolean);
const isParam = (segment: string) => segment.startsWith("{");

/** The collection a path parameter names: the literal segment before it (`/projects/{project_id}/tasks` → projects). */
export function collectionOf(path: string, param: string): string {
  const parts = segments(path);
  return parts[parts.indexOf(`{${param}}`) - 1]!;
}

/** The collection a path lists or creates into: its last segment, when that is not a parameter. */
function collectionAt(path: string): string | undefined {
  const last = segments(path).pop();
  return last && !isParam(last) ? last : undefined;
}

// ---------------------------------------------------------------------------------------------
// Fixtures

export interface FixtureHints {
  /** Valid values by property name where the type alone says too little (`url`, `events`); a function makes a new one each time (unique fields). */
  values: Record<string, unknown>;
  /** Extra fields for a create route's base body (`"POST /leads": {first_name: …}`). */
  bodies: Record<string, Record<string, unknown>>;
  /** Runs before a collection without a create route is listed, so it has a row (a test delivery). */
  seed: Record<string, (fixtures: Fixtures) => Promise<void>>;
}

export type Requester = (
  method: string,
  path: string,
  body?: unknown,
) => Promise<{ status: number; body: any }>;

/**
 * Real objects for path ids and `*_id` fields: created through each collection's own POST route
 * with a body sampled from its schema, or, for collections nothing creates directly (events,
 * deliveries), read from their list.
 */
export class Fixtures {
  private readonly shared = new Map<string, Promise<string>>();
  readonly ids = new Map<string, string>();
  readonly endpoints: Endpoint[];
  created = 0;

  constructor(
    readonly doc: OpenApiDoc,
    private readonly request: Requester,
    readonly hints: FixtureHints,
  ) {
    this.endpoints = endpointsOf(doc);
  }

  private creator(collection: string) {
    return this.endpoints.find((e) => e.method === "POST" && collectionAt(e.path) === collection && e.body);
  }

  private lister(collection: string) {
    return this.endpoints.find((e) => e.method === "GET" && collectionAt(e.path) === collection);
  }

  /** `client_id` → clients, when the document has such a collection. */
  referencedCollection(field: string): string | undefined {
    if (!field.endsWith("_id")) return undefined;
    const plural = `${field.slice(0, -3)}s`;
    return this.creator(plural) || this.lister(plural) ? plural : undefined;
  }

  /** One object per collection, shared by every case that only reads or validates. */
  sharedId(collection: string): Promise<string> {
    let id = this.shared.get(collection);
    if (!id) {
      id = this.make(collection).then((made) => {
        this.ids.set(collection, made);
        return made;
      });
      this.shared.set(collection, id);
    }
    return id;
  }

  /**
   * An object for a case that may destroy it: a new one, unless the last one handed out still
   * exists (no DELETE case removed it), since plans cap some collections (trusted providers).
   */
  async fresh(collection: string): Promise<string> {
    const spare = this.spares.get(collection);
    if (spare && (await this.request("GET", `/${collection}/${encodeURIComponent(spare)}`)).status === 200)
      return spare;
    const id = await this.make(collection);
    this.spares.set(collection, id);
    return id;
  }

  private readonly spares = new Map<string, string>();

  /** The resolved id of a collection (sharedId must have run). */
  id(collection: string): string {
    const id = this.ids.get(collection);
    if (!id) throw new Error(`no fixture for ${collection}`);
    return id;
  }

  /** The template with every path parameter filled by its shared fixture. */
  async concretePath(endpoint: Endpoint): Promise<string> {
    let path = endpoint.path;
    for (const param of endpoint.pathParams) {
      path = path.replace(
        `{${param.name}}`,
        encodeURIComponent(await this.sharedId(collectionOf(endpoint.path, param.name))),
      );
    }
    return path;
  }

  private async make(collection: string): Promise<string> {
    const creator = this.creator(collection);
    if (creator) {
      await this.resolveReferences(creator.body!.schema);
      const path = await this.concretePath(creator);
      const res = await this.request("POST", path, this.baseBody(creator));
      this.created++;
      if (res.status !== 201 || typeof res.body?.id !== "string") {
        throw new Error(
          `fixture ${collection}: POST ${path} answered ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`,
        );
      }
      return res.body.id;
    }
    const lister = this.lister(collection);
    if (!lister) throw new Error(`no route creates or lists ${collection}`);
    await this.hints.seed[collection]?.(this);
    const path = await this.concretePath(lister);
    const res = await this.request("GET", path);
    const id = res.body?.data?.[0]?.id;
    if (res.status !== 200 || typeof id !== "string") {
      throw new Error(`fixture ${collection}: GET ${path} has no row (${res.status}); add a seed hint`);
    }
    return id;
  }

  /** Creates what the required `*_id` fields of a body point at. */
  async resolveReferences(schema: Schema): Promise<void> {
    const resolved = resolve(this.doc, schema);
    for (const [name, property] of Object.entries(resolved.properties ?? {})) {
      const collection = this.referencedCollection(name);
      if (collection) await this.sharedId(collection);
      const inner = resolve(this.doc, property);
      if (inner.type === "object") await this.resolveReferences(inner);
      if (inner.type === "array" && inner.items) await this.resolveReferences(inner.items);
    }
  }

  /** A valid value for a property, from hints, references and the schema. */
  sample(schema: Schema, name: string): unknown {
    if (name in this.hints.values) {
      const value = this.hints.values[name];
      return typeof value === "function" ? (value as () => unknown)() : value;
    }
    const collection = this.referencedCollection(name);
    if (collection && this.ids.has(collection)) return this.ids.get(collection);
    const s = resolve(this.doc, schema);
    if (s.enum) return s.enum[0];
    switch (s.type) {
      case "integer":
        return Math.max(1, s.minimum ?? 1);
      case "number":
        return Math.max(1, s.minimum ?? 1);
      case "boolean":
        return true;
      case "array":
        return [this.sample(s.items ?? {}, name)];
      case "object":
        return this.sampleObject(s);
      default:
        if (s.format === "date") return "2026-03-15";
        if (s.format === "date-time") return "2026-03-15T10:00:00Z";
        if (name === "email" || name.endsWith("_email")) return "sweep@example.com";
        if (name === "currency") return "USD";
        return "Sweep";
    }
  }

  /** The required properties of an object schema, sampled. */
  sampleObject(schema: Schema): Record<string, unknown> {
    const s = resolve(this.doc, schema);
    return Object.fromEntries(
      (s.required ?? []).map((name) => [name, this.sample(s.properties?.[name] ?? {}, name)]),
    );
  }

  /** A valid body for the route: its required fields plus any hinted ones. */
  baseBody(endpoint: Endpoint): Record<string, unknown> {
    if (!endpoint.body) return {};
    return {
      ...this.sampleObject(endpoint.body.schema),
      ...this.hints.bodies[`${endpoint.method} ${endpoint.path}`],
    };
  }
}

// ---------------------------------------------------------------------------------------------
// Cases

/** `reject`: only a 4xx is right. `any`: a 2xx or a 4xx may be right; only the answer's form is judged. */
export type Expectation = "reject" | "any";

export type Family = "path" | "query" | "header" | "body";

export interface Case {
  endpoint: Endpoint;
  family: Family;
  variant: string;
  expect: Expectation;
  /** The path carries a real id, so a 404 means the request never reached validation. */
  realId: boolean;
  /** Resolved just before sending (a fresh fixture for a DELETE). */
  path: () => Promise<string>;
  query?: string;
  headers?: Record<string, string>;
  /** Text, or raw bytes (to send what is not UTF-8). */
  body?: string | Uint8Array<ArrayBuffer>;
  contentType?: string;
}

const LONG = 100_000;
const NUL_QUERY = "a%00b";
const INT32_MAX = 2 ** 31 - 1;
const MARK = "__sweep_value__";

/** Bad path segments, already percent-encoded as they go on the wire. */
export function badIds(realId: string, otherId: string): [string, string][] {
  const prefix = realId.split("_")[0]!;
  return [
    ["invalid UTF-8 %FF", "%FF"],
    ["encoded lone surrogate %ED%A0%80", "%ED%A0%80"],
    ["overlong UTF-8 %C0%AE", "%C0%AE"],
    ["lone %", "%"],
    ["bad escape %zz", "%zz"],
    ["NUL %00", "%00"],
    ["real id + NUL", `${encodeURIComponent(realId)}%00`],
    ["10 000-character id", `${prefix}_${"0".repeat(10_000)}`],
    ["id of another resource", encodeURIComponent(otherId)],
    ["id of an unknown prefix", "zzz_01J00000000000000000000000"],
    ["well-formed id that never existed", `${prefix}_01J00000000000000000000000`],
  ];
}

interface Bad {
  label: string;
  /** JSON text of the value, so literal forms survive (`99999999999999999999`, `"\ud800"`). */
  raw: string;
  expect: Expectation;
}

/** Malformed values for one property of a JSON body. */
function badValues(doc: OpenApiDoc, schema: Schema, required: boolean): Bad[] {
  const s = resolve(doc, schema);
  const out: Bad[] = [];
  const reject = (label: string, raw: string) => out.push({ label, raw, expect: "reject" });
  const any = (label: string, raw: string) => out.push({ label, raw, expect: "any" });
  if (required && !s.nullable) reject("null for a required field", "null");
  if (s.enum) {
    reject("number for an enum", "12345");
    reject("value outside the enum", '"not_a_value"');
    return out;
  }
  switch (s.type) {
    case "string": {
      reject("number for a string", "12345");
      if (s.minLength)
        reject(`string shorter than minLength ${s.minLength}`, JSON.stringify("x".repeat(s.minLength - 1)));
      if (s.maxLength !== undefined)
        reject(`string of maxLength + 5 (${s.maxLength + 5})`, JSON.stringify("x".repeat(s.maxLength + 5)));
      else any("string of 100 000 characters", JSON.stringify("x".repeat(LONG)));
      any("string with \\u0000", '"a\\u0000b"');
      // Every text field of every surface refuses what cannot be stored as sent (docs/api/limits.md).
      reject("string with a lone surrogate \\ud800", '"a\\ud800b"');
      reject("string with a reversed surrogate pair \\udc00\\ud800", '"\\udc00\\ud800"');
      if (s.format === "date") {
        any("date 0000-01-01", '"0000-01-01"');
        reject("date 10000-01-01", '"10000-01-01"');
        reject("impossible date 2026-02-30", '"2026-02-30"');
      }
      if (s.format === "date-time") {
        any("date-time in year 0000", '"0000-01-01T00:00:00Z"');
        reject("date-time in year 10000", '"10000-01-01T00:00:00Z"');
        reject("impossible date-time 2026-02-30", '"2026-02-30T10:00:00Z"');
        reject("date-time without a time zone", '"2026-03-15T10:00:00"');
      }
      break;
    }
    case "number":
    case "integer": {
      const integer = s.type === "integer";
      const bounded = (value: number) => integer || (s.maximum !== undefined && value > s.maximum);
      reject("string for a number", '"12"');
      (bounded(1e308) ? reject : any)("1e308", "1e308");
      (bounded(1e20) ? reject : any)("99999999999999999999", "99999999999999999999");
      (s.minimum !== undefined && s.minimum > -1 ? reject : any)("-1", "-1");
      if (integer) reject("fraction for an integer", "1.5");
      if (s.multipleOf !== undefined)
        reject(`finer than multipleOf ${s.multipleOf}`, String(s.multipleOf / 10 + 1));
      if (integer && s.format === "int32") reject("beyond int32", String(INT32_MAX + 1));
      break;
    }
    case "boolean":
      reject("string for a boolean", '"true"');
      break;
    case "array":
      reject("string for an array", '"x"');
      reject("object for an array", "{}");
      break;
    case "object":
      reject("string for an object", '"x"');
      reject("array for an object", "[]");
      break;
    default: {
      // A union (`oneOf` / `anyOf`): a value of a type none of its members has.
      const members = (s.oneOf ?? s.anyOf ?? []).map((member) => resolve(doc, member).type);
      const outside = (
        [
          ["boolean", "true"],
          ["number", "12345"],
          ["object", "{}"],
          ["array", "[]"],
          ["string", '"x"'],
        ] as const
      ).find(([type]) => !members.includes(type) && !(type === "number" && members.includes("integer")));
      if (members.length > 0 && outside) reject(`${outside[0]} for a ${members.join(" or ")}`, outside[1]);
    }
  }
  return out;
}

/** A body with `raw` at `path` inside `base`, every parent filled with valid values. */
function bodyWith(
  fixtures: Fixtures,
  base: Record<string, unknown>,
  schema: Schema,
  path: (string | number)[],
  raw: string,
): string {
  const root = structuredClone(base);
  let node: any = root;
  let shape = resolve(fixtures.doc, schema);
  path.forEach((key, index) => {
    const last = index === path.length - 1;
    if (typeof key === "number") {
      if (last) node[key] = MARK;
      else node[key] ??= fixtures.sampleObject(shape);
    } else {
      const child = resolve(fixtures.doc, shape.properties?.[key] ?? {});
      if (last) node[key] = MARK;
      else node[key] ??= child.type === "array" ? [] : fixtures.sampleObject(child);
      shape = child.type === "array" ? resolve(fixtures.doc, child.items ?? {}) : child;
    }
    node = node[key];
  });
  return JSON.stringify(root).replace(JSON.stringify(MARK), () => raw);
}

const paramName = (path: (string | number)[]) =>
  path.reduce<string>(
    (out, key) => (typeof key === "number" ? `${out}[${key}]` : out ? `${out}.${key}` : key),
    "",
  );

/** Cases for every property of a body schema, nested objects and array items included. */
function propertyCases(
  fixtures: Fixtures,
  bodySchema: Schema,
  base: Record<string, unknown>,
  schema: Schema,
  prefix: (string | number)[],
  depth: number,
): { variant: string; body: string; expect: Expectation }[] {
  const s = resolve(fixtures.doc, schema);
  const out: { variant: string; body: string; expect: Expectation }[] = [];
  for (const [name, property] of Object.entries(s.properties ?? {})) {
    const path = [...prefix, name];
    const label = paramName(path);
    const required = (s.required ?? []).includes(name);
    for (const bad of badValues(fixtures.doc, property, required)) {
      out.push({
        variant: `${label}: ${bad.label}`,
        body: bodyWith(fixtures, base, bodySchema, path, bad.raw),
        expect: bad.expect,
      });
    }
    const inner = resolve(fixtures.doc, property);
    if (inner.type === "array") {
      const item = (fixtures.sample(inner, name) as unknown[])[0];
      const many = `[${new Array(10_000).fill(JSON.stringify(item)).join(",")}]`;
      const capped = inner.maxItems !== undefined && inner.maxItems < 10_000;
      out.push({
        variant: `${label}: 10 000 elements`,
        body: bodyWith(fixtures, base, bodySchema, path, many),
        expect: capped ? "reject" : "any",
      });
      if (capped) {
        const over = `[${new Array(inner.maxItems! + 1).fill(JSON.stringify(item)).join(",")}]`;
        out.push({
          variant: `${label}: maxItems + 1 (${inner.maxItems! + 1}) elements`,
          body: bodyWith(fixtures, base, bodySchema, path, over),
          expect: "reject",
        });
      }
      const wrong = resolve(fixtures.doc, inner.items ?? {});
      const wrongItem = wrong.type === "string" || wrong.enum ? "12345" : '"x"';
      out.push({
        variant: `${label}: element of the wrong type`,
        body: bodyWith(fixtures, base, bodySchema, path, `[${wrongItem}]`),
        expect: "reject",
      });
      if (wrong.type === "object" && depth > 0) {
        out.push(...propertyCases(fixtures, bodySchema, base, wrong, [...path, 0], depth - 1));
      }
    }
    if (inner.type === "object" && depth > 0)
      out.push(...propertyCases(fixtures, bodySchema, base, inner, path, depth - 1));
  }
  return out;
}

/** Malformed query values for one parameter, already encoded. */
function badQueryValues(
  doc: OpenApiDoc,
  param: Parameter,
): { label: string; value: string; expect: Expectation }[] {
  const s = resolve(doc, param.schema);
  const typed =
    s.type === "integer" ||
    s.type === "number" ||
    s.type === "boolean" ||
    Boolean(s.enum) ||
    Boolean(s.format);
  const out: { label: string; value: string; expect: Expectation }[] = [
    {
      label: "100 000 characters",
      value: "x".repeat(LONG),
      expect: typed || s.maxLength !== undefined ? "reject" : "any",
    },
    { label: "NUL a%00b", value: NUL_QUERY, expect: typed ? "reject" : "any" },
    // Percent-escapes that decode to no UTF-8: refused, never read as U+FFFD.
    { label: "invalid UTF-8 a%FF", value: "a%FF", expect: "reject" },
    { label: "encoded surrogate a%ED%A0%80", value: "a%ED%A0%80", expect: "reject" },
    { label: "1e308", value: "1e308", expect: s.type === "integer" || s.enum || s.format ? "reject" : "any" },
    {
      label: "99999999999999999999",
      value: "99999999999999999999",
      expect: s.type === "integer" || s.enum || s.format ? "reject" : "any",
    },
    {
      label: "-1",
      value: "-1",
      expect: s.enum || s.format || (s.minimum !== undefined && s.minimum > -1) ? "reject" : "any",
    },
  ];
  if (s.maxLength !== undefined)
    out.push({
      label: `maxLength + 5 (${s.maxLength + 5}) characters`,
      value: "x".repeat(s.maxLength + 5),
      expect: "reject",
    });
  if (s.type === "integer") {
    out.push({ label: "word for an integer", value: "abc", expect: "reject" });
    out.push({ label: "fraction for an integer", value: "1.5", expect: "reject" });
  }
  if (s.type === "number") out.push({ label: "word for a number", value: "abc", expect: "reject" });
  if (s.type === "boolean") out.push({ label: "word for a boolean", value: "maybe", expect: "reject" });
  if (s.enum) out.push({ label: "value outside the enum", value: "not_a_value", expect: "reject" });
  if (s.format === "date-time") {
    out.push({
      label: "date-time in year 0000",
      value: encodeURIComponent("0000-01-01T00:00:00Z"),
      expect: "any",
    });
    out.push({
      label: "impossible date-time 2026-02-30",
      value: encodeURIComponent("2026-02-30T10:00:00Z"),
      expect: "reject",
    });
    out.push({
      label: "date-time without a time zone",
      value: encodeURIComponent("2026-03-15T10:00:00"),
      expect: "reject",
    });
  }
  if (s.format === "date") {
    out.push({ label: "impossible date 2026-02-30", value: "2026-02-30", expect: "reject" });
    out.push({ label: "date 10000-01-01", value: "10000-01-01", expect: "reject" });
  }
  return out;
}

/** Header values outside the parameter's schema (what fetch can put on the wire: no NUL or line breaks). */
function badHeaderValues(doc: OpenApiDoc, param: Parameter): { label: string; value: string }[] {
  const s = resolve(doc, param.schema);
  const out: { label: string; value: string }[] = [];
  if (s.minLength) out.push({ label: "empty", value: "" });
  if (s.maxLength !== undefined)
    out.push({ label: `maxLength + 5 (${s.maxLength + 5})`, value: "k".repeat(s.maxLength + 5) });
  if (s.pattern) {
    out.push({ label: "tab", value: "a\tb" });
    out.push({ label: "Latin-1 byte", value: "caf\u00e9" });
  }
  return out;
}

const DEEP = 10_000;

/**
 * Every malformed variant of one operation. Path cases use bad ids; query and body cases use real
 * ids (fresh ones for a DELETE, which a wrongly accepted case would consume).
 */
export function casesFor(fixtures: Fixtures, endpoint: Endpoint): Case[] {
  const cases: Case[] = [];
  const withIds = (ids: (collection: string) => string) => {
    let path = endpoint.path;
    for (const param of endpoint.pathParams)
      path = path.replace(
        `{${param.name}}`,
        encodeURIComponent(ids(collectionOf(endpoint.path, param.name))),
      );
    return path;
  };
  const shared = withIds((collection) => fixtures.id(collection));
  // A DELETE that wrongly accepts a case consumes its object: each of its cases gets a new one.
  const real =
    endpoint.method === "DELETE"
      ? async () => {
          const ids = new Map<string, string>();
          for (const param of endpoint.pathParams) {
            const collection = collectionOf(endpoint.path, param.name);
            ids.set(collection, await fixtures.fresh(collection));
          }
          return withIds((collection) => ids.get(collection)!);
        }
      : async () => shared;
  const realId = endpoint.pathParams.length > 0;
  const base = fixtures.baseBody(endpoint);
  const validBody = endpoint.body ? JSON.stringify(base) : undefined;
  const withBody = (c: Omit<Case, "endpoint">): Case => ({ endpoint, ...c });

  for (const param of endpoint.pathParams) {
    const collection = collectionOf(endpoint.path, param.name);
    const other =
      [...fixtures.ids.entries()].find(([name]) => name !== collection)?.[1] ??
      "cli_01J00000000000000000000000";
    const id = encodeURIComponent(fixtures.id(collection));
    for (const [variant, segment] of badIds(fixtures.id(collection), other)) {
      const path = shared.replace(id, () => segment);
      cases.push(
        withBody({
          family: "path",
          variant: `${param.name}: ${variant}`,
          expect: "reject",
          realId: false,
          path: async () => path,
          body: validBody,
        }),
      );
    }
  }

  const query = (variant: string, q: string, expect: Expectation) =>
    cases.push(withBody({ family: "query", variant, expect, realId, path: real, query: q, body: validBody }));
  for (const param of endpoint.queryParams) {
    for (const bad of badQueryValues(fixtures.doc, param))
      query(`${param.name}=${bad.label}`, `${param.name}=${bad.value}`, bad.expect);
    const valid = encodeURIComponent(String(fixtures.sample(param.schema, param.name)));
    query(`${param.name} repeated`, `${param.name}=${valid}&${param.name}=${valid}`, "reject");
  }
  query("unknown query parameter", "sweep_unknown=1", "reject");
  query(
    "100 KB query string of many parameters",
    Array.from({ length: 10_000 }, (_, i) => `p${i}=xxxx`)
      .join("&")
      .slice(0, 100 * 1024),
    "reject",
  );
  const firstField = Object.keys(resolve(fixtures.doc, endpoint.body?.schema ?? {}).properties ?? {})[0];
  if (firstField) query(`body field ${firstField} in the query string`, `${firstField}=x`, "reject");

  for (const param of endpoint.headerParams) {
    for (const bad of badHeaderValues(fixtures.doc, param)) {
      cases.push(
        withBody({
          family: "header",
          variant: `${param.name}: ${bad.label}`,
          expect: "reject",
          realId,
          path: real,
          headers: { [param.name]: bad.value },
          body: validBody,
        }),
      );
    }
  }

  if (endpoint.method === "GET") return cases;

  const body = (
    variant: string,
    text: string | Uint8Array<ArrayBuffer> | undefined,
    expect: Expectation,
    contentType = "application/json",
  ) => cases.push(withBody({ family: "body", variant, expect, realId, path: real, body: text, contentType }));
  if (endpoint.body) {
    for (const c of propertyCases(fixtures, endpoint.body.schema, base, endpoint.body.schema, [], 2))
      body(c.variant, c.body, c.expect);
    if (endpoint.body.required) body("empty body", undefined, "reject");
  }
  const sample = validBody ?? "{}";
  body("unknown field", JSON.stringify({ ...base, sweep_unknown: 1 }), "reject");
  body("array body", "[]", "reject");
  body("string body", '"x"', "reject");
  body("null body", "null", "reject");
  body("invalid JSON", '{"a":', "reject");
  body(`${DEEP} levels of [`, "[".repeat(DEEP) + "]".repeat(DEEP), "reject");
  body(
    `field nested ${DEEP} levels deep`,
    `{"${firstField ?? "sweep"}":${"[".repeat(DEEP)}${"]".repeat(DEEP)}}`,
    "reject",
  );
  body("Content-Type text/plain", sample, "reject", "text/plain");
  body("charset=latin1", sample, "reject", "application/json; charset=latin1");
  const field = JSON.stringify(firstField ?? "sweep");
  for (const [label, bytes] of [
    ["FF", [0xff]],
    ["overlong C0 AF", [0xc0, 0xaf]],
    ["truncated F0 9F 98", [0xf0, 0x9f, 0x98]],
  ] as const) {
    body(
      `invalid UTF-8 (${label}) in a string`,
      new Uint8Array(Buffer.concat([Buffer.from(`{${field}:"a`), Buffer.from(bytes), Buffer.from('"}')])),
      "reject",
    );
  }
  body("Content-Type multipart/form-data", sample, "reject", "multipart/form-data; boundary=sweep");
  return cases;
}

// ---------------------------------------------------------------------------------------------
// Sending and judging

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  ms: number;
  /** Set when no HTTP answer came (reset, timeout). */
  error?: string;
}

/** A bound on a hang, not a speed target. */
export const SLOW_MS = 5_000;
const ABORT_MS = 20_000;

export async function send(api: string, c: Case, key: string): Promise<Answer> {
  const path = await c.path();
  const url = `${api}${path}${c.query ? `?${c.query}` : ""}`;
  const headers: Record<string, string> = { ...c.headers, authorization: `Bearer ${key}` };
  if (c.body !== undefined) headers["content-type"] = c.contentType ?? "application/json";
  const started = performance.now();
  try {
    const response = await fetch(url, {
      method: c.endpoint.method,
      headers,
      body: c.body,
      signal: AbortSignal.timeout(ABORT_MS),
    });
    const text = await response.text();
    return { status: response.status, headers: response.headers, text, ms: performance.now() - started };
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code;
    return {
      status: 0,
      headers: new Headers(),
      text: "",
      ms: performance.now() - started,
      error: `${(error as Error).name}${cause ? ` ${cause}` : ""}: ${(error as Error).message}`,
    };
  }
}

const REQUEST_ID = /^req_[0-9A-Za-z]+$/;
const STACK = [/(?:\n|\\n)\s*at \S/, /\.[cm]?[jt]s:\d/];

/** Everything wrong with one answer; empty when it is acceptable for the case. */
export function problemsOf(c: Pick<Case, "expect" | "realId">, a: Answer): string[] {
  if (a.error) return [`no HTTP answer (${a.error})`];
  const problems: string[] = [];
  if (a.status >= 500) problems.push("server error");
  else if (a.status === 429) problems.push("rate limited: the case was not exercised");
  else if (!(a.status >= 200 && a.status < 300) && !(a.status >= 400 && a.status < 500))
    problems.push("status neither 2xx nor 4xx");
  else if (c.expect === "reject" && a.status < 400) problems.push("accepted (a 4xx was due)");
  else if (c.realId && a.status === 404)
    problems.push("404 with a real id: the input never reached validation");
  if (a.ms > SLOW_MS) problems.push(`answered after ${Math.round(a.ms)} ms (bound ${SLOW_MS} ms)`);
  const contentType = a.headers.get("content-type") ?? "";
  if (!/^application\/([\w.-]+\+)?json\b/i.test(contentType))
    problems.push(`Content-Type ${JSON.stringify(contentType)}`);
  const requestId = a.headers.get("x-request-id");
  if (!requestId || !REQUEST_ID.test(requestId)) problems.push(`X-Request-Id ${JSON.stringify(requestId)}`);
  if (STACK.some((pattern) => pattern.test(a.text))) problems.push("stack trace in the body");
  let body: any;
  try {
    body = JSON.parse(a.text);
  } catch {
    problems.push("body is not JSON");
    return problems;
  }
  if (a.status >= 400) {
    const error = body?.error;
    const strings =
      error && ["type", "code", "message", "request_id"].every((field) => typeof error[field] === "string");
    if (!strings || (error.param !== undefined && typeof error.param !== "string"))
      problems.push("error body not {error: {type, code, message, request_id}}");
    else if (error.request_id !== requestId)
      problems.push(`error.request_id ${error.request_id} differs from X-Request-Id ${requestId}`);
  }
  return problems;
}

/** One line of a failure report: route, variant, status and the start of the body. */
export function describeFailure(c: Case, a: Answer, problems: string[]): string {
  const excerpt = (a.error ?? a.text).replace(/\s+/g, " ").slice(0, 240);
  return `${c.endpoint.label} [${c.family}] ${c.variant} → ${a.status || "no answer"} ${problems.join("; ")} | ${excerpt}`;
}

/** Runs `work` over `items`, `limit` at a time. */
export async function pool<T, R>(
  items: T[],
  limit: number,
  work: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index]!, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
