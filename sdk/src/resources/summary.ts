import type { APIPromise, RequestOptions } from "../lib/core.js";
import type { BusinessSummary } from "../types.js";
import { APIResource } from "./resource.js";

export class SummaryResource extends APIResource {
  /**
   * How the business is doing: amounts owed and overdue, payments this month, leads per stage and
   * the pipeline's value, stock and open tasks; every amount exact and per currency. Needs
   * `invoices.read`, `leads.read`, `inventory.read` and `projects.read`.
   *
   * @example
   * ```ts
   * const summary = await kontor.summary.retrieve();
   * for (const due of summary.overdue) console.log(`${due.amount} ${due.currency} overdue on ${due.count} invoices`);
   * ```
   */
  retrieve(options?: RequestOptions): APIPromise<BusinessSummary> {
    return this._client._route("GET /summary", [], undefined, options);
  }
}
