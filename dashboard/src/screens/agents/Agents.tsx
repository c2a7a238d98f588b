import { useId, useState } from "react";
import { useMutation, useQuery } from "../../api/hooks.ts";
import { usePaged } from "../../api/paged.ts";
import {
  type AgentRegistrationStatus,
  AgentRegistrationsDocument,
  AgentSettingsDocument,
  DeleteTrustedProviderDocument,
  RevokeAgentRegistrationDocument,
  TrustedProvidersDocument,
  UpdateAgentSettingsDocument,
} from "../../generated/graphql.ts";
import { useSession } from "../../session.tsx";
import { Button } from "../../ui/Button.tsx";
import { ConfirmDialog } from "../../ui/ConfirmDialog.tsx";
import { ErrorBanner, Notice } from "../../ui/ErrorBanner.tsx";
import { SelectField } from "../../ui/Field.tsx";
import { Actions } from "../../ui/Form.tsx";
import { formatDateTime, formatNumber } from "../../ui/format.ts";
import { Loading, Page, Panel } from "../../ui/Page.tsx";
import { Table } from "../../ui/Table.tsx";
import { AddProvider } from "./AddProvider.tsx";
import {
  AgentCell,
  agentLabel,
  formatDuration,
  Limits,
  ONLY_OWNERS,
  type Provider,
  type Registration,
  StatusTag,
} from "./agent-cells.tsx";

const STATUS_FILTERS: { value: "" | AgentRegistrationStatus; label: string }[] = [
  { value: "", label: "Every status" },
  { value: "active", label: "Active" },
  { value: "pending", label: "Pending" },
  { value: "revoked", label: "Revoked" },
  { value: "denied", label: "Denied" },
];

/**
 * AI agents in the workspace: agent access on or off, the plan's agent caps, trusted ID-JAG
 * providers, and the registered agents with their scopes, live tokens and last use, revocable.
 * Members see everything; every change is an owner's (the buttons are disabled for members).
 */
