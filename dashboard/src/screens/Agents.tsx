import { useId, useState } from "react";
import { useMutation, useQuery } from "../api/hooks.ts";
import {
  AgentRegistrationsDocument,
  AgentSettingsDocument,
  CreateTrustedProviderDocument,
  DeleteTrustedProviderDocument,
  RevokeAgentRegistrationDocument,
  TrustedProvidersDocument,
  UpdateAgentSettingsDocument,
  type AgentRegistrationFieldsFragment,
  type AgentRegistrationStatus,
  type AgentRegistrationType,
  type AgentSettingsFieldsFragment,
  type TrustedProviderFieldsFragment,
} from "../generated/graphql.ts";
import { useSession } from "../session.tsx";
import { Button } from "../ui/Button.tsx";
import { Dialog } from "../ui/Dialog.tsx";
import { ErrorBanner, fieldError, Notice } from "../ui/ErrorBanner.tsx";
import { SelectField, TextField } from "../ui/Field.tsx";
import { Actions, Form } from "../ui/Form.tsx";
import { formatDateTime, formatNumber } from "../ui/format.ts";
import { Loading, Page, Panel } from "../ui/Page.tsx";
import { Table } from "../ui/Table.tsx";

type Settings = AgentSettingsFieldsFragment;
type Provider = TrustedProviderFieldsFragment;
type Registration = AgentRegistrationFieldsFragment;

const ONLY_OWNERS = "Only owners can turn agent access on or off, trust identity providers and revoke agents.";

/** The longest max_auth_age the API takes (30 days). */
const MAX_AUTH_AGE_LIMIT = 2_592_000;

const STATUS_FILTERS: { value: "" | AgentRegistrationStatus; label: string }[] = [
  { value: "", label: "Every status" },
  { value: "active", label: "Active" },
  { value: "pending", label: "Pending" },
  { value: "revoked", label: "Revoked" },
  { value: "denied", label: "Denied" },
];

const TYPE_LABELS: Record<AgentRegistrationType, string> = {
  service_auth: "Service auth",
  anonymous: "Anonymous, claimed",
  identity_assertion: "ID-JAG",
};

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
  const [cursor, setCursor] = useState<string | null>(null);
  const [earlier, setEarlier] = useState<Registration[]>([]);
  const registrations = useQuery(AgentRegistrationsDocument, { status: status || null, cursor });
  const [notice, setNotice] = useState("");
  const [turningOff, setTurningOff] = useState(false);
  const [deleting, setDeleting] = useState<Provider | null>(null);
  const [revoking, setRevoking] = useState<Registration | null>(null);
  const [update, updating] = useMutation(UpdateAgentSettingsDocument);

  /** Props of an owner-only button: disabled for members, who hear why. */
  const ownerOnly = isOwner ? {} : { disabled: true, "aria-describedby": reasonId };
  const rows = [...earlier, ...(registrations.data?.agentRegistrations.data ?? [])];
  const current = settings.data?.agentSettings;
  const restartRegistrations = () => {
    setEarlier([]);
    setCursor(null);
    registrations.reload();
  };

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
                {current.agent_auth_enabled ? <span className="tag tag-ok">On</span> : <span className="tag tag-bad">Off</span>}{" "}
                {current.agent_auth_enabled
                  ? "AI agents may register with this workspace and call the API with their tokens."
                  : "AI agents cannot register with this workspace, be claimed into it or use their tokens here."}
              </p>
              {current.agent_auth_enabled ? (
                <Button variant="danger" {...ownerOnly} onClick={() => setTurningOff(true)}>
                  Turn agent access off
                </Button>
              ) : (
                <Button variant="primary" busy={updating.pending} {...ownerOnly} onClick={() => void turnOn()}>
                  Turn agent access on
                </Button>
              )}
            </div>
            <Limits settings={current} />
          </>
        )}
      </Panel>

      <Panel title="Trusted ID-JAG providers">
        <p className="muted">Agents may register with an identity assertion (ID-JAG) from a provider trusted here; each user confirms the first one once.</p>
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
              { header: "JWKS URL", cell: (provider) => <code className="agents-url">{provider.jwks_url}</code> },
              {
                header: "Sign-in age",
                cell: (provider) =>
                  provider.max_auth_age === null ? <span className="muted">Not checked</span> : `At most ${formatDuration(provider.max_auth_age)}`,
              },
              { header: "Added", cell: (provider) => formatDateTime(provider.created_at), nowrap: true },
              {
                header: "Actions",
                cell: (provider) => (
                  <div className="row-actions">
                    <Button variant="danger" {...ownerOnly} aria-label={`Delete provider ${provider.issuer}`} onClick={() => setDeleting(provider)}>
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
            onChange={(event) => {
              setStatus(event.target.value as "" | AgentRegistrationStatus);
              setEarlier([]);
              setCursor(null);
            }}
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
            empty={status ? "No agent registration has this status." : "No agent has registered with this workspace yet."}
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
                      <Button variant="danger" {...ownerOnly} aria-label={`Revoke ${agentLabel(registration)}`} onClick={() => setRevoking(registration)}>
                        Revoke
                      </Button>
                    </div>
                  ) : null,
              },
            ]}
          />
        )}
        {registrations.data?.agentRegistrations.has_more && (
          <Actions>
            <Button
              busy={registrations.loading}
              onClick={() => {
                setEarlier(rows);
                setCursor(registrations.data?.agentRegistrations.next_cursor ?? null);
              }}
            >
              Show more
            </Button>
          </Actions>
        )}
      </Panel>

      <TurnOffDialog
        open={turningOff}
        onClose={() => setTurningOff(false)}
        onDone={() => {
          setTurningOff(false);
          setNotice("Agent access is off: every agent token of the workspace is refused from now on.");
          settings.reload();
        }}
      />
      <DeleteProviderDialog
        provider={deleting}
        onClose={() => setDeleting(null)}
        onDeleted={(provider) => {
          setDeleting(null);
          setNotice(`${provider.issuer} is no longer trusted: its ID-JAGs are refused from now on.`);
          providers.reload();
          settings.reload();
        }}
      />
      <RevokeAgentDialog
        registration={revoking}
        onClose={() => setRevoking(null)}
        onRevoked={(registration) => {
          setRevoking(null);
          setNotice(`Agent ${agentLabel(registration)} revoked: its tokens are refused from now on.`);
          restartRegistrations();
          settings.reload();
        }}
      />
    </Page>
  );
}

