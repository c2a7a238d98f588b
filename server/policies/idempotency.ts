import { createHash, randomUUID } from "node:crypto";
import { Kind, type OperationDefinitionNode, OperationTypeNode, parse } from "graphql";
import type { Plugin } from "graphql-yoga";
import type { Credential } from "../../schema/context.ts";
import { ApiError } from "../../schema/lib/errors.ts";
import { MAX_IDEMPOTENT_RESPONSE_BYTES } from "../../schema/lib/limits.ts";
import { PLAN_LIMITS, type PlanName } from "../../schema/lib/plans.ts";
// A longer document is refused by the GraphQL limits anyway, and is no write.
import { GRAPHQL_LIMITS } from "../graphql/limits.ts";
import { errorResponse, GRAPHQL_PATH, noteErrorCode } from "../http/error-response.ts";
import { type RequestState, stateOf } from "../http/request-state.ts";
import { MCP_PATH } from "../mcp/path.ts";
import type { IdempotencyRecord, IdempotencyStore, RecordKey, StoredResponse } from "./idempotency-store.ts";

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/** Node's default requestTimeout: no request outlives it, so a claim older than that is abandoned. */
export const CLAIM_TTL_MS = 5 * 60 * 1000;

const VALID_KEY = /^[\x20-\x7e]{1,255}$/;
const REPLAYED_HEADERS = new Set([
  "content-type",
  "content-language",
  "content-disposition",
  "location",
  "allow",
  "cache-control",
  "etag",
  "last-modified",
  // Where the coding plan stood when the request ran: part of a coding answer (server/ai/metering.ts).
  "x-codingplan-5h-used-percent",
  "x-codingplan-5h-reset",
  "x-codingplan-weekly-used-percent",
  "x-codingplan-weekly-reset",
  // And where the general AI budget stood (server/ai/budget.ts).
  "x-ai-daily-tokens-limit",
  "x-ai-daily-tokens-remaining",
  "x-ai-daily-reset",
]);
/** The error types of 401, 403, 429 and 5xx: a GraphQL response carrying one is not kept. */
const RETRYABLE_TYPES = new Set([
  "authentication_error",
  "permission_error",
  "rate_limit_error",
  "api_error",
]);

const invalidKey = () =>
  new ApiError(
    400,
    "invalid_request_error",
    "idempotency_key_invalid",
    "Idempotency-Key must be 1–255 printable ASCII characters.",
    {
      param: "Idempotency-Key",
    },
  );
const conflict = () =>
  new ApiError(
    409,
    "idempotency_error",
    "idempotency_conflict",
    "This Idempotency-Key was used with a different request: use a new key.",
  );
// A replay can carry what only the first caller may see (a webhook secret): never to another key.
const otherCredential = () =>
  new ApiError(
    409,
    "idempotency_error",
    "idempotency_conflict",
    "This Idempotency-Key was used by another credential of the workspace: use a new key.",
  );
const inProgress = () =>
  new ApiError(
    409,
    "idempotency_error",
    "idempotency_in_progress",
    "A request with this Idempotency-Key is still running: retry shortly.",
  );

const notReplayable = (status: number, bytes: number) =>
  new ApiError(
    409,
    "idempotency_error",
    "idempotency_not_replayable",
    `The request with this Idempotency-Key ran once and answered ${status}, but its response (${bytes} bytes) was over ` +
      `the ${MAX_IDEMPOTENT_RESPONSE_BYTES} bytes kept for replay. It will not run again: read the result with a GET.`,
  );

const sha256 = (data: string | Uint8Array) => createHash("sha256").update(data).digest("hex");

interface Claim {
  key: RecordKey;
  plan: PlanName;
  record: IdempotencyRecord;
  graphql: boolean;
}

/** What of a response is kept for replay, or null when a retry must run again. */
async function storable(
  response: Response,
  graphql: boolean,
  state: RequestState,
): Promise<StoredResponse | null> {
  const status = response.status;
  if (status >= 500 || status === 401 || status === 403 || status === 429) return null;
  const type = response.headers.get("content-type") ?? "";
  if (/event-stream|multipart/i.test(type)) return null;
  const body = Buffer.from(await response.clone().arrayBuffer());
  if (graphql && graphqlRetryable(body)) return null;
  const errorCode = state.errorCode;
  if (body.byteLength > MAX_IDEMPOTENT_RESPONSE_BYTES) {
    response.headers.set("Idempotent-Replayable", "false");
    return {
      status,
      headers: [],
      body: "",
      notKept: { bytes: body.byteLength },
      ...(errorCode && { errorCode }),
    };
  }
  const headers = [...response.headers].filter(([name]) => REPLAYED_HEADERS.has(name.toLowerCase()));
  return { status, headers, body: body.toString("base64"), ...(errorCode && { errorCode }) };
}

/** GraphQL answers 200 with an insufficient_scope or internal_error inside: as retryable as a 403 or 500. */
function graphqlRetryable(body: Buffer): boolean {
  try {
    const result = JSON.parse(body.toString("utf8")) as { errors?: { extensions?: { type?: string } }[] };
    return (result.errors ?? []).some((error) => RETRYABLE_TYPES.has(error.extensions?.type ?? ""));
  } catch {
    return false;
  }
}

/**
 * Whether a `/graphql` body asks for a mutation: the operation `operationName` names, or the
 * document's only one. Anything malformed is not (it will be refused without running).
 *
 * @example isMutation(Buffer.from('{"query":"mutation { createLead(first_name: \\"A\\") { id } }"}')) // true
 */