export default function Agents() {
  const { isOwner } = useSession();
  const reasonId = useId();
  const settings = useQuery(AgentSettingsDocument, {});
  const providers = useQuery(TrustedProvidersDocument, {});
  const [status, setStatus] = useState<"" | AgentRegistrationStatus>("");
  const registrations = usePaged(
    AgentRegistrationsDocument,
    { status: status || null },
    (data) => data.agentRegistrations,
  );
  const [notice, setNotice] = useState("");
  const [turningOff, setTurningOff] = useState(false);
  const [deleting, setDeleting] = useState<Provider | null>(null);
  const [revoking, setRevoking] = useState<Registration | null>(null);
  const [update, updating] = useMutation(UpdateAgentSettingsDocument);

  /** Props of an owner-only button: disabled for members, who hear why. */
  const ownerOnly = isOwner ? {} : { disabled: true, "aria-describedby": reasonId };
  const rows = registrations.rows;
  const current = settings.data?.agentSettings;

  const turnOn = async () => {
    setNotice("");
    const result = await update({ agent_auth_enabled: true });
    if (!result) return;
    setNotice("Agent access is on: agents may register, and their live tokens work again.");
    settings.reload();
  };

  return (
    <Page title="Agents">
      {!isOwner && (
        <div className="banner banner-info" role="note" id={reasonId}>
          {ONLY_OWNERS}
        </div>
      )}
      <Notice>{notice}</Notice>
      <Panel title="Agent access">
        <ErrorBanner error={settings.error} />
        <ErrorBanner error={updating.error} />
        {settings.loading && !current && <Loading />}
        {current && (
          <>
            <div className="agents-access">
              <p className="agents-access-state">
                {current.agent_auth_enabled ? (
                  <span className="tag tag-ok">On</span>
                ) : (
                  <span className="tag tag-bad">Off</span>
                )}{" "}
                {current.agent_auth_enabled
                  ? "AI agents may register with this workspace and call the API with their tokens."
                  : "AI agents cannot register with this workspace, be claimed into it or use their tokens here."}
              </p>
              {current.agent_auth_enabled ? (
                <Button variant="danger" {...ownerOnly} onClick={() => setTurningOff(true)}>
                  Turn agent access off
                </Button>
              ) : (
                <Button
                  variant="primary"
                  busy={updating.pending}
                  {...ownerOnly}
                  onClick={() => void turnOn()}
                >
                  Turn agent access on
                </Button>
              )}
            </div>
            <Limits settings={current} />
          </>
        )}
      </Panel>

      <Panel title="Trusted ID-JAG providers">
        <p className="muted" data-testid="id-jag-intro">
          An ID-JAG (Identity Assertion JWT Authorization Grant) is a signed token from your company's
          identity provider vouching that an agent acts for one of its users, so that an agent holding one
          from a provider trusted here registers without a pairing code (each user confirms it once). How
          agents use it: <a href="/auth.md">the agents' guide (auth.md)</a>; the trusted-provider endpoints:{" "}
          <a href="/docs">API reference</a>.
        </p>
        <ErrorBanner error={providers.error} />
        {providers.loading && !providers.data && <Loading />}
        {providers.data && (
          <Table
            caption="Trusted providers"
            rows={providers.data.trustedProviders.data}
            rowKey={(provider) => provider.id}
            empty="No provider is trusted."
            columns={[
              { header: "Issuer", cell: (provider) => <code className="agents-url">{provider.issuer}</code> },
              {
                header: "JWKS URL",
                cell: (provider) => <code className="agents-url">{provider.jwks_url}</code>,
              },
              {
                header: "Sign-in age",
                cell: (provider) =>
                  provider.max_auth_age === null ? (
                    <span className="muted">Not checked</span>
                  ) : (
                    `At most ${formatDuration(provider.max_auth_age)}`
                  ),
              },
              { header: "Added", cell: (provider) => formatDateTime(provider.created_at), nowrap: true },
              {
                header: "Actions",
                cell: (provider) => (
                  <div className="row-actions">
                    <Button
                      variant="danger"
                      {...ownerOnly}
                      aria-label={`Delete provider ${provider.issuer}`}
                      onClick={() => setDeleting(provider)}
                    >
                      Delete
                    </Button>
                  </div>
                ),
              },
            ]}
          />
        )}
        <AddProvider
          settings={current}
          disabled={!isOwner}
          reasonId={reasonId}
          onAdded={(provider) => {
            setNotice(`${provider.issuer} is trusted: agents may register with its ID-JAGs.`);
            providers.reload();
            settings.reload();
          }}
        />
      </Panel>

      <Panel
        title="Registered agents"
        actions={
          <SelectField
            label="Show"
            className="agents-filter"
            options={STATUS_FILTERS}
            value={status}
            onChange={(event) => setStatus(event.target.value as "" | AgentRegistrationStatus)}
          />
        }
      >
        <ErrorBanner error={registrations.error} />
        {registrations.loading && rows.length === 0 && <Loading />}
        {(!registrations.loading || rows.length > 0) && (
          <Table
            caption="Agent registrations"
            rows={rows}
            rowKey={(registration) => registration.id}
            empty={
              status
                ? "No agent registration has this status."
                : "No agent has registered with this workspace yet."
            }
            columns={[
              { header: "Agent", cell: (registration) => <AgentCell registration={registration} /> },
              { header: "Status", cell: (registration) => <StatusTag registration={registration} /> },
              {
                header: "Scopes",
                cell: (registration) =>
                  registration.scopes.map((scope) => (
                    <span key={scope} className="tag">
                      {scope}
                    </span>
                  )),
              },
              {
                header: "Live tokens",
                cell: (registration) =>
                  current
                    ? `${formatNumber(registration.live_tokens)} of ${formatNumber(current.limits.agent_tokens_per_registration)}`
                    : formatNumber(registration.live_tokens),
                nowrap: true,
              },
              { header: "Last used", cell: (registration) => formatDateTime(registration.last_used_at) },
              { header: "Registered", cell: (registration) => formatDateTime(registration.created_at) },
              {
                header: "Actions",
                cell: (registration) =>
                  registration.status === "active" || registration.status === "pending" ? (
                    <div className="row-actions">
                      <Button
                        variant="danger"
                        {...ownerOnly}
                        aria-label={`Revoke ${agentLabel(registration)}`}
                        onClick={() => setRevoking(registration)}
                      >
                        Revoke
                      </Button>
                    </div>
                  ) : null,
              },
            ]}
          />
        )}
        {registrations.hasMore && (
          <Actions>
            <Button busy={registrations.loading} onClick={registrations.more}>
              Show more
            </Button>
          </Actions>
        )}
      </Panel>

      <ConfirmDialog
        subject={turningOff || null}
        title="Turn agent access off?"
        label="Turn agent access off"
        confirm="Turn off"
        mutation={UpdateAgentSettingsDocument}
        variables={() => ({ agent_auth_enabled: false })}
        onClose={() => setTurningOff(false)}
        onDone={() => {
          setTurningOff(false);
          setNotice("Agent access is off: every agent token of the workspace is refused from now on.");
          settings.reload();
        }}
      >
        <p>
          Every agent token of this workspace is refused within seconds, and no agent can register with it or
          be claimed into it. Turned on again, tokens still within their lifetime work again.
        </p>
      </ConfirmDialog>
      <ConfirmDialog
        subject={deleting}
        title="Stop trusting this provider?"
        label="Delete provider"
        confirm="Delete provider"
        mutation={DeleteTrustedProviderDocument}
        variables={(provider) => ({ id: provider.id })}
        onClose={() => setDeleting(null)}
        onDone={(_, provider) => {
          setDeleting(null);
          setNotice(`${provider.issuer} is no longer trusted: its ID-JAGs are refused from now on.`);
          providers.reload();
          settings.reload();
        }}
      >
        <p>
          ID-JAGs from <code className="agents-url">{deleting?.issuer}</code> are refused from now on. Agents
          already linked through it keep their registrations until you revoke them.
        </p>
      </ConfirmDialog>
      <ConfirmDialog
        subject={revoking}
        title={`Revoke ${revoking ? agentLabel(revoking) : "agent"}?`}
        label="Revoke agent"
        confirm="Revoke agent"
        mutation={RevokeAgentRegistrationDocument}
        variables={(registration) => ({ id: registration.id })}
        onClose={() => setRevoking(null)}
        onDone={({ revokeAgentRegistration: registration }) => {
          setRevoking(null);
          setNotice(`Agent ${agentLabel(registration)} revoked: its tokens are refused from now on.`);
          registrations.restart();
          settings.reload();
        }}
      >
        <p>
          Every token the agent holds is refused within seconds, and it cannot get new ones. This cannot be
          undone: the agent must register again.
        </p>
      </ConfirmDialog>
    </Page>
  );
}
