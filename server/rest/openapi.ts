import { buildOperationNodeForField } from "@graphql-tools/utils";
import {
  type GraphQLArgument,
  type GraphQLField,
  type GraphQLInputField,
  type GraphQLNamedType,
  GraphQLNonNull,
  GraphQLObjectType,
  type GraphQLOutputType,
  GraphQLSchema,
  type GraphQLType,
  getNamedType,
  getNullableType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
  Kind,
  OperationTypeNode,
  type SelectionSetNode,
} from "graphql";
import { createSofa } from "sofa-api";
import { DEFAULT_LIMIT, MAX_LIMIT } from "../../schema/lib/cursor.ts";
import { PLANS } from "../../schema/lib/plans.ts";
import { countsAsWrite } from "../../schema/plugins/data-quota.ts";
import { baseUrl, type Config } from "../runtime/config.ts";
import { isListRoute } from "./operations.ts";
import type { RouteEntry } from "./view.ts";

type Schema = Record<string, unknown>;

const SCALARS: Record<string, Schema> = {
  String: { type: "string" },
  ID: { type: "string" },
  Int: { type: "integer", format: "int32" },
  Float: { type: "number" },
  Boolean: { type: "boolean" },
  DateTime: { type: "string", format: "date-time" },
  Date: { type: "string", format: "date" },
  Money: { type: "number", minimum: 0, multipleOf: 0.01 },
  Quantity: { type: "number", minimum: 0, multipleOf: 0.001 },
  Percent: { type: "number", minimum: 0, maximum: 100, multipleOf: 0.001 },
  JSONObject: { type: "object", additionalProperties: true },
  ByteCount: { type: "integer", format: "int64", minimum: 0 },
};

const ERROR_TYPES = [
  "invalid_request_error",
  "authentication_error",
  "permission_error",
  "idempotency_error",
  "rate_limit_error",
  "api_error",
];

/** What a route's operation looks like, as far as the errors it can answer go. */
export interface RouteTraits {
  method: string;
  hasPathParams: boolean;
  /** The GraphQL field the route runs, where it runs one. */
  field?: string;
  /** Codes the route's field declares itself: `extensions: { ...rest(…), errors: ["sku_taken"] }`. */
  declared: string[];
}

interface ErrorCode {
  status: number;
  code: string;
  when: string;
  /** Routes that can answer it without declaring it; declared-only codes have none. */
  on?: (route: RouteTraits) => boolean;
}

const always = () => true;
const writes = (r: RouteTraits) => r.method !== "GET";
const posts = (r: RouteTraits) => r.method === "POST";
/** Mutations the data quota refuses past it (schema/plugins/data-quota.ts). */
const dataWrites = (r: RouteTraits) => r.method !== "GET" && r.field !== undefined && countsAsWrite(r.field);

