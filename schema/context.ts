import type { PrismaClient } from "./generated/prisma/client.ts";
import type { MembershipRole } from "./generated/prisma/enums.ts";
import type { PlanName } from "./lib/plans.ts";

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
      /** The user's role in `workspaceId`: owners hold every scope, members every `.read` scope but audit.read. */
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
  /** Tells every process that credentials were revoked: call it after the revoking write committed, before answering. */
  revocations: Revocations;
  /** Where the request came from, for the audit log; absent outside an HTTP request. */
  client?: RequestClient;
}

/** The client of a request: its address (server/client-address.ts) and User-Agent (at most 512 characters); null when unknown. */
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

/** What the storage resolvers need from the server, where the byte store lives. */
export interface StorageServices {
  /** The workspace's quota in bytes: its plan's, or less where the server caps it. */
  quotaBytes(plan: PlanName): number;
  /**
   * Writes bytes under a new key, hashing them; past `maxBytes` it stops with 403
   * storage_quota_exceeded and leaves nothing behind.
   */
  put(key: string, bytes: Uint8Array, options: { maxBytes: number; quotaBytes: number; contentType: string }): Promise<{ size: number; sha256: string }>;
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