/** The plan's agent caps, with what the workspace uses of them. */
function Limits({ settings }: { settings: Settings }) {
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

function AddProvider({
  settings,
  disabled,
  reasonId,
  onAdded,
}: {
  settings: Settings | undefined;
  disabled: boolean;
  reasonId: string;
  onAdded(provider: Provider): void;
}) {
  const [issuer, setIssuer] = useState("");
  const [jwksUrl, setJwksUrl] = useState("");
  const [maxAge, setMaxAge] = useState("");
  const [create, state] = useMutation(CreateTrustedProviderDocument);
  const submit = async () => {
    const result = await create({ issuer: issuer.trim(), jwks_url: jwksUrl.trim(), max_auth_age: maxAge.trim() === "" ? null : Number(maxAge) });
    if (!result) return;
    setIssuer("");
    setJwksUrl("");
    setMaxAge("");
    onAdded(result.createTrustedProvider);
  };
  const cap = settings?.limits.trusted_providers;
  return (
    <section className="agents-add" aria-labelledby={`${reasonId}-add`}>
      <h3 id={`${reasonId}-add`}>Trust a provider</h3>
      {disabled && <p className="muted">{ONLY_OWNERS}</p>}
      {settings && cap !== undefined && (
        <p className="field-hint">
          {cap === 0
            ? `The ${settings.plan} plan cannot trust providers; a higher plan can.`
            : `The ${settings.plan} plan allows ${formatNumber(cap)} trusted provider${cap === 1 ? "" : "s"}; ${formatNumber(settings.trusted_providers)} in use.`}
        </p>
      )}
      <ErrorBanner error={state.error && !fieldOf(state.error) ? state.error : undefined} />
      <Form onSubmit={submit} aria-label="Trust a provider" className="agents-provider-form">
        <TextField
          label="Issuer"
          type="url"
          required
          maxLength={2000}
          placeholder="https://idp.example.com"
          hint="Exactly as the provider's ID-JAGs say in iss: https (http only for localhost outside production)."
          value={issuer}
          disabled={disabled}
          error={fieldError(state.error, "issuer")}
          onChange={(event) => setIssuer(event.target.value)}
        />
        <TextField
          label="JWKS URL"
          type="url"
          required
          maxLength={2000}
          placeholder="https://idp.example.com/.well-known/jwks.json"
          hint="Where the provider publishes its signing keys."
          value={jwksUrl}
          disabled={disabled}
          error={fieldError(state.error, "jwks_url")}
          onChange={(event) => setJwksUrl(event.target.value)}
        />
        <TextField
          label="Maximum sign-in age (seconds)"
          type="number"
          min={1}
          max={MAX_AUTH_AGE_LIMIT}
          step={1}
          inputMode="numeric"
          hint="Optional: ID-JAGs must then say the user signed in at most this long ago."
          value={maxAge}
          disabled={disabled}
          error={fieldError(state.error, "max_auth_age")}
          onChange={(event) => setMaxAge(event.target.value)}
        />
        <Actions>
          <Button type="submit" variant="primary" busy={state.pending} disabled={disabled} aria-describedby={disabled ? reasonId : undefined}>
            Trust provider
          </Button>
        </Actions>
      </Form>
    </section>
  );
}

/** Whether the error belongs under one of the form's fields (then it is shown there only). */
function fieldOf(error: unknown): boolean {
  return ["issuer", "jwks_url", "max_auth_age"].some((param) => fieldError(error, param) !== undefined);
}

function AgentCell({ registration }: { registration: Registration }) {
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

function StatusTag({ registration }: { registration: Registration }) {
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
          <span className="tag tag-bad">Revoked</span> <span className="agents-when">{formatDateTime(registration.revoked_at, "")}</span>
        </>
      );
  }
}

