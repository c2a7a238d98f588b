import type { APIPromise, RequestOptions } from "../lib/core.js";
import type { Workspace } from "../types.js";
import { APIResource } from "./resource.js";

export class WorkspaceResource extends APIResource {
  /**
   * The workspace the credential belongs to, with its plan's limits (any valid credential).
   *
   * @example
   * ```ts
   * const workspace = await kontor.workspace.retrieve();
   * console.log(workspace.name, workspace.plan);
   * ```
   */
  retrieve(options?: RequestOptions): APIPromise<Workspace> {
    return this._client._route("GET /workspace", [], undefined, options);
  }
}
