import type { APIPromise, RequestOptions } from "../core.js";
import type { PagePromise } from "../pagination.js";
import type { ConvertedLead, Deleted, Lead, LeadCreateParams, LeadListParams, LeadUpdateParams } from "../types.js";
import { APIResource } from "./resource.js";

export class Leads extends APIResource {
  /** Leads, newest first; filter by `stage` or `search` (name, company, e-mail). Needs `leads.read`. */
  list(params?: LeadListParams, options?: RequestOptions): PagePromise<Lead> {
    return this._client._list("GET /leads", [], params, options);
  }

  /** Creates a lead (`first_name` or `full_name`). Needs `leads.write`. */
  create(params: LeadCreateParams, options?: RequestOptions): APIPromise<Lead> {
    return this._client._route("POST /leads", [], params, options);
  }

  retrieve(id: string, options?: RequestOptions): APIPromise<Lead> {
    return this._client._route("GET /leads/{id}", [id], undefined, options);
  }

  /** Changes the fields sent; `null` clears an optional one. */
  update(id: string, params: LeadUpdateParams, options?: RequestOptions): APIPromise<Lead> {
    return this._client._route("PATCH /leads/{id}", [id], params, options);
  }

  del(id: string, options?: RequestOptions): APIPromise<Deleted> {
    return this._client._route("DELETE /leads/{id}", [id], undefined, options);
  }

  /** Makes a client from the lead and moves it to `won`. Needs `leads.write` and `clients.write`. */
  convert(id: string, options?: RequestOptions): APIPromise<ConvertedLead> {
    return this._client._route("POST /leads/{id}/convert", [id], undefined, options);
  }
}
