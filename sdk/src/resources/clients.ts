import type { APIPromise, RequestOptions } from "../lib/core.js";
import type { PagePromise } from "../lib/pagination.js";
import type { Client, ClientCreateParams, ClientListParams, ClientUpdateParams, Deleted } from "../types.js";
import { APIResource } from "./resource.js";

export class Clients extends APIResource {
  /**
   * Clients, newest first; `search` matches name, company and e-mail. Needs `clients.read`.
   *
   * @example
   * ```ts
   * for await (const client of kontor.clients.list({ search: "acme" })) console.log(client.name);
   * ```
   */
  list(params?: ClientListParams, options?: RequestOptions): PagePromise<Client> {
    return this._client._list("GET /clients", [], params, options);
  }

  /**
   * Creates a client (`name` is required). Needs `clients.write`.
   *
   * @example
   * ```ts
   * const client = await kontor.clients.create({ name: "Acme AG", email: "billing@acme.example", currency: "CHF" });
   * ```
   */
  create(params: ClientCreateParams, options?: RequestOptions): APIPromise<Client> {
    return this._client._route("POST /clients", [], params, options);
  }

  /**
   * One client by id. Needs `clients.read`.
   *
   * @example
   * ```ts
   * const client = await kontor.clients.retrieve("cli_…");
   * ```
   */
  retrieve(id: string, options?: RequestOptions): APIPromise<Client> {
    return this._client._route("GET /clients/{id}", [id], undefined, options);
  }

  /**
   * Changes the fields sent; `null` clears an optional one. Needs `clients.write`.
   *
   * @example
   * ```ts
   * await kontor.clients.update("cli_…", { phone: "+41 44 000 00 00", notes: null });
   * ```
   */
  update(id: string, params: ClientUpdateParams, options?: RequestOptions): APIPromise<Client> {
    return this._client._route("PATCH /clients/{id}", [id], params, options);
  }

  /**
   * Deletes the client. Needs `clients.write`.
   *
   * @example
   * ```ts
   * await kontor.clients.del("cli_…");
   * ```
   */
  del(id: string, options?: RequestOptions): APIPromise<Deleted> {
    return this._client._route("DELETE /clients/{id}", [id], undefined, options);
  }
}