/** Every error code a `/v1` route can answer (docs/api/conventions-and-errors.md#errors), and which routes answer it. */
const ERROR_CODES: ErrorCode[] = [
  {
    status: 400,
    code: "validation_failed",
    when: "a parameter or body field is missing, unknown or invalid; `param` names it",
    on: always,
  },
  { status: 400, code: "invalid_json", when: "the body is not valid JSON, or not valid UTF-8", on: writes },
  { status: 400, code: "invalid_state", when: "the object's state does not allow this change", on: writes },
  {
    status: 400,
    code: "amount_exceeds_balance",
    when: "a payment is larger than the balance due",
    on: writes,
  },
  {
    status: 400,
    code: "idempotency_key_invalid",
    when: "`Idempotency-Key` is not 1–255 printable ASCII characters",
    on: posts,
  },
  { status: 401, code: "unauthenticated", when: "no credential was sent", on: always },
  {
    status: 401,
    code: "invalid_token",
    when: "the credential is not valid, was revoked, or is not a Bearer token",
    on: always,
  },
  {
    status: 403,
    code: "insufficient_scope",
    when: "the credential lacks a scope; `required_scope` names it",
    on: always,
  },
  // The dashboard's session cookie (sent without an Authorization header) answers these instead.
  {
    status: 401,
    code: "session_expired",
    when: "the dashboard session of the cookie is unknown or expired, or `X-CSRF-Token` came without the cookie",
    on: always,
  },
  {
    status: 403,
    code: "csrf_failed",
    when: "a request made with the dashboard's session cookie lacks its `X-CSRF-Token`",
    on: always,
  },
  {
    status: 403,
    code: "cross_origin_request",
    when: "a request made with the dashboard's session cookie came from a page of another origin than the deployment's",
    on: always,
  },
  {
    status: 403,
    code: "not_a_member",
    when: "the signed-in user is not a member of the workspace `Kontor-Workspace` names",
    on: always,
  },
  {
    status: 403,
    code: "owner_required",
    when: "a workspace member signed in to the dashboard asked for what only owners do (keys, webhooks, agents, members, settings, the audit log); `required_role` is `owner`",
    on: writes,
  },
  {
    status: 403,
    code: "data_quota_exceeded",
    when: "the workspace's stored records reached its plan's data quota (`GET /workspace` `usage`); delete records or upgrade — reads and deletes still work",
    on: dataWrites,
  },
  {
    status: 403,
    code: "plan_limit_reached",
    when: "the workspace's plan allows no more of these; delete one or upgrade",
  },
  { status: 403, code: "agent_auth_disabled", when: "agent access is turned off for the workspace" },
  {
    status: 404,
    code: "not_found",
    when: "no object with that id in the caller's workspace; `param` names the path parameter",
    on: (r) => r.hasPathParams,
  },
  {
    status: 405,
    code: "method_not_allowed",
    when: "the path exists but not with this method; `Allow` lists the methods it has",
    on: always,
  },
  {
    status: 409,
    code: "idempotency_conflict",
    when: "the `Idempotency-Key` was used with another request or by another credential",
    on: posts,
  },
  {
    status: 409,
    code: "idempotency_in_progress",
    when: "a request with this `Idempotency-Key` is still running",
    on: posts,
  },
  {
    status: 409,
    code: "idempotency_not_replayable",
    when: "the first response to this `Idempotency-Key` was over 1 MiB and was not kept; the request is not run again",
    on: posts,
  },
  {
    status: 409,
    code: "sku_taken",
    when: "another inventory item of the workspace has this `sku`; `param` is `sku`",
  },
  {
    status: 400,
    code: "upload_incomplete",
    when: "the connection closed before the whole body arrived; nothing was stored",
  },
  {
    status: 400,
    code: "model_not_available",
    when: "the model is not in the plan's catalog (GET /models); `param` is `model`",
  },
  {
    status: 403,
    code: "storage_quota_exceeded",
    when: "the upload would take the workspace past its plan's storage quota; nothing was stored",
  },
  {
    status: 409,
    code: "bucket_name_taken",
    when: "another bucket of the workspace has this `name`; `param` is `name`",
  },
  {
    status: 408,
    code: "request_timeout",
    when: "the request line and headers took over 15 s, or the body sent nothing for 30 s; the connection is closed",
    on: always,
  },
  {
    status: 413,
    code: "payload_too_large",
    when: "the body is over the route's limit: 25 MiB, 1 MiB on the AI routes (a declared `Content-Length` over it is refused before the body is read)",
    on: writes,
  },
  { status: 414, code: "uri_too_long", when: "the query string is too long", on: always },
  {
    status: 416,
    code: "range_not_satisfiable",
    when: "the `Range` starts past the object's last byte; `Content-Range` gives its size",
  },
  {
    status: 415,
    code: "unsupported_media_type",
    when: "a body was sent that is not `application/json`, or declared in a charset other than UTF-8",
    on: writes,
  },
  {
    status: 429,
    code: "rate_limit_exceeded",
    when: "the credential (or, without one, the client address) used up its plan's requests for this minute, or (AI routes) the workspace its coding plan's pool or its general AI tokens for the day; `Retry-After` says when to retry",
    on: always,
  },
  {
    status: 429,
    code: "concurrency_limit_exceeded",
    when: "the plan's coding requests, or the workspace's uploads, are all running; retry when one ends (`Retry-After`). On any route: the client address holds its 128 open connections already, and this one is closed",
    on: always,
  },
  {
    status: 500,
    code: "internal_error",
    when: "an unexpected failure; quote `request_id` when reporting it",
    on: always,
  },
  {
    status: 502,
    code: "upstream_error",
    when: "the AI provider failed or could not be reached; its own short message is kept",
  },
  { status: 503, code: "ai_unavailable", when: "AI is not configured on this server" },
  { status: 504, code: "upstream_timeout", when: "the AI provider did not start answering in time" },
  {
    status: 503,
    code: "service_unavailable",
    when: "the database did not answer in time: the request was rolled back, nothing was written; retry after `Retry-After` seconds",
    on: always,
  },
];

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` });
const pascal = (name: string) => name.replace(/(^|_)(\w)/g, (_m, _s, c: string) => c.toUpperCase());

/** Limits the schema publishes for an argument or input field (schema/lib/input-limits.ts). */
interface Limits {
  maxLength?: number;
  maxItems?: number;
}

function limitsOf(extensions: Readonly<Record<string, unknown>> | null | undefined): Limits {
  const number = (value: unknown) =>
    typeof value === "number" && Number.isFinite(value) ? value : undefined;
  const maxLength = number(extensions?.maxLength);
  const maxItems = number(extensions?.maxItems);
  return { ...(maxLength !== undefined && { maxLength }), ...(maxItems !== undefined && { maxItems }) };
}

/** The schema of an input type: arguments, input fields. `nullable` follows the GraphQL type. */
function inputSchema(type: GraphQLType, limits: Limits = {}, description?: string | null): Schema {
  const nullable = !isNonNullType(type);
  const inner = isNonNullType(type) ? type.ofType : type;
  let schema: Schema;
  if (isListType(inner)) {
    schema = {
      type: "array",
      items: inputSchema(inner.ofType, { ...limits, maxItems: undefined }),
      ...(limits.maxItems !== undefined && { maxItems: limits.maxItems }),
    };
  } else if (isScalarType(inner)) {
    schema = { ...(SCALARS[inner.name] ?? { type: "string" }) };
    if (schema.type === "string" && limits.maxLength !== undefined) schema.maxLength = limits.maxLength;
  } else if (!nullable) schema = ref(inner.name);
  else schema = { type: isEnumType(inner) ? "string" : "object", allOf: [ref(inner.name)] };
  if (nullable) schema.nullable = true;
  if (description && !("$ref" in schema)) schema.description = description;
  return schema;
}

/** Required: non-null without a default (restVariables fills defaults in). */
const isRequired = (input: GraphQLArgument | GraphQLInputField) =>
  isNonNullType(input.type) && input.defaultValue === undefined;

function inputObjectSchema(inputs: readonly (GraphQLArgument | GraphQLInputField)[]): Schema {
  const required = inputs.filter(isRequired).map((input) => input.name);
  return {
    type: "object",
    properties: Object.fromEntries(
      inputs.map((input) => [
        input.name,
        inputSchema(input.type, limitsOf(input.extensions), input.description),
      ]),
    ),
    ...(required.length > 0 && { required }),
    additionalProperties: false,
  };
}

/**
 * Response bodies, named by shape. Sofa answers with the selection it builds per route, not the
 * whole GraphQL type: a type met again below itself is cut off, and a reference to a "model" type
 * (one with a list query and a by-id query) is `{id}` only. Each distinct shape is a component.
 */
class Shapes {
  readonly schemas: Record<string, Schema> = {};
  private readonly byJson = new Map<string, string>();

  of(
    type: GraphQLOutputType,
    selection: SelectionSetNode | undefined,
    field?: GraphQLField<unknown, unknown>,
  ): Schema {
    const nullable = !isNonNullType(type);
    const inner = isNonNullType(type) ? type.ofType : type;
    let schema: Schema;
    const literal = field?.extensions?.literal;
    if (isListType(inner)) schema = { type: "array", items: this.of(inner.ofType, selection) };
    else if (typeof literal === "string") schema = { type: "string", enum: [literal] };
    else if (isScalarType(inner)) schema = { ...(SCALARS[inner.name] ?? { type: "string" }) };
    else if (isEnumType(inner)) schema = ref(inner.name);
    else if (isObjectType(inner)) schema = ref(this.shape(inner, selection));
    else
      throw new Error(
        `The REST view has a ${inner.name} field, of a kind the OpenAPI document cannot describe.`,
      );
    if (nullable) {
      // OpenAPI 3.0 ignores a $ref's siblings: a nullable reference wraps it.
      if ("$ref" in schema) schema = { type: isEnumType(inner) ? "string" : "object", allOf: [schema] };
      schema.nullable = true;
    }
    if (field?.description && !("$ref" in schema)) schema.description = field.description;
    return schema;
  }

  private shape(type: GraphQLObjectType, selection: SelectionSetNode | undefined): string {
    const fields = type.getFields();
    const selected: [string, GraphQLField<unknown, unknown>, SelectionSetNode | undefined][] = [];
    for (const node of selection?.selections ?? []) {
      if (node.kind !== Kind.FIELD)
        throw new Error(`Sofa selected a fragment on ${type.name}: the OpenAPI document cannot describe it.`);
      const field = fields[node.name.value]!;
      selected.push([node.alias?.value ?? node.name.value, field, node.selectionSet]);
    }
    const properties = Object.fromEntries(
      selected.map(([key, field, sub]) => [key, this.of(field.type, sub, field)]),
    );
    const required = selected.filter(([, field]) => isNonNullType(field.type)).map(([key]) => key);
    const schema: Schema = {
      type: "object",
      ...(type.description && { description: type.description }),
      properties,
      ...(required.length > 0 && { required }),
      additionalProperties: false,
    };
    const names = new Set(selected.map(([, field]) => field.name));
    const omitted = Object.keys(fields).filter((name) => !names.has(name));
    let base = type.name;
    if (omitted.length > 0 && names.size === 1 && names.has("id")) base = `${type.name}Reference`;
    else if (omitted.length > 0) base = `${type.name}Without${omitted.map(pascal).join("And")}`;
    const json = JSON.stringify(schema);
    const known = this.byJson.get(json);
    if (known) return known;
    let name = base;
    for (let n = 2; this.schemas[name]; n++) name = `${base}${n}`;
    this.schemas[name] = schema;
    this.byJson.set(json, name);
    return name;
  }
}

/**
 * The schema Sofa serves: the root types of the REST view (only fields with a route), rebuilt from
 * its route table, whose keys name the root type (`Query.lead`, `Mutation.createLead`).
 */
function viewSchema(table: RouteEntry[]): GraphQLSchema {
  const root = (name: string) => {
    const entries = table.filter((entry) => entry.key.startsWith(`${name}.`));
    if (entries.length === 0) return undefined;
    return new GraphQLObjectType({
      name,
      fields: Object.fromEntries(
        entries.map(({ field }) => [
          field.name,
          {
            type: field.type,
            description: field.description,
            extensions: field.extensions,
            args: Object.fromEntries(
              field.args.map((arg) => [
                arg.name,
                { type: arg.type, defaultValue: arg.defaultValue, extensions: arg.extensions },
              ]),
            ),
          },
        ]),
      ),
    });
  };
  return new GraphQLSchema({ query: root("Query"), mutation: root("Mutation") });
}

/** The body Sofa answers a route with, built from the very selection Sofa runs. */
function successSchema(
  schema: GraphQLSchema,
  sofa: ReturnType<typeof createSofa>,
  entry: RouteEntry,
  shapes: Shapes,
): Schema {
  const kind = entry.key.startsWith("Mutation.") ? OperationTypeNode.MUTATION : OperationTypeNode.QUERY;
  const operation = buildOperationNodeForField({
    kind,
    schema,
    field: entry.field.name,
    models: sofa.models,
    ignore: sofa.ignore,
    circularReferenceDepth: sofa.depthLimit,
  });
  const root = operation.selectionSet.selections[0];
  const selection = root?.kind === Kind.FIELD ? root.selectionSet : undefined;
  // A retrieve answers 404 rather than null: the success body is never null.
  return shapes.of(new GraphQLNonNull(getNullableType(entry.field.type)), selection);
}

function parameter(arg: GraphQLArgument, where: "path" | "query") {
  return {
    name: arg.name,
    in: where,
    required: where === "path" || isRequired(arg),
    ...(arg.description && { description: arg.description }),
    schema: inputSchema(arg.type, limitsOf(arg.extensions)),
  };
}

function declaredErrors(field: GraphQLField<unknown, unknown>): string[] {
  const errors = field.extensions?.errors;
  return Array.isArray(errors) ? errors.filter((code): code is string => typeof code === "string") : [];
}

/** The headers every response carries; the rate-limit ones only while the policies run. */
function commonHeaders(config: Config) {
  return {
    "X-Request-Id": headerRef("RequestId"),
    ...(config.policies && {
      "X-RateLimit-Limit": headerRef("RateLimitLimit"),
      "X-RateLimit-Remaining": headerRef("RateLimitRemaining"),
      "X-RateLimit-Reset": headerRef("RateLimitReset"),
      "X-RateLimit-Plan": headerRef("RateLimitPlan"),
    }),
  };
}

/**
 * docs/api/limits.md#traffic-policies: the per-address limit and the connection cap answer their 429 before
 * any credential (so any plan) is known, without the rate-limit headers; every other 429 has them.
 */
const addressLimitHeaders = () => {
  const absent =
    "Absent on a 429 answered before any credential is known: the per-address limit's, the connection cap's.";
  const integer = (description: string, minimum: number) => ({
    description: `${description} ${absent}`,
    required: false,
    schema: { type: "integer", minimum },
  });
  return {
    "X-RateLimit-Limit": integer("Requests per minute of the caller's plan.", 1),
    "X-RateLimit-Remaining": integer("Requests left in the current minute.", 0),
    "X-RateLimit-Reset": integer("When the current window ends, in Unix seconds.", 0),
    "X-RateLimit-Plan": {
      description: `The plan whose limit applies. ${absent}`,
      required: false,
      schema: { type: "string", enum: [...PLANS] },
    },
  };
};

const STATUS_HEADERS: Record<number, Record<string, unknown>> = {
  401: { "WWW-Authenticate": headerRef("WWWAuthenticate") },
  403: { "WWW-Authenticate": headerRef("WWWAuthenticateScope") },
  405: { Allow: headerRef("Allow") },
  429: { "Retry-After": headerRef("RetryAfter") },
  503: { "Retry-After": headerRef("RetryAfter") },
  416: {
    "Content-Range": {
      description: "`bytes */` and the object's size.",
      required: true,
      schema: { type: "string", pattern: "^bytes \\*/\\d+$" },
    },
  },
};

/** Statuses an idempotent POST may replay: what the idempotency layer stores. */
const replayable = (status: number) => status < 500 && ![401, 403, 429, 405, 408, 413, 414].includes(status);

/** Error responses, shared between the operations that answer alike (`components.responses`). */
class ErrorResponses {
  readonly responses: Record<string, Schema> = {};
  private readonly byJson = new Map<string, string>();

  constructor(private readonly config: Config) {}

  of(route: RouteTraits): Record<string, { $ref: string }> {
    const unknown = route.declared.filter((code) => !ERROR_CODES.some((e) => e.code === code));
    if (unknown.length > 0)
      throw new Error(`Unknown error code(s) declared on a route: ${unknown.join(", ")}.`);
    const codes = ERROR_CODES.filter((e) => e.on?.(route) || route.declared.includes(e.code));
    const statuses = [...new Set(codes.map((e) => e.status))].sort();
    return Object.fromEntries(
      statuses.map((status) => {
        const mine = codes.filter((e) => e.status === status);
        const name = this.register(status, route, this.response(status, route, mine));
        return [String(status), { $ref: `#/components/responses/${name}` }];
      }),
    );
  }

  private response(status: number, route: RouteTraits, codes: ErrorCode[]): Schema {
    return {
      description: codes.map((e) => `\`${e.code}\`: ${e.when}.`).join(" "),
      headers: {
        // A 408 is Node's or the body's idle watch's (docs/api/limits.md#traffic-policies): no policy has counted the request.
        ...(status === 408 ? { "X-Request-Id": headerRef("RequestId") } : commonHeaders(this.config)),
        ...STATUS_HEADERS[status],
        ...(status === 429 && this.config.policies && addressLimitHeaders()),
        ...(route.method === "POST" &&
          replayable(status) && { "Idempotent-Replay": headerRef("IdempotentReplay") }),
      },
      content: {
        "application/json": {
          schema: {
            allOf: [
              ref("Error"),
              {
                type: "object",
                properties: {
                  error: {
                    type: "object",
                    properties: { code: { type: "string", enum: codes.map((e) => e.code) } },
                  },
                },
              },
            ],
          },
        },
      },
    };
  }

  private register(status: number, route: RouteTraits, response: Schema): string {
    const json = JSON.stringify(response);
    const known = this.byJson.get(json);
    if (known) return known;
    const kind = route.method === "GET" ? "Read" : route.method === "POST" ? "Post" : "Write";
    const candidates = [
      `Error${status}`,
      `Error${status}On${kind}`,
      `Error${status}On${kind}${route.declared.map(pascal).join("")}`,
    ];
    let name = candidates.find((candidate) => !this.responses[candidate]);
    for (let n = 2; !name; n++) if (!this.responses[`Error${status}_${n}`]) name = `Error${status}_${n}`;
    this.responses[name] = response;
    this.byJson.set(json, name);
    return name;
  }
}

