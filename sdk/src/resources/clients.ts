import type { APIPromise, RequestOptions } from "../core.js";
import type { PagePromise } from "../pagination.js";
import type { Client, ClientCreateParams, ClientListParams, ClientUpdateParams, Deleted } from "../types.js";
import { APIResource } from "./resource.js";

export class Clients extends APIResource {
  /** Clients, newest first; `search` matches name, company and e-mail. Needs `clients.read`. */
  list(params?: ClientListParams, options?: RequestOptions): PagePromise<Client> {
    return this._client._list("GET /clients", [], params, options);
  }

  create(params: ClientCreateParams, options?: RequestOptions): APIPromise<Client> {
    return this._client._route("POST /clients", [], params, options);
  }

  retrieve(id: string, options?: RequestOptions): APIPromise<Client> {
    return this._client._route("GET /clients/{id}", [id], undefined, options);
  }

  update(id: string, params: ClientUpdateParams, options?: RequestOptions): APIPromise<Client> {
    return this._client._route("PATCH /clients/{id}", [id], params, options);
  }

  del(id: string, options?: RequestOptions): APIPromise<Deleted> {
    return this._client._route("DELETE /clients/{id}", [id], undefined, options);
  }
}
