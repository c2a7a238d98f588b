import {
  getNamedType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
  type GraphQLArgument,
  type GraphQLNamedType,
  type GraphQLType,
} from "graphql";
import { baseUrl, type Config } from "../config.ts";
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
};

const ERROR_STATUSES: Record<number, string> = {
  400: "Invalid request: `validation_failed` (with `param`), `invalid_json`, `invalid_state`.",
  401: "No credential, or an invalid one (`WWW-Authenticate` points at the resource metadata).",
  403: "The credential lacks a scope (`insufficient_scope`, with `required_scope`).",
  404: "No such object in the caller's workspace.",
  413: "The body is over 25 MiB.",
  415: "The body is not JSON.",
};

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

/** The OpenAPI schema of a GraphQL type; `nullable` follows the GraphQL type. */
function schemaOf(type: GraphQLType, description?: string | null): Schema {
  const nullable = !isNonNullType(type);
  const inner = isNonNullType(type) ? type.ofType : type;
  let schema: Schema;
  if (isListType(inner)) schema = { type: "array", items: schemaOf(inner.ofType) };
  else if (isScalarType(inner)) schema = { ...(SCALARS[inner.name] ?? { type: "string" }) };
  else if (!nullable) schema = ref(inner.name);
  else schema = { type: isEnumType(inner) ? "string" : "object", allOf: [ref(inner.name)] };
  if (nullable) schema.nullable = true;
  if (description && !("$ref" in schema)) schema.description = description;
  return schema;
}

function objectSchema(fields: { name: string; type: GraphQLType; description?: string | null | undefined }[], strict: boolean): Schema {
  const required = fields.filter((f) => isNonNullType(f.type)).map((f) => f.name);
  return {
    type: "object",
    properties: Object.fromEntries(fields.map((f) => [f.name, schemaOf(f.type, f.description)])),
    ...(required.length > 0 && { required }),
    ...(strict && { additionalProperties: false }),
  };
}

/** Every named type the REST routes mention, followed through fields and arguments. */
function reachableTypes(table: RouteEntry[]): GraphQLNamedType[] {
  const seen = new Map<string, GraphQLNamedType>();
  const visit = (type: GraphQLType) => {
    const named = getNamedType(type);
    if (seen.has(named.name) || isScalarType(named)) return;
    seen.set(named.name, named);
    if (isObjectType(named) || isInputObjectType(named)) Object.values(named.getFields()).forEach((f) => visit(f.type));
  };
  for (const { field } of table) {
    visit(field.type);
    field.args.forEach((arg) => visit(arg.type));
  }
  return [...seen.values()];
}

function componentSchema(type: GraphQLNamedType): Schema {
  if (isEnumType(type)) return { type: "string", enum: type.getValues().map((v) => v.name) };
  if (isObjectType(type) || isInputObjectType(type)) {
    return { ...objectSchema(Object.values(type.getFields()), isInputObjectType(type)), ...(type.description && { description: type.description }) };
  }
  return { type: "string" };
}

function parameter(arg: GraphQLArgument, where: "path" | "query") {
  return {
    name: arg.name,
    in: where,
    required: where === "path" || isNonNullType(arg.type),
    ...(arg.description && { description: arg.description }),
    schema: schemaOf(arg.type),
  };
}

function operation(entry: RouteEntry) {
  const { field, route, pathParams } = entry;
  const hasBody = route.method === "POST" || route.method === "PATCH";
  const inPath = (arg: GraphQLArgument) => pathParams.includes(arg.name);
  const bodyArgs = hasBody ? field.args.filter((arg) => !inPath(arg)) : [];
  const queryArgs = hasBody ? [] : field.args.filter((arg) => !inPath(arg));
  const errors = [400, 401, 403, ...(pathParams.length ? [404] : []), ...(bodyArgs.length ? [413, 415] : [])];
  return {
    operationId: field.name,
    summary: route.summary,
    ...(field.description && { description: field.description }),
    tags: [route.path.split("/")[1]!],
    parameters: [
      ...field.args.filter(inPath).map((arg) => parameter(arg, "path")),
      ...queryArgs.map((arg) => parameter(arg, "query")),
    ],
    ...(bodyArgs.length > 0 && {
      requestBody: {
        required: bodyArgs.some((arg) => isNonNullType(arg.type)),
        content: { "application/json": { schema: objectSchema(bodyArgs, true) } },
      },
    }),
    responses: {
      [route.status]: {
        description: route.summary,
        headers: { "X-Request-Id": { $ref: "#/components/headers/RequestId" } },
        content: { "application/json": { schema: schemaOf(field.type) } },
      },
      ...Object.fromEntries(errors.map((status) => [status, { $ref: `#/components/responses/Error${status}` }])),
    },
  };
}

/**
 * The OpenAPI 3 description of `/v1`, built from the same route table Sofa serves: path
 * parameters in the path, query arguments on reads, body arguments only in the body.
 */
export function buildOpenApi(table: RouteEntry[], config: Config) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const entry of table) {
    const path = entry.route.path.replace(/:(\w+)/g, "{$1}");
    (paths[path] ??= {})[entry.route.method.toLowerCase()] = operation(entry);
  }
  const schemas = Object.fromEntries(reachableTypes(table).map((type) => [type.name, componentSchema(type)]));
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
        bearerAuth: { type: "http", scheme: "bearer", description: "An API key (`ktr_live_…`) or an agent token (`ktr_agt_…`)." },
      },
      headers: {
        RequestId: { description: "The request's id, also in error bodies and request logs.", schema: { type: "string" } },
      },
      responses: Object.fromEntries(
        Object.entries(ERROR_STATUSES).map(([status, description]) => [
          `Error${status}`,
          {
            description,
            headers: { "X-Request-Id": { $ref: "#/components/headers/RequestId" } },
            content: { "application/json": { schema: ref("Error") } },
          },
        ]),
      ),
      schemas: {
        ...schemas,
        Error: {
          type: "object",
          required: ["error"],
          properties: {
            error: {
              type: "object",
              required: ["type", "code", "message", "request_id"],
              properties: {
                type: { type: "string" },
                code: { type: "string" },
                message: { type: "string" },
                param: { type: "string" },
                required_scope: { type: "string" },
                request_id: { type: "string" },
              },
            },
          },
        },
      },
    },
  };
}
