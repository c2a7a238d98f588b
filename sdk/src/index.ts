/**
 * @kontor/sdk: the TypeScript SDK of the Kontor API (REST and GraphQL). Typed documents and the
 * schema's types for `kontor.graphql(...)` are in `@kontor/sdk/graphql`.
 */
export { Kontor, DEFAULT_BASE_URL, type ClientOptions, type GraphQLDocument, type GraphQLRequestOptions } from "./client.js";
export { Kontor as default } from "./client.js";
export { APIPromise, newIdempotencyKey, type RequestOptions, type WithResponse } from "./lib/core.js";
export {
  APIConnectionError,
  APIError,
  APITimeoutError,
  APIUserAbortError,
  AuthenticationError,
  ConflictError,
  IdempotencyError,
  InternalServerError,
  KontorError,
  NotFoundError,
  PermissionError,
  RateLimitError,
  ValidationError,
  type ErrorBody,
  type GraphQLErrorEntry,
} from "./lib/errors.js";
export type { CodingPlanInfo, RateLimitInfo } from "./lib/headers.js";
export { Page, PagePromise, type ListEnvelope } from "./lib/pagination.js";
export { Stream } from "./lib/streaming.js";
export { ROUTE_METHODS, type RouteKey } from "./routes.js";
export { toBase64, type ObjectContentParams, type ObjectUploadParams, type ObjectUploadRawParams } from "./resources/storage.js";
export {
  outputText,
  type ChatCompletion,
  type ChatCompletionChunk,
  type ChatCompletionCreateParams,
  type ChatMessage,
  type Model,
  type ModelList,
  type ResponseCreateParams,
  type ResponseObject,
  type ResponseStreamEvent,
} from "./resources/ai.js";
export type { DocumentTypeDecoration, ResultOf, TypedDocumentNode, VariablesOf } from "./lib/typed-document.js";
export type { RestRoutes } from "./generated/routes.js";
export type * from "./types.js";
export { VERSION } from "./version.js";
export {
  DEFAULT_WEBHOOK_TOLERANCE_SECONDS,
  KONTOR_EVENT_TYPES,
  signWebhook,
  verifyWebhook,
  WebhookVerificationError,
  type KontorEvent,
  type KontorEventOf,
  type KontorEventType,
  type KontorFullEvent,
  type KontorThinEvent,
  type VerifyWebhookOptions,
  type WebhookHeaders,
  type WebhookVerificationErrorReason,
} from "./webhooks/index.js";
export {
  AgentAuth,
  AgentAuthError,
  ClaimDeniedError,
  ClaimExpiredError,
  CLAIM_GRANT_TYPE,
  JWT_BEARER_GRANT_TYPE,
  resourceMetadataFromChallenge,
  type AgentAuthOptions,
  type AgentAuthState,
  type AgentClaim,
  type AgentDiscovery,
  type AgentRegistration as AgentIdentityRegistration,
  type AgentTokens,
  type AnonymousInput,
  type ServiceAuthInput,
  type WaitForClaimOptions,
} from "./agents/index.js";