function operation(entry: RouteEntry, success: Schema, errors: ErrorResponses, config: Config) {
  const { field, route, pathParams } = entry;
  const hasBody = route.method === "POST" || route.method === "PATCH";
  const inPath = (arg: GraphQLArgument) => pathParams.includes(arg.name);
  const bodyArgs = hasBody ? field.args.filter((arg) => !inPath(arg)) : [];
  const queryArgs = hasBody ? [] : field.args.filter((arg) => !inPath(arg));
  const traits: RouteTraits = {
    method: route.method,
    hasPathParams: pathParams.length > 0,
    field: field.name,
    declared: declaredErrors(field),
  };
  return {
    operationId: field.name,
    summary: route.summary,
    ...(field.description && { description: field.description }),
    tags: [route.path.split("/")[1]!],
    parameters: [
      ...field.args.filter(inPath).map((arg) => parameter(arg, "path")),
      ...queryArgs.map((arg) => parameter(arg, "query")),
      ...(route.method === "POST" ? [{ $ref: "#/components/parameters/IdempotencyKey" }] : []),
    ],
    ...(bodyArgs.length > 0 && {
      requestBody: {
        required: bodyArgs.some(isRequired),
        content: { "application/json": { schema: inputObjectSchema(bodyArgs) } },
      },
    }),
    responses: {
      [route.status]: {
        description: route.summary,
        headers: {
          ...commonHeaders(config),
          ...(route.method === "POST" && {
            "Idempotent-Replay": headerRef("IdempotentReplay"),
            "Idempotent-Replayable": headerRef("IdempotentReplayable"),
          }),
        },
        content: { "application/json": { schema: success } },
      },
      ...errors.of(traits),
    },
  };
}

