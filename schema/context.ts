import type { PrismaClient } from "./generated/prisma/client.ts";
import type { MembershipRole } from "./generated/prisma/enums.ts";
import type { PlanName } from "./lib/plans.ts";
import type { UploadTicket } from "./lib/storage.ts";

interface CredentialBase {
  /**
   * What limits, idempotency keys and request logs are keyed on: the API key's id, the agent
   * registration's (`areg_…`), so that all tokens of one agent share them, or a session's user id.
   */
  id: string;
  workspaceId: string;
  /** The workspace's plan, for the limits that depend on it. */
  plan: PlanName;
  scopes: ReadonlySet<string>;
  /** When the credential stops working (epoch ms): an agent token's expiry, a rotated key's grace. A cached credential is not used past it. */
  expiresAt?: number;
}

/** Who is calling: an API key, an agent's access token, or a user signed in to the dashboard. */
export type Credential =
  | (CredentialBase & { kind: "api_key" | "agent" })
  | (CredentialBase & {
      kind: "session";
      userId: string;
      /** The user's role in `workspaceId`: owners hold every scope, members every `.read` scope but audit.read and the business writes. */
      role: MembershipRole;
    });

export interface Context {
  db: PrismaClient;
  credential: Credential;
  requestId: string;
  /** `{host_url}` of this deployment (links the API hands out, such as an invitation's). */
  hostUrl: string;
  webhooks: WebhookServices;
  storage: StorageServices;
  /** The data quota (docs/api/limits.md): what the workspace's records weigh, and the refusal of writes past it. */
  dataQuota: DataQuotaServices;
  /** Tells every process that credentials were revoked: call it after the revoking write committed, before answering. */
  revocations: Revocations;
  /** Where the request came from, for the audit log; absent outside an HTTP request. */
  client?: RequestClient;
  /** The most bytes one response carries (docs/api/limits.md): RESPONSE_BUDGET_BYTES unless a test lowered it. */
  responseBudgetBytes?: number;
}

/** The client of a request: its address (server/http/client-address.ts) and User-Agent (at most 512 characters); null when unknown. */
export interface RequestClient {
  ip: string | null;
  userAgent: string | null;
}

/** What a revocation names: every cached credential tagged with one of `ids` of this kind stops working. */
export type RevokedKind = "api_key" | "agent_token" | "agent_registration" | "workspace";

/** The deployment's revocation channel (server/auth/revocations.ts). */
export interface Revocations {
  revoked(kind: RevokedKind, ids: readonly string[]): Promise<void>;
}

/** A workspace's records against its data quota (docs/api/limits.md). */
export interface DataUsage {
  /** Rows as the database stores them (records, events, request logs, audit records, …). */
  recordBytes: number;
  /** Its idempotency records' kept responses. */
  idempotencyBytes: number;
  /** recordBytes + idempotencyBytes: what the quota is checked against. */
  bytes: number;
  /** Its quota: the plan's (a tenth of free's for a sandbox), or less where the server caps it. */
  quotaBytes: number;
}

/** What the schema needs of the data quota. */
export interface DataQuotaServices {
  /** The data quota of a workspace on `plan`; a sandbox has a tenth of free's. */
  quotaBytes(plan: PlanName, sandbox: boolean): number;
  usage(workspaceId: string): Promise<DataUsage>;
  /** Throws 403 data_quota_exceeded when the workspace's records have reached its quota. */
  assertWritable(workspaceId: string): Promise<void>;
}

/** What the storage resolvers need from the server, where the byte store lives. */
export interface StorageServices {
  /** The workspace's quota in bytes: its plan's, or less where the server caps it. */
  quotaBytes(plan: PlanName): number;
  /**
   * Starts an upload of the caller's workspace (docs/api/storage.md): takes an upload slot (429
   * concurrency_limit_exceeded) and reserves `expectedBytes` (403 storage_quota_exceeded); null
   * when its length is unknown (then its bytes are reserved as they arrive).
   * The caller must `end()` the ticket, whatever happens.
   */
  beginUpload(ctx: Context, expectedBytes: number | null): Promise<UploadTicket>;
  /**
   * Writes an upload's bytes under its key, hashing them and reserving them as they pass; past the
   * quota it stops with 403 storage_quota_exceeded and leaves nothing behind.
   */
  put(
    upload: UploadTicket,
    bytes: Uint8Array,
    options: { contentType: string },
  ): Promise<{ size: number; sha256: string }>;
  /** Removes bytes no row refers to any more; a failure is logged and left to the sweep, never thrown. */
  discard(key: string): Promise<void>;
}

/** What the webhook resolvers need from the server, where the delivery machinery lives. */
export interface WebhookServices {
  /** Encrypts a signing secret for storage. */
  seal(secret: string): string;
  /** The URL to store, or a 400 validation_failed (param `url`) when it may not be a target here. */
  checkUrl(url: string): Promise<string>;
  /**
   * Events were written, or deliveries became due (replay, test, resume): the worker looks for
   * them as soon as the current request has ended, which is after its transaction committed.
   */
  wake(what: "events" | "deliveries"): void;
}
