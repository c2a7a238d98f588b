import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";
import addFormats from "ajv-formats";

/**
 * Checks `/v1` responses against the server's own OpenAPI document: the status is declared for
 * the operation, the declared headers are there with the declared form, and the body fits the
 * response schema. The document is fetched once per server.
 */

type Json = Record<string, any>;

export interface CheckedResponse {
  status: number;
  headers: Headers;
  /** The body as received. */
  text: string;
}

export class OpenApiMismatch extends Error {
  override name = "OpenApiMismatch";
}

const SCHEMA_ID = "kontor-openapi";
/** OpenAPI 3.0 keywords that are not JSON Schema and carry no constraint. */
const ANNOTATIONS = new Set(["example", "xml", "externalDocs", "discriminator"]);

/**
 * OpenAPI 3.0 schema → JSON Schema (draft-07): `nullable: true` admits null whatever else the
 * schema says (Ajv's own `nullable` still applies `enum`, `allOf` and `$ref` to null), and
 * component references point into the one schema holding every component.
 */
export function toJsonSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(toJsonSchema);
  if (typeof schema !== "object" || schema === null) return schema;
  const out: Json = {};
  for (const [key, value] of Object.entries(schema)) {
    if (ANNOTATIONS.has(key) || key === "nullable") continue;
    if (key === "$ref" && typeof value === "string")
      out.$ref = value.replace(/^#\/components\/schemas\//, `${SCHEMA_ID}#/definitions/`);
    else if (key === "properties" && typeof value === "object" && value !== null) {
      out.properties = Object.fromEntries(
        Object.entries(value).map(([name, property]) => [name, toJsonSchema(property)]),
      );
    } else out[key] = toJsonSchema(value);
  }
  return (schema as Json).nullable === true ? { anyOf: [{ type: "null" }, out] } : out;
}

interface Operation {
  method: string;
  template: string;
  op: Json;
}

