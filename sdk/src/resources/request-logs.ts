import type { APIPromise, RequestOptions } from "../lib/core.js";
import type { PagePromise } from "../lib/pagination.js";
import type { RequestLog, RequestLogListParams, RequestLogStats, RequestLogStatsParams } from "../types.js";
import { APIResource } from "./resource.js";

export class RequestLogs extends APIResource {
  /**
   * Every request of the workspace, kept 30 days; filter by `key_id`, `status`, `from`, `to`. Needs `logs.read`.
   *
   * @example
   * ```ts
   * for await (const log of kontor.requestLogs.list({ status: 429 })) console.log(log.method, log.route);
   * ```
   */
  list(params?: RequestLogListParams, options?: RequestOptions): PagePromise<RequestLog> {
    return this._client._list("GET /request-logs", [], params, options);
  }

  /**
   * Daily volume, error rate, p50/p95 latency and top endpoints over `days` (1–90, default 30).
   *
   * @example
   * ```ts
   * const stats = await kontor.requestLogs.stats({ days: 7 });
   * ```
   */
  stats(params?: RequestLogStatsParams, options?: RequestOptions): APIPromise<RequestLogStats> {
    return this._client._route("GET /request-logs/stats", [], params, options);
  }
}
