import type { APIPromise, RequestOptions } from "../core.js";
import type { PagePromise } from "../pagination.js";
import type {
  AgentRegistration,
  AgentRegistrationListParams,
  AgentSettings,
  AgentSettingsUpdateParams,
  Deleted,
  Result,
  TrustedProvider,
  TrustedProviderCreateParams,
  TrustedProviderListParams,
} from "../types.js";
import { APIResource } from "./resource.js";

/** Whether agents may register for the workspace (API keys only). */
export class AgentSettingsResource extends APIResource {
  /** Needs `agents.read`. */
  retrieve(options?: RequestOptions): APIPromise<AgentSettings> {
    return this._client._route("GET /agent-settings", [], undefined, options);
  }

  /** Turns agent access on or off (`agent_auth_enabled`). Needs `agents.write`. */
  update(params: AgentSettingsUpdateParams, options?: RequestOptions): APIPromise<Result<"PATCH /agent-settings">> {
    return this._client._route("PATCH /agent-settings", [], params, options);
  }
}

/** ID-JAG providers whose identity assertions agents may register with. */
export class TrustedProviders extends APIResource {
  list(params?: TrustedProviderListParams, options?: RequestOptions): PagePromise<TrustedProvider> {
    return this._client._list("GET /trusted-providers", [], params, options);
  }

  create(params: TrustedProviderCreateParams, options?: RequestOptions): APIPromise<TrustedProvider> {
    return this._client._route("POST /trusted-providers", [], params, options);
  }

  retrieve(id: string, options?: RequestOptions): APIPromise<TrustedProvider> {
    return this._client._route("GET /trusted-providers/{id}", [id], undefined, options);
  }

  del(id: string, options?: RequestOptions): APIPromise<Deleted> {
    return this._client._route("DELETE /trusted-providers/{id}", [id], undefined, options);
  }
}

/** The agents registered for the workspace. */
export class AgentRegistrations extends APIResource {
  /** Filter by `status`. Needs `agents.read`. */
  list(params?: AgentRegistrationListParams, options?: RequestOptions): PagePromise<AgentRegistration> {
    return this._client._list("GET /agent-registrations", [], params, options);
  }

  retrieve(id: string, options?: RequestOptions): APIPromise<AgentRegistration> {
    return this._client._route("GET /agent-registrations/{id}", [id], undefined, options);
  }

  /** Revokes the registration: its tokens stop working. Needs `agents.write`. */
  revoke(id: string, options?: RequestOptions): APIPromise<Result<"POST /agent-registrations/{id}/revoke">> {
    return this._client._route("POST /agent-registrations/{id}/revoke", [id], undefined, options);
  }
}
