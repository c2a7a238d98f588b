import type { APIPromise, RequestOptions } from "../lib/core.js";
import type { PagePromise } from "../lib/pagination.js";
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
  /**
   * Needs `agents.read`.
   *
   * @example
   * ```ts
   * const { agent_auth_enabled } = await kontor.agentSettings.retrieve();
   * ```
   */
  retrieve(options?: RequestOptions): APIPromise<AgentSettings> {
    return this._client._route("GET /agent-settings", [], undefined, options);
  }

  /**
   * Turns agent access on or off (`agent_auth_enabled`). Needs `agents.write`.
   *
   * @example
   * ```ts
   * await kontor.agentSettings.update({ agent_auth_enabled: false });
   * ```
   */
  update(
    params: AgentSettingsUpdateParams,
    options?: RequestOptions,
  ): APIPromise<Result<"PATCH /agent-settings">> {
    return this._client._route("PATCH /agent-settings", [], params, options);
  }
}

/** ID-JAG providers whose identity assertions agents may register with. */
export class TrustedProviders extends APIResource {
  /**
   * The trusted providers of the workspace. Needs `agents.read`.
   *
   * @example
   * ```ts
   * for await (const provider of kontor.trustedProviders.list()) console.log(provider.issuer);
   * ```
   */
  list(params?: TrustedProviderListParams, options?: RequestOptions): PagePromise<TrustedProvider> {
    return this._client._list("GET /trusted-providers", [], params, options);
  }

  /**
   * Trusts an ID-JAG provider (its issuer and its JWKS). Needs `agents.write`.
   *
   * @example
   * ```ts
   * const provider = await kontor.trustedProviders.create({ issuer: "https://idp.example.com", jwks_url: "https://idp.example.com/jwks.json" });
   * ```
   */
  create(params: TrustedProviderCreateParams, options?: RequestOptions): APIPromise<TrustedProvider> {
    return this._client._route("POST /trusted-providers", [], params, options);
  }

  /**
   * One trusted provider by id. Needs `agents.read`.
   *
   * @example
   * ```ts
   * const provider = await kontor.trustedProviders.retrieve("tpr_…");
   * ```
   */
  retrieve(id: string, options?: RequestOptions): APIPromise<TrustedProvider> {
    return this._client._route("GET /trusted-providers/{id}", [id], undefined, options);
  }

  /**
   * Stops trusting the provider. Needs `agents.write`.
   *
   * @example
   * ```ts
   * await kontor.trustedProviders.del("tpr_…");
   * ```
   */
  del(id: string, options?: RequestOptions): APIPromise<Deleted> {
    return this._client._route("DELETE /trusted-providers/{id}", [id], undefined, options);
  }
}

/** The agents registered for the workspace. */
export class AgentRegistrations extends APIResource {
  /**
   * Filter by `status`. Needs `agents.read`.
   *
   * @example
   * ```ts
   * for await (const agent of kontor.agentRegistrations.list({ status: "active" })) console.log(agent.agent_name);
   * ```
   */
  list(params?: AgentRegistrationListParams, options?: RequestOptions): PagePromise<AgentRegistration> {
    return this._client._list("GET /agent-registrations", [], params, options);
  }

  /**
   * One registration by id. Needs `agents.read`.
   *
   * @example
   * ```ts
   * const agent = await kontor.agentRegistrations.retrieve("agr_…");
   * ```
   */
  retrieve(id: string, options?: RequestOptions): APIPromise<AgentRegistration> {
    return this._client._route("GET /agent-registrations/{id}", [id], undefined, options);
  }

  /**
   * Revokes the registration: its tokens stop working. Needs `agents.write`.
   *
   * @example
   * ```ts
   * await kontor.agentRegistrations.revoke("agr_…");
   * ```
   */
  revoke(id: string, options?: RequestOptions): APIPromise<Result<"POST /agent-registrations/{id}/revoke">> {
    return this._client._route("POST /agent-registrations/{id}/revoke", [id], undefined, options);
  }
}
