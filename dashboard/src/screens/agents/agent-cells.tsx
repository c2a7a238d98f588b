import type {
  AgentRegistrationFieldsFragment,
  AgentRegistrationType,
  AgentSettingsFieldsFragment,
  TrustedProviderFieldsFragment,
} from "../../generated/graphql.ts";
import { formatDateTime, formatNumber } from "../../ui/format.ts";

// The Agents screen's shared types, cells and texts.

export type Settings = AgentSettingsFieldsFragment;
export type Provider = TrustedProviderFieldsFragment;
export type Registration = AgentRegistrationFieldsFragment;

/** Why a member's buttons are disabled. */
export const ONLY_OWNERS =
  "Only owners can turn agent access on or off, trust identity providers and revoke agents.";

const TYPE_LABELS: Record<AgentRegistrationType, string> = {
  service_auth: "Service auth",
  anonymous: "Anonymous, claimed",
  identity_assertion: "ID-JAG",
};

/** The plan's agent caps, with what the workspace uses of them. */
export function Limits({ settings }: { settings: Settings }) {
  const { limits } = settings;
  return (
    <dl className="facts" aria-label="Agent limits of the plan">
      <div>
        <dt>Plan</dt>
        <dd>{settings.plan}</dd>
      </div>
      <div>
        <dt>Active agents</dt>
        <dd>
          {formatNumber(settings.active_registrations)} of {formatNumber(limits.agent_registrations)}
        </dd>
      </div>
      <div>
        <dt>Trusted providers</dt>
        <dd>
          {formatNumber(settings.trusted_providers)} of {formatNumber(limits.trusted_providers)}
        </dd>
      </div>
      <div>
        <dt>Live tokens per agent</dt>
        <dd>Up to {formatNumber(limits.agent_tokens_per_registration)}</dd>
      </div>
      <div>
        <dt>Token lifetime</dt>
        <dd>{formatDuration(limits.agent_token_lifetime_seconds)}</dd>
      </div>
    </dl>
  );
}

/** An agent's name, how it registered, and for whom or through which provider. */
export function AgentCell({ registration }: { registration: Registration }) {
  return (
    <div className="agents-agent">
      <strong>{registration.agent_name ?? <span className="muted">(no name)</span>}</strong>
      <span className="muted">
        {TYPE_LABELS[registration.type]}
        {registration.login_hint && <>, for {registration.login_hint}</>}
      </span>
      {registration.provider_issuer && (
        <span className="muted">
          via <code className="agents-url">{registration.provider_issuer}</code>
          {registration.provider_subject && <> as {registration.provider_subject}</>}
        </span>
      )}
      <code className="muted">{registration.id}</code>
    </div>
  );
}

/** A registration's status as a tag. */
export function StatusTag({ registration }: { registration: Registration }) {
  switch (registration.status) {
    case "active":
      return <span className="tag tag-ok">Active</span>;
    case "pending":
      return <span className="tag tag-warn">Pending</span>;
    case "denied":
      return <span className="tag tag-bad">Denied</span>;
    case "revoked":
      return (
        <>
          <span className="tag tag-bad">Revoked</span>{" "}
          <span className="agents-when">{formatDateTime(registration.revoked_at, "")}</span>
        </>
      );
  }
}

/** How an agent is named in text: its name, or its id when it has none. */
export const agentLabel = (registration: Registration) =>
  registration.agent_name ? `“${registration.agent_name}”` : registration.id;

/** 3600 → "1 hour", 600 → "10 minutes", 86400 → "1 day". */
export function formatDuration(seconds: number): string {
  const units: [number, string][] = [
    [86_400, "day"],
    [3_600, "hour"],
    [60, "minute"],
    [1, "second"],
  ];
  for (const [size, name] of units) {
    if (seconds >= size && seconds % size === 0) {
      const count = seconds / size;
      return `${formatNumber(count)} ${name}${count === 1 ? "" : "s"}`;
    }
  }
  return `${formatNumber(seconds)} seconds`;
}
