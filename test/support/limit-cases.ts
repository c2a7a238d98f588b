/**
 * The limits contract's machinery: every `maxLength` and `maxItems` the OpenAPI document states for
 * a path parameter, query parameter or body field (nested ones too: `address.city`,
 * `items[0].description`), turned into two requests — one at the limit, one past it — built on the
 * bad-input sweep's fixtures (test/support/bad-input.ts). Nothing here knows a route by name.
 */
import { type Endpoint, type Fixtures, resolve, type Schema } from "./bad-input.ts";

/** One documented bound of one input. */
export interface LimitCase {
  endpoint: Endpoint;
  where: "path" | "query" | "body";
  /** What `param` of an error names: `id`, `search`, `address.city`, `items[0].description`, `events`. */
  param: string;
  kind: "maxLength" | "maxItems";
  max: number;
  /** The request with the input `size` characters (or items) long. */
  request(size: number): Promise<LimitRequest>;
}

export interface LimitRequest {
  method: string;
  path: string;
  query?: string;
  contentType?: string;
  body?: string | Uint8Array<ArrayBuffer>;
}

type Step = string | 0;

const spell = (steps: Step[]) =>
  steps.reduce<string>((out, step) => (step === 0 ? `${out}[0]` : out ? `${out}.${step}` : step), "");

/** A valid value `size` characters long: the fixture's own sample, padded, so what else it must be (a URL, an e-mail, a MIME type) still holds. */
function textOf(fixtures: Fixtures, schema: Schema, name: string, size: number): string {
  if (name === "content_type") {
    const head = 'text/plain; p="';
    return `${head}${"x".repeat(Math.max(0, size - head.length - 1))}"`.slice(0, size);
  }
  const sample = fixtures.sample(schema, name);
  const text = typeof sample === "string" ? sample : "";
  return text.length >= size ? text.slice(0, size) : text + "x".repeat(size - text.length);
}

/** `size` valid items for a list: the sample's first item, repeated. */
function listOf(fixtures: Fixtures, schema: Schema, name: string, size: number): unknown[] {
  const sample = fixtures.sample(schema, name);
  const item =
    Array.isArray(sample) && sample.length > 0
      ? sample[0]
      : fixtures.sample(resolve(fixtures.doc, schema).items ?? {}, name);
  return Array.from({ length: size }, () => structuredClone(item));
}

/** `body` with the value at `steps` set, creating the objects and one-item lists on the way. */
function setAt(
  fixtures: Fixtures,
  body: Record<string, unknown>,
  schema: Schema,
  steps: Step[],
  value: unknown,
): void {
  let node: any = body;
  let shape = resolve(fixtures.doc, schema);
  for (let i = 0; i < steps.length - 1; i++) {
    const step = steps[i]!;
    const next = steps[i + 1]!;
    const inner = resolve(fixtures.doc, step === 0 ? (shape.items ?? {}) : (shape.properties?.[step] ?? {}));
    if (next === 0) {
      if (!Array.isArray(node[step])) node[step] = [fixtures.sample(inner.items ?? {}, String(step))];
    } else if (typeof node[step] !== "object" || node[step] === null)
      node[step] = fixtures.sampleObject(inner);
    node = node[step];
    shape = inner;
  }
  node[steps[steps.length - 1]!] = value;
}

/** Every bounded field under `schema`, as steps from the body's root. */
function boundedFields(
  fixtures: Fixtures,
  schema: Schema,
  steps: Step[] = [],
  depth = 0,
): { steps: Step[]; schema: Schema; name: string }[] {
  const s = resolve(fixtures.doc, schema);
  const out: { steps: Step[]; schema: Schema; name: string }[] = [];
  const name = String([...steps].reverse().find((step) => step !== 0) ?? "");
  if (steps.length > 0 && (s.maxLength !== undefined || s.maxItems !== undefined))
    out.push({ steps, schema: s, name });
  if (depth > 4) return out;
  if (s.type === "object")
    for (const [key, property] of Object.entries(s.properties ?? {}))
      out.push(...boundedFields(fixtures, property, [...steps, key], depth + 1));
  if (s.type === "array" && s.items) out.push(...boundedFields(fixtures, s.items, [...steps, 0], depth + 1));
  return out;
}

/** The cases of one operation: each bounded input, with everything else valid. */
export function limitCasesFor(fixtures: Fixtures, endpoint: Endpoint): LimitCase[] {
  const cases: LimitCase[] = [];
  const pathWith = async (name?: string, value?: string) => {
    let path = await fixtures.concretePath({
      ...endpoint,
      pathParams: endpoint.pathParams.filter((p) => p.name !== name),
    });
    if (name !== undefined) path = path.replace(`{${name}}`, encodeURIComponent(value!));
    return path;
  };
  const json = "application/json";
  const base = () => structuredClone(fixtures.baseBody(endpoint));
  const bodyText = () => (endpoint.body ? JSON.stringify(base()) : undefined);
  // A write whose query parameters belong to a raw body (an upload): those cases send one.
  const raw = endpoint.method !== "GET" && endpoint.queryParams.length > 0;
  const queryWith = (name: string, value: string) =>
    (raw ? endpoint.queryParams : endpoint.queryParams.filter((p) => p.name === name))
      .map(
        (p) =>
          `${p.name}=${encodeURIComponent(p.name === name ? value : String(fixtures.sample(p.schema, p.name)))}`,
      )
      .join("&");

  for (const param of endpoint.pathParams) {
    const s = resolve(fixtures.doc, param.schema);
    if (s.maxLength === undefined) continue;
    cases.push({
      endpoint,
      where: "path",
      param: param.name,
      kind: "maxLength",
      max: s.maxLength,
      request: async (size) => ({
        method: endpoint.method,
        path: await pathWith(param.name, "x".repeat(size)),
        contentType: json,
        body: bodyText(),
      }),
    });
  }
  for (const param of endpoint.queryParams) {
    const s = resolve(fixtures.doc, param.schema);
    if (s.maxLength === undefined) continue;
    cases.push({
      endpoint,
      where: "query",
      param: param.name,
      kind: "maxLength",
      max: s.maxLength,
      request: async (size) => ({
        method: endpoint.method,
        path: await pathWith(),
        query: queryWith(param.name, textOf(fixtures, s, param.name, size)),
        ...(raw
          ? { contentType: "application/octet-stream", body: new TextEncoder().encode("limits") }
          : { contentType: json, body: bodyText() }),
      }),
    });
  }
  if (!endpoint.body) return cases;
  for (const field of boundedFields(fixtures, endpoint.body.schema)) {
    const kind = field.schema.maxItems !== undefined ? "maxItems" : "maxLength";
    const max = (kind === "maxItems" ? field.schema.maxItems : field.schema.maxLength)!;
    cases.push({
      endpoint,
      where: "body",
      param: spell(field.steps),
      kind,
      max,
      request: async (size) => {
        const body = base();
        const value =
          kind === "maxItems"
            ? listOf(fixtures, field.schema, field.name, size)
            : textOf(fixtures, field.schema, field.name, size);
        setAt(fixtures, body, endpoint.body!.schema, field.steps, value);
        return {
          method: endpoint.method,
          path: await pathWith(),
          contentType: json,
          body: JSON.stringify(body),
        };
      },
    });
  }
  return cases;
}
