import type { APIPromise, RequestOptions } from "../lib/core.js";
import type { PagePromise } from "../lib/pagination.js";
import type {
  ConvertedLead,
  Deleted,
  Lead,
  LeadCreateParams,
  LeadListParams,
  LeadUpdateParams,
} from "../types.js";
import { APIResource } from "./resource.js";

export class Leads extends APIResource {
  /**
   * Leads, newest first; filter by `stage` or `search` (name, company, e-mail). Needs `leads.read`.
   *
   * @example
   * ```ts
   * for await (const lead of kontor.leads.list({ stage: "new", search: "acme" })) console.log(lead.id);
   * ```
   */
  list(params?: LeadListParams, options?: RequestOptions): PagePromise<Lead> {
    return this._client._list("GET /leads", [], params, options);
  }

  /**
   * Creates a lead (`first_name` or `full_name`). Needs `leads.write`.
   *
   * @example
   * ```ts
   * const lead = await kontor.leads.create({ first_name: "Ada", last_name: "Lovelace", email: "ada@example.com" });
   * ```
   */
  create(params: LeadCreateParams, options?: RequestOptions): APIPromise<Lead> {
    return this._client._route("POST /leads", [], params, options);
  }

  /**
   * One lead by id (`lead_…`). Needs `leads.read`.
   *
   * @example
   * ```ts
   * const lead = await kontor.leads.retrieve("lead_…");
   * ```
   */
  retrieve(id: string, options?: RequestOptions): APIPromise<Lead> {
    return this._client._route("GET /leads/{id}", [id], undefined, options);
  }

  /**
   * Changes the fields sent; `null` clears an optional one.
   *
   * @example
   * ```ts
   * const lead = await kontor.leads.update("lead_…", { stage: "qualified", notes: null });
   * ```
   */
  update(id: string, params: LeadUpdateParams, options?: RequestOptions): APIPromise<Lead> {
    return this._client._route("PATCH /leads/{id}", [id], params, options);
  }

  /**
   * Deletes the lead. Needs `leads.write`.
   *
   * @example
   * ```ts
   * const { deleted } = await kontor.leads.del("lead_…");
   * ```
   */
  del(id: string, options?: RequestOptions): APIPromise<Deleted> {
    return this._client._route("DELETE /leads/{id}", [id], undefined, options);
  }

  /**
   * Makes a client from the lead and moves it to `won`. Needs `leads.write` and `clients.write`.
   *
   * @example
   * ```ts
   * const converted = await kontor.leads.convert("lead_…"); // the lead, now `won`, and its new client
   * ```
   */
  convert(id: string, options?: RequestOptions): APIPromise<ConvertedLead> {
    return this._client._route("POST /leads/{id}/convert", [id], undefined, options);
  }
}