/** Enums and input objects the routes' arguments (and response fields) mention. */
function namedInputTypes(table: RouteEntry[]): GraphQLNamedType[] {
  const seen = new Map<string, GraphQLNamedType>();
  const visit = (type: GraphQLType) => {
    const named = getNamedType(type);
    if (seen.has(named.name) || isScalarType(named)) return;
    seen.set(named.name, named);
    if (isObjectType(named) || isInputObjectType(named))
      for (const f of Object.values(named.getFields())) visit(f.type);
  };
  for (const { field } of table) {
    visit(field.type);
    for (const arg of field.args) visit(arg.type);
  }
  return [...seen.values()].filter((type) => isEnumType(type) || isInputObjectType(type));
}

function componentSchema(type: GraphQLNamedType): Schema {
  if (isEnumType(type)) {
    return {
      type: "string",
      enum: type.getValues().map((v) => v.name),
      ...(type.description && { description: type.description }),
    };
  }
  if (isInputObjectType(type)) {
    return {
      ...inputObjectSchema(Object.values(type.getFields())),
      ...(type.description && { description: type.description }),
    };
  }
  return { type: "string" };
}

const integerHeader = (description: string, minimum: number) => ({
  description,
  schema: { type: "integer", minimum },
});

function headers(config: Config) {
  const rateLimited = config.policies;
  return {
    RequestId: {
      description: "The request's id, also in error bodies (`request_id`) and request logs.",
      required: true,
      schema: { type: "string", pattern: "^req_[0-9A-HJKMNP-TV-Z]{26}$" },
    },
    RateLimitLimit: {
      ...integerHeader("Requests per minute of the caller's plan.", 1),
      required: rateLimited,
    },
    RateLimitRemaining: {
      ...integerHeader("Requests left in the current minute.", 0),
      required: rateLimited,
    },
    RateLimitReset: {
      ...integerHeader("When the current window ends, in Unix seconds.", 0),
      required: rateLimited,
    },
    RateLimitPlan: {
      description: "The plan whose limit applies (`free` for requests without a valid credential).",
      required: rateLimited,
      schema: { type: "string", enum: [...PLANS] },
    },
    IdempotentReplay: {
      description:
        "`true` when this is the stored answer to an earlier request with the same `Idempotency-Key`.",
      schema: { type: "string", enum: ["true"] },
    },
    IdempotentReplayable: {
      description:
        "`false` when this answer to a request with an `Idempotency-Key` was over 1 MiB and is not kept: a repeat gets 409 `idempotency_not_replayable`.",
      schema: { type: "string", enum: ["false"] },
    },
    RetryAfter: { ...integerHeader("Seconds to wait before retrying.", 1), required: true },
    Allow: {
      description: "The methods the path has.",
      required: true,
      schema: {
        type: "string",
        pattern: "^(GET|HEAD|POST|PUT|PATCH|DELETE)(, (GET|HEAD|POST|PUT|PATCH|DELETE))*$",
      },
    },
    WWWAuthenticateScope: {
      description:
        'With `insufficient_scope` only: the RFC 6750 challenge naming the scope the credential lacks, `Bearer error="insufficient_scope", scope="leads.write"`.',
      required: false,
      schema: { type: "string", pattern: '^Bearer error="insufficient_scope", scope="[a-z_]+\\.[a-z_]+"$' },
    },
    WWWAuthenticate: {
      description:
        'The Bearer challenge with the resource metadata URL; `error="invalid_token"` when a token was sent but is not valid.',
      required: true,
      schema: {
        type: "string",
        pattern: `^Bearer resource_metadata="${escapeRegExp(baseUrl(config))}/\\.well-known/oauth-protected-resource"(, error="invalid_token")?$`,
      },
    },
  };
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");

const ERROR_SCHEMA: Schema = {
  type: "object",
  description: "Every error of the API, whatever the status.",
  required: ["error"],
  additionalProperties: false,
  properties: {
    error: {
      type: "object",
      required: ["type", "code", "message", "request_id"],
      additionalProperties: false,
      properties: {
        type: { type: "string", enum: ERROR_TYPES },
        code: {
          type: "string",
          description: "Stable and machine-readable; each response lists the codes it can carry.",
        },
        message: { type: "string", description: "For people: may change between versions." },
        param: {
          type: "string",
          description: "The parameter, body field (`address.city`, `items[2].quantity`) or header at fault.",
        },
        required_scope: {
          type: "string",
          description: "With `insufficient_scope`: the scope the credential lacks.",
        },
        required_role: {
          type: "string",
          enum: ["owner"],
          description: "With `owner_required`: the role the signed-in user lacks.",
        },
        request_id: { type: "string", description: "The same id as the `X-Request-Id` header." },
      },
    },
  },
};

/** `limit` of a list route: 1–100 on every list, an upper bound (docs/api/pagination.md: a page may stop early at the response budget). */
function withPageMaximum(op: { parameters?: unknown }, maxLimit: number | undefined): void {
  if (maxLimit === undefined || !Array.isArray(op.parameters)) return;
  const limit = op.parameters.find((p: { name?: string }) => p.name === "limit") as
    | { schema?: Schema; description?: string }
    | undefined;
  if (!limit?.schema) return;
  limit.schema = { ...limit.schema, minimum: 1, maximum: maxLimit };
  limit.description =
    `1–${maxLimit}, default ${Math.min(DEFAULT_LIMIT, maxLimit)}: the most items the page holds. A page of large items may hold ` +
    "fewer, to stay within the response budget; has_more and next_cursor then continue after its last item.";
}

/**
 * The OpenAPI 3 description of `/v1`, built from the same route table Sofa serves: path
 * parameters in the path, query arguments on reads, body arguments only in the body, and each
 * response body from the selection Sofa runs for the route.
 */
/** What a route served outside Sofa (bytes rather than JSON) adds to the document. */
export type OpenApiExtension = (document: {
  // biome-ignore lint/suspicious/noExplicitAny: OpenAPI operation objects, built as plain JSON.
  paths: Record<string, Record<string, any>>;
  errors(route: RouteTraits): Record<string, unknown>;
  headers: Record<string, unknown>;
}) => void;

export function buildOpenApi(table: RouteEntry[], config: Config, extensions: OpenApiExtension[] = []) {
  const schema = viewSchema(table);
  const sofa = createSofa({ basePath: "/v1", schema });
  const shapes = new Shapes();
  const errors = new ErrorResponses(config);
  const paths: Record<string, Record<string, unknown>> = {};
  for (const entry of table) {
    const path = entry.route.path.replace(/:(\w+)/g, "{$1}");
    const success = successSchema(schema, sofa, entry, shapes);
    const op = operation(entry, success, errors, config);
    withPageMaximum(op, isListRoute(entry) ? MAX_LIMIT : undefined);
    (paths[path] ??= {})[entry.route.method.toLowerCase()] = op;
  }
  for (const extend of extensions)
    extend({ paths, errors: (route) => errors.of(route), headers: commonHeaders(config) });
  const named = Object.fromEntries(namedInputTypes(table).map((type) => [type.name, componentSchema(type)]));
  return {
    openapi: "3.0.3",
    info: {
      title: "Kontor API",
      version: "1",
      description: "The REST facade of Kontor's GraphQL schema. Errors have the shape of the `Error` schema.",
      license: { name: "Proprietary", url: `${config.publicUrl}/` },
    },
    servers: [{ url: baseUrl(config) }],
    security: [{ bearerAuth: [] }],
    tags: [...new Set(table.map((e) => e.route.path.split("/")[1]!))].map((name) => ({
      name,
      description: `The /${name} routes.`,
    })),
    paths,
    components: {
      securitySchemes: {
        bearerAuth: {
          type: "http",
          scheme: "bearer",
          description: "An API key (`ktr_live_…`) or an agent token (`ktr_agt_…`).",
        },
      },
      parameters: {
        IdempotencyKey: {
          name: "Idempotency-Key",
          in: "header",
          required: false,
          description:
            "1–255 printable ASCII characters. A repeat with the same key and request within 24 hours replays the first answer and writes nothing.",
          schema: { type: "string", minLength: 1, maxLength: 255, pattern: "^[\\x20-\\x7e]+$" },
        },
      },
      headers: headers(config),
      responses: errors.responses,
      schemas: { ...named, ...shapes.schemas, Error: ERROR_SCHEMA },
    },
  };
}
