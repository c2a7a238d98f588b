/**
 * @kontor/sdk: the TypeScript SDK of the Kontor API (REST and GraphQL). Typed documents and the
 * schema's types for `kontor.graphql(...)` are in `@kontor/sdk/graphql`.
 */

export {
  AgentAuth,
  AgentAuthError,
  type AgentAuthOptions,
  type AgentAuthState,
  type AgentClaim,
  type AgentDiscovery,
  type AgentRegistration as AgentIdentityRegistration,
  type AgentTokens,
  type AnonymousInput,
  CLAIM_GRANT_TYPE,
  ClaimDeniedError,
  ClaimExpiredError,
  JWT_BEARER_GRANT_TYPE,
  resourceMetadataFromChallenge,
  type ServiceAuthInput,
  type WaitForClaimOptions,
} from "./agents/index.js";
export {
  type ClientOptions,
  DEFAULT_BASE_URL,
  type GraphQLDocument,
  type GraphQLRequestOptions,
  Kontor,
  Kontor as default,
} from "./client.js";
export type { RestRoutes } from "./generated/routes.js";
export { APIPromise, newIdempotencyKey, type RequestOptions, type WithResponse } from "./lib/core.js";
export {
  APIConnectionError,
  APIError,
  APITimeoutError,
  APIUserAbortError,
  AuthenticationError,
  ConflictError,
  type ErrorBody,
  type GraphQLErrorEntry,
  IdempotencyError,
  InternalServerError,
  KontorError,
  NotFoundError,
  PermissionError,
  RateLimitError,
  ValidationError,
} from "./lib/errors.js";
export type { CodingPlanInfo, RateLimitInfo } from "./lib/headers.js";
export { type ListEnvelope, Page, PagePromise } from "./lib/pagination.js";
export { Stream } from "./lib/streaming.js";
export type {
  DocumentTypeDecoration,
  ResultOf,
  TypedDocumentNode,
  VariablesOf,
} from "./lib/typed-document.js";
export {
  type ChatCompletion,
  type ChatCompletionChunk,
  type ChatCompletionCreateParams,
  type ChatMessage,
  type Model,
  type ModelList,
  outputText,
  type ResponseCreateParams,
  type ResponseObject,
  type ResponseStreamEvent,
} from "./resources/ai.js";
export {
  type ObjectContentParams,
  type ObjectUploadParams,
  type ObjectUploadRawParams,
  toBase64,
} from "./resources/storage.js";
export { ROUTE_METHODS, type RouteKey } from "./routes.js";
export type * from "./types.js";
export { VERSION } from "./version.js";
export {
  DEFAULT_WEBHOOK_TOLERANCE_SECONDS,
  KONTOR_EVENT_TYPES,
  type KontorEvent,
  type KontorEventOf,
  type KontorEventType,
  type KontorFullEvent,
  type KontorThinEvent,
  signWebhook,
  type VerifyWebhookOptions,
  verifyWebhook,
  type WebhookHeaders,
  WebhookVerificationError,
  type WebhookVerificationErrorReason,
} from "./webhooks/index.js";