function templatePattern(basePath: string, template: string): RegExp {
  const escaped = template
    .split(/(\{\w+\})/)
    .map((part) => (/^\{\w+\}$/.test(part) ? "[^/]+" : part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")));
  return new RegExp(`^${basePath}${escaped.join("")}/?$`);
}

const showErrors = (errors: ErrorObject[] | null | undefined, root?: string) =>
  (errors ?? [])
    .map((e) => {
      const where = e.instancePath || root;
      const params = e.params && Object.keys(e.params).length > 0 ? ` ${JSON.stringify(e.params)}` : "";
      return `${where ? `${where} ` : ""}${e.message}${params}`;
    })
    .join("; ");

export class DocumentCheck {
  private readonly ajv: Ajv;
  private readonly basePath: string;
  private readonly paths: { template: string; pattern: RegExp; item: Json }[];
  private readonly compiled = new Map<string, ValidateFunction>();

  constructor(private readonly doc: Json) {
    this.ajv = new Ajv({
      allErrors: true,
      strict: true,
      strictTypes: false,
      strictRequired: false,
      multipleOfPrecision: 9,
    });
    addFormats(this.ajv);
    this.ajv.addSchema({ $id: SCHEMA_ID, definitions: toJsonSchema(doc.components?.schemas ?? {}) as Json });
    this.basePath = new URL(doc.servers?.[0]?.url ?? "http://localhost/v1").pathname.replace(/\/$/, "");
    this.paths = Object.entries((doc.paths ?? {}) as Record<string, Json>).map(([template, item]) => ({
      template,
      pattern: templatePattern(this.basePath, template),
      item,
    }));
  }

  private deref(node: Json): Json {
    let current = node;
    for (let hops = 0; typeof current?.$ref === "string"; hops++) {
      if (hops > 10) throw new Error(`Reference loop at ${node.$ref}`);
      current = current.$ref
        .replace(/^#\//, "")
        .split("/")
        .reduce((at: Json, key: string) => at?.[key.replace(/~1/g, "/").replace(/~0/g, "~")], this.doc);
    }
    return current;
  }

  private validator(key: string, schema: Json): ValidateFunction {
    let validate = this.compiled.get(key);
    if (!validate) {
      validate = this.ajv.compile(toJsonSchema(schema) as Json);
      this.compiled.set(key, validate);
    }
    return validate;
  }

  /** The documented operation for a request, or what the path alone says. */
  private find(
    method: string,
    pathname: string,
  ): { operation?: Operation; pathTemplate?: string; item?: Json } {
    const matching = this.paths.filter(({ pattern }) => pattern.test(pathname));
    const exact = matching.find(({ item }) => item[method.toLowerCase()]);
    if (exact)
      return {
        operation: { method, template: exact.template, op: exact.item[method.toLowerCase()] },
        pathTemplate: exact.template,
        item: exact.item,
      };
    return matching[0] ? { pathTemplate: matching[0].template, item: matching[0].item } : {};
  }

  /** Every way the response differs from the document; empty when it fits. */
  problems(method: string, url: string, response: CheckedResponse): { route: string; problems: string[] } {
    const pathname = new URL(url).pathname;
    const { operation, pathTemplate, item } = this.find(method, pathname);
    if (operation) {
      const route = `${method} ${operation.template}`;
      const declared = operation.op.responses?.[String(response.status)] ?? operation.op.responses?.default;
      if (!declared)
        return {
          route,
          problems: [
            `status ${response.status} is not declared (declared: ${Object.keys(operation.op.responses ?? {}).join(", ")})`,
          ],
        };
      return {
        route,
        problems: this.checkResponse(`${route} ${response.status}`, this.deref(declared), method, response),
      };
    }
    const route = `${method} ${pathTemplate ?? pathname} (not in the document)`;
    if (response.status < 400) return { route, problems: [] };
    // A documented path answering another method: its 405 is the one every operation declares.
    const sibling = item && Object.values(item).find((op: Json) => op?.responses?.[String(response.status)]);
    if (sibling && response.status === 405) {
      return {
        route,
        problems: this.checkResponse(
          `${pathTemplate} 405`,
          this.deref(sibling.responses["405"]),
          method,
          response,
        ),
      };
    }
    const problems: string[] = [];
    if (!response.headers.get("x-request-id")) problems.push("header X-Request-Id is missing");
    if (method !== "HEAD")
      problems.push(...this.checkBody("Error", { $ref: "#/components/schemas/Error" }, response));
    return { route, problems };
  }

  private checkResponse(key: string, declared: Json, method: string, response: CheckedResponse): string[] {
    const problems: string[] = [];
    for (const [name, header] of Object.entries((declared.headers ?? {}) as Record<string, Json>)) {
      problems.push(...this.checkHeader(key, name, this.deref(header), response.headers.get(name)));
    }
    const schema = declared.content?.["application/json"]?.schema;
    const type = response.headers.get("content-type") ?? "";
    const mediaType = type.split(";")[0]!.trim().toLowerCase();
    // A response may declare other media types beside JSON (a stream): one of those is checked by its type alone.
    const other = mediaType !== "application/json" && mediaType in (declared.content ?? {});
    if (schema && method !== "HEAD" && !other) {
      if (!/^application\/(.+\+)?json\b/i.test(type))
        problems.push(`content-type is '${type}', not application/json`);
      problems.push(...this.checkBody(key, schema, response));
    }
    return problems;
  }

  private checkHeader(key: string, name: string, header: Json, value: string | null): string[] {
    if (value === null) return header.required ? [`header ${name} is missing`] : [];
    const schema = (header.schema ?? {}) as Json;
    let typed: unknown = value;
    if (schema.type === "integer" || schema.type === "number") {
      if (!/^-?\d+(\.\d+)?$/.test(value.trim())) return [`header ${name} is '${value}', not a number`];
      typed = Number(value);
    } else if (schema.type === "boolean") {
      if (value !== "true" && value !== "false") return [`header ${name} is '${value}', not true or false`];
      typed = value === "true";
    }
    const validate = this.validator(`${key} header ${name}`, schema);
    return validate(typed) ? [] : [`header ${name} '${value}': ${showErrors(validate.errors)}`];
  }

  private checkBody(key: string, schema: Json, response: CheckedResponse): string[] {
    let body: unknown;
    try {
      body = JSON.parse(response.text);
    } catch {
      return [`the body is not JSON: ${JSON.stringify(response.text.slice(0, 200))}`];
    }
    const validate = this.validator(`${key} body`, schema);
    return validate(body) ? [] : [`body: ${showErrors(validate.errors, "(root)")}`];
  }
}

const documents = new Map<string, Promise<DocumentCheck>>();
let checked = 0;

/** How many responses have been checked in this worker: lets a test see that checking happens. */
export const checkedResponses = () => checked;

/** `${origin}/v1` when the URL is under it. */
function apiBase(url: string): string | undefined {
  const parsed = new URL(url);
  return parsed.pathname === "/v1" || parsed.pathname.startsWith("/v1/") ? `${parsed.origin}/v1` : undefined;
}

export function documentFor(base: string): Promise<DocumentCheck> {
  let document = documents.get(base);
  if (!document) {
    document = (async () => {
      const response = await fetch(`${base}/openapi.json`);
      const text = await response.text();
      if (response.status !== 200)
        throw new OpenApiMismatch(
          `GET ${base}/openapi.json answered ${response.status}: ${text.slice(0, 300)}`,
        );
      return new DocumentCheck(JSON.parse(text) as Json);
    })();
    documents.set(base, document);
    document.catch(() => documents.delete(base));
  }
  return document;
}

/**
 * Throws an OpenApiMismatch naming the route, the status and what differs when a `/v1` response
 * contradicts the server's OpenAPI document. Other URLs pass unchecked.
 */
export async function checkAgainstOpenApi(
  method: string,
  url: string,
  response: CheckedResponse,
): Promise<void> {
  const base = apiBase(url);
  if (!base) return;
  const check = await documentFor(base);
  const { route, problems } = check.problems(method.toUpperCase(), url, response);
  checked++;
  if (problems.length > 0) {
    throw new OpenApiMismatch(
      `${route} answered ${response.status}, which the OpenAPI document does not allow:\n  - ${problems.join("\n  - ")}\nbody: ${response.text.slice(0, 500)}`,
    );
  }
}