const agentLabel = (registration: Registration) => (registration.agent_name ? `“${registration.agent_name}”` : registration.id);

/** 3600 → "1 hour", 600 → "10 minutes", 86400 → "1 day". */
function formatDuration(seconds: number): string {
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

function TurnOffDialog({ open, onClose, onDone }: { open: boolean; onClose(): void; onDone(): void }) {
  const [update, state] = useMutation(UpdateAgentSettingsDocument);
  const close = () => {
    state.reset();
    onClose();
  };
  const submit = async () => {
    const result = await update({ agent_auth_enabled: false });
    if (!result) return;
    state.reset();
    onDone();
  };
  return (
    <Dialog open={open} title="Turn agent access off?" onClose={close}>
      <Form onSubmit={submit} aria-label="Turn agent access off">
        <p>
          Every agent token of this workspace is refused within seconds, and no agent can register with it or be claimed into it. Turned on again, tokens still
          within their lifetime work again.
        </p>
        <ErrorBanner error={state.error} />
        <Actions>
          <Button onClick={close}>Cancel</Button>
          <Button type="submit" variant="danger" busy={state.pending}>
            Turn off
          </Button>
        </Actions>
      </Form>
    </Dialog>
  );
}

function DeleteProviderDialog({ provider, onClose, onDeleted }: { provider: Provider | null; onClose(): void; onDeleted(provider: Provider): void }) {
  const [remove, state] = useMutation(DeleteTrustedProviderDocument);
  const close = () => {
    state.reset();
    onClose();
  };
  const submit = async () => {
    if (!provider) return;
    const result = await remove({ id: provider.id });
    if (!result) return;
    state.reset();
    onDeleted(provider);
  };
  return (
    <Dialog open={provider !== null} title="Stop trusting this provider?" onClose={close}>
      <Form onSubmit={submit} aria-label="Delete provider">
        <p>
          ID-JAGs from <code className="agents-url">{provider?.issuer}</code> are refused from now on. Agents already linked through it keep their registrations
          until you revoke them.
        </p>
        <ErrorBanner error={state.error} />
        <Actions>
          <Button onClick={close}>Cancel</Button>
          <Button type="submit" variant="danger" busy={state.pending}>
            Delete provider
          </Button>
        </Actions>
      </Form>
    </Dialog>
  );
}

function RevokeAgentDialog({
  registration,
  onClose,
  onRevoked,
}: {
  registration: Registration | null;
  onClose(): void;
  onRevoked(registration: Registration): void;
}) {
  const [revoke, state] = useMutation(RevokeAgentRegistrationDocument);
  const close = () => {
    state.reset();
    onClose();
  };
  const submit = async () => {
    if (!registration) return;
    const result = await revoke({ id: registration.id });
    if (!result) return;
    state.reset();
    onRevoked(result.revokeAgentRegistration);
  };
  return (
    <Dialog open={registration !== null} title={`Revoke ${registration ? agentLabel(registration) : "agent"}?`} onClose={close}>
      <Form onSubmit={submit} aria-label="Revoke agent">
        <p>Every token the agent holds is refused within seconds, and it cannot get new ones. This cannot be undone: the agent must register again.</p>
        <ErrorBanner error={state.error} />
        <Actions>
          <Button onClick={close}>Cancel</Button>
          <Button type="submit" variant="danger" busy={state.pending}>
            Revoke agent
          </Button>
        </Actions>
      </Form>
    </Dialog>
  );
}
