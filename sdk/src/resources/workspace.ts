import type { APIPromise, RequestOptions } from "../core.js";
import type { Workspace } from "../types.js";
import { APIResource } from "./resource.js";

export class WorkspaceResource extends APIResource {
  /** The workspace the credential belongs to, with its plan's limits (any valid credential). */
  retrieve(options?: RequestOptions): APIPromise<Workspace> {
    return this._client._route("GET /workspace", [], undefined, options);
  }
}