export function isMutation(body: Uint8Array): boolean {
  try {
    const { query, operationName } = JSON.parse(Buffer.from(body).toString("utf8")) as {
      query?: unknown;
      operationName?: unknown;
    };
    if (typeof query !== "string") return false;
    const operations = parse(query, {
      noLocation: true,
      maxTokens: GRAPHQL_LIMITS.maxTokens,
    }).definitions.filter(
      (definition): definition is OperationDefinitionNode => definition.kind === Kind.OPERATION_DEFINITION,
    );
    const chosen =
      typeof operationName === "string"
        ? operations.find((o) => o.name?.value === operationName)
        : operations.length === 1
          ? operations[0]
          : undefined;
    return chosen?.operation === OperationTypeNode.MUTATION;
  } catch {
    return false;
  }
}

/** What claiming a key came to: it is this request's now, or an earlier one answers instead. */
export type KeyClaim = { claim: Omit<Claim, "graphql"> } | { stored: StoredResponse } | { refused: ApiError };

/**
 * Claims `key` in the credential's workspace for a request whose payload hashes to `fingerprint`
 * (the same key with another payload, or from another credential, is refused; one still running
 * is "in progress"). Every surface that takes a key claims it here: REST, GraphQL, MCP tool calls.
 *
 * @example const claimed = await claimKey(store, credential, "order-7", sha256("create_lead\n{…}"))
 */
export async function claimKey(
  store: IdempotencyStore,
  credential: Credential,
  key: string,
  fingerprint: string,
): Promise<KeyClaim> {
  if (!VALID_KEY.test(key)) return { refused: invalidKey() };
  const recordKey = { workspaceId: credential.workspaceId, key };
  const record: IdempotencyRecord = { fingerprint, owner: randomUUID(), credentialId: credential.id };
  const existing = await store.claim(recordKey, record, CLAIM_TTL_MS);
  if (!existing) return { claim: { key: recordKey, plan: credential.plan, record } };
  if (existing.credentialId !== undefined && existing.credentialId !== credential.id)
    return { refused: otherCredential() };
  if (existing.fingerprint !== fingerprint) return { refused: conflict() };
  if (!existing.response) return { refused: inProgress() };
  return { stored: existing.response };
}

/** Keeps what a claimed request answered for 24 h (bounded by the plan), or frees the key when it must run again (null). */
export async function finishClaim(
  store: IdempotencyStore,
  claim: Omit<Claim, "graphql">,
  stored: StoredResponse | null,
): Promise<void> {
  if (stored)
    await store.complete(
      claim.key,
      { ...claim.record, response: stored },
      IDEMPOTENCY_TTL_MS,
      PLAN_LIMITS[claim.plan].idempotency_bytes,
    );
  else await store.release(claim.key, claim.record.owner);
}

function replay(stored: StoredResponse, pathname: string, state: RequestState): Response {
  if (stored.notKept)
    return errorResponse(notReplayable(stored.status, stored.notKept.bytes), pathname, state);
  if (stored.errorCode) noteErrorCode(state, stored.errorCode);
  const headers = new Headers(stored.headers);
  headers.set("Idempotent-Replay", "true");
  return new Response(Buffer.from(stored.body, "base64"), { status: stored.status, headers });
}

/**
 * `Idempotency-Key` on writes (docs/api/limits.md#traffic-policies): a REST POST or a `/graphql` mutation
 * claims the key for its workspace, and its response is kept 24 h and replayed to repeats with the
 * same payload. A GraphQL query sent with a key runs as if it had none. What a workspace's records
 * hold is bounded by its plan (the store drops its oldest first) and counted in its data quota.
 */
export function useIdempotency(store: IdempotencyStore): Plugin {
  const claims = new WeakMap<RequestState, Claim>();

  /** Claims the key for this request, or answers it: a replay, a conflict, or "still in progress". */
  async function begin(
    state: RequestState,
    url: URL,
    header: string,
    bodySha256: string,
  ): Promise<Response | undefined> {
    const fingerprint = sha256(`POST ${url.pathname}${url.search}\n${bodySha256}`);
    const claimed = await claimKey(store, state.credential!, header, fingerprint);
    if ("refused" in claimed) return errorResponse(claimed.refused, url.pathname, state);
    if ("stored" in claimed) return replay(claimed.stored, url.pathname, state);
    claims.set(state, { ...claimed.claim, graphql: url.pathname === GRAPHQL_PATH });
    return undefined;
  }

  return {
    async onRequest({ request, url, serverContext, endResponse }) {
      const state = stateOf(serverContext);
      const header = request.headers.get("idempotency-key");
      // Without a credential there is no workspace to scope the key to (public endpoints). An MCP
      // tool call names its key as an argument instead: one HTTP request is not one call's payload.
      if (request.method !== "POST" || header === null || !state.credential || url.pathname === MCP_PATH)
        return;
      if (!VALID_KEY.test(header)) return endResponse(errorResponse(invalidKey(), url.pathname, state));
      const claim = (bodySha256: string) => begin(state, url, header, bodySha256);
      // A streamed body is hashed as it is stored: the route claims the key with the digest then.
      if (state.streamedBody) return void (state.claimIdempotency = claim);
      const body = new Uint8Array(await request.clone().arrayBuffer());
      // Only writes are recorded: a GraphQL query sent with a key simply runs.
      if (url.pathname === GRAPHQL_PATH && !isMutation(body)) return;
      const answered = await claim(sha256(body));
      if (answered) return endResponse(answered);
    },
    async onResponse({ response, serverContext }) {
      const state = stateOf(serverContext);
      const claim = claims.get(state);
      if (!claim) return;
      claims.delete(state);
      await finishClaim(store, claim, await storable(response, claim.graphql, state));
    },
  };
}
