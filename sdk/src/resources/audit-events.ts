import type { APIPromise, RequestOptions } from "../lib/core.js";
import type { PagePromise } from "../lib/pagination.js";
import type { AuditEvent, AuditEventListParams } from "../types.js";
import { APIResource } from "./resource.js";

/** The audit log: every change to access (keys, members, sessions, agents, webhooks), kept 400 days. Read-only. */
export class AuditEvents extends APIResource {
  /**
   * Newest first; filter by `action`, `actor_id`, `target_id`, `from`, `to`. Needs `audit.read`
   * (an API key's; agent tokens never hold it).
   *
   * @example for await (const record of kontor.auditEvents.list({ action: "api_key.revoked" })) console.log(record.actor.email);
   */
  list(params?: AuditEventListParams, options?: RequestOptions): PagePromise<AuditEvent> {
    return this._client._list("GET /audit-events", [], params, options);
  }

  /**
   * One record by id (`aud_…`).
   *
   * @example
   * ```ts
   * const record = await kontor.auditEvents.retrieve("aud_…");
   * ```
   */
  retrieve(id: string, options?: RequestOptions): APIPromise<AuditEvent> {
    return this._client._route("GET /audit-events/{id}", [id], undefined, options);
  }
}
