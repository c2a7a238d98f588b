import type { Kontor } from "../client.js";

/** A namespace of methods over one resource. */
export class APIResource {
  protected readonly _client: Kontor;

  constructor(client: Kontor) {
    this._client = client;
  }
}
