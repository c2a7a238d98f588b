import { useState } from "react";
import { SCOPES } from "../../../schema/lib/scopes.ts";
import { useMutation, useQuery } from "../api/hooks.ts";
import { ApiKeysDocument, CreateApiKeyDocument, RevokeApiKeyDocument, RotateApiKeyDocument, type ApiKeyFieldsFragment } from "../generated/graphql.ts";
import { useSession } from "../session.tsx";
import { Button } from "../ui/Button.tsx";
import { Dialog } from "../ui/Dialog.tsx";
import { ErrorBanner, fieldError, Notice } from "../ui/ErrorBanner.tsx";
import { CheckboxGroup, SelectField, TextField } from "../ui/Field.tsx";
import { Actions, Form } from "../ui/Form.tsx";
import { formatDateTime } from "../ui/format.ts";
import { Loading, Page, Panel } from "../ui/Page.tsx";
import { SecretBox } from "../ui/SecretBox.tsx";
import { Table } from "../ui/Table.tsx";

type Key = ApiKeyFieldsFragment;

/** How long a rotated key keeps working, as rotateApiKey's grace_seconds. */
const GRACE_OPTIONS = [
  { value: "0", label: "At once" },
  { value: "3600", label: "In 1 hour" },
  { value: "86400", label: "In 24 hours" },
  { value: "604800", label: "In 7 days" },
];

const ONLY_OWNERS = "Only owners of the workspace can create, rotate and revoke API keys.";

/** A key shown once after it was made: by createApiKey or rotateApiKey. */
interface Revealed {
  title: string;
  key: Key;
  secret: string;
  previous?: Key;
}

export default function Keys() {
  const { isOwner } = useSession();
  const [includeRevoked, setIncludeRevoked] = useState(false);
  const [cursor, setCursor] = useState<string | null>(null);
  const [earlier, setEarlier] = useState<Key[]>([]);
  const list = useQuery(ApiKeysDocument, { include_revoked: includeRevoked, cursor }, { skip: !isOwner });
  const [creating, setCreating] = useState(false);
  const [revealed, setRevealed] = useState<Revealed | null>(null);
  const [revoking, setRevoking] = useState<Key | null>(null);
  const [rotating, setRotating] = useState<Key | null>(null);
  const [notice, setNotice] = useState("");

  const keys = [...earlier, ...(list.data?.apiKeys.data ?? [])];
  const restart = () => {
    setEarlier([]);
    setCursor(null);
    list.reload();
  };
  const done = (message: string) => {
    setNotice(message);
    restart();
  };

  return (
    <Page
      title="API keys"
      actions={
        <Button variant="primary" disabled={!isOwner} onClick={() => setCreating(true)}>
          Create key
        </Button>
      }
    >
      {!isOwner && (
        <div className="banner banner-info" role="note">
          {ONLY_OWNERS} Members use the dashboard with their own sign-in.
        </div>
      )}
      <Notice>{notice}</Notice>
      {revealed && (
        <Panel title={revealed.title} actions={<Button onClick={() => setRevealed(null)}>Done</Button>}>
          <SecretBox label={`Secret of ${revealed.key.name ?? revealed.key.prefix}`} secret={revealed.secret} />
          {revealed.previous && (
            <p>
              The old key <code>{revealed.previous.prefix}…</code>{" "}
              {revealed.previous.revoked_at && new Date(revealed.previous.revoked_at).getTime() > Date.now()
                ? `keeps working until ${formatDateTime(revealed.previous.revoked_at)}.`
                : "was revoked."}
            </p>
          )}
        </Panel>
      )}
      {isOwner && (
        <Panel
          title="Keys"
          actions={
            <label className="checkbox">
              <input
                type="checkbox"
                checked={includeRevoked}
                onChange={(event) => {
                  setIncludeRevoked(event.target.checked);
                  setEarlier([]);
                  setCursor(null);
                }}
              />
              <span>Show revoked keys</span>
            </label>
          }
        >
          <ErrorBanner error={list.error} />
          {list.loading && keys.length === 0 && <Loading />}
          {(!list.loading || keys.length > 0) && (
            <Table
              caption="API keys"
              rows={keys}
              rowKey={(key) => key.id}
              empty="No keys yet. Create one to call the API."
              columns={[
                { header: "Name", cell: (key) => key.name ?? <span className="muted">(no name)</span> },
                { header: "Prefix", cell: (key) => <code>{key.prefix}…</code>, nowrap: true },
                { header: "Scopes", cell: (key) => <Scopes scopes={key.scopes} /> },
                { header: "Created", cell: (key) => formatDateTime(key.created_at), nowrap: true },
                { header: "Last used", cell: (key) => formatDateTime(key.last_used_at), nowrap: true },
                { header: "Status", cell: (key) => <Status apiKey={key} />, nowrap: true },
                {
                  header: "Actions",
                  cell: (key) =>
                    isRevoked(key) ? null : (
                      <div className="row-actions">
                        <Button onClick={() => setRotating(key)} aria-label={`Rotate ${label(key)}`}>
                          Rotate
                        </Button>
                        <Button variant="danger" onClick={() => setRevoking(key)} aria-label={`Revoke ${label(key)}`}>
                          Revoke
                        </Button>
                      </div>
                    ),
                },
              ]}
            />
          )}
          {list.data?.apiKeys.has_more && (
            <Actions>
              <Button
                busy={list.loading}
                onClick={() => {
                  setEarlier(keys);
                  setCursor(list.data?.apiKeys.next_cursor ?? null);
                }}
              >
                Show more
              </Button>
            </Actions>
          )}
        </Panel>
      )}
      <CreateKeyDialog
        open={creating}
        onClose={() => setCreating(false)}
        onCreated={(key, secret) => {
          setCreating(false);
          setRevealed({ title: "Your new key", key, secret });
          done(`Key ${label(key)} created.`);
        }}
      />
      <RotateKeyDialog
        apiKey={rotating}
        onClose={() => setRotating(null)}
        onRotated={(result) => {
          setRotating(null);
          setRevealed({ title: "Your rotated key", ...result });
          done(`Key ${label(result.key)} rotated.`);
        }}
      />
      <RevokeKeyDialog
        apiKey={revoking}
        onClose={() => setRevoking(null)}
        onRevoked={(key) => {
          setRevoking(null);
          if (revealed?.key.id === key.id) setRevealed(null);
          done(`Key ${label(key)} revoked: requests with it are refused from now on.`);
        }}
      />
    </Page>
  );
}

const label = (key: Key) => (key.name ? `“${key.name}”` : `${key.prefix}…`);

const isRevoked = (key: Key) => key.revoked_at !== null && new Date(key.revoked_at).getTime() <= Date.now();

function Status({ apiKey }: { apiKey: Key }) {
  if (apiKey.revoked_at === null) return <span className="tag tag-ok">Active</span>;
  if (isRevoked(apiKey)) return <span className="tag tag-bad">Revoked {formatDateTime(apiKey.revoked_at)}</span>;
  return <span className="tag tag-warn">Ends {formatDateTime(apiKey.revoked_at)}</span>;
}

function Scopes({ scopes }: { scopes: readonly string[] }) {
  if (SCOPES.every((scope) => scopes.includes(scope))) return <span className="tag">every scope</span>;
  return (
    <>
      {scopes.map((scope) => (
        <span key={scope} className="tag">
          {scope}
        </span>
      ))}
    </>
  );
}

const READ_SCOPES = SCOPES.filter((scope) => scope.endsWith(".read"));

function CreateKeyDialog({ open, onClose, onCreated }: { open: boolean; onClose(): void; onCreated(key: Key, secret: string): void }) {
  const [name, setName] = useState("");
  const [scopes, setScopes] = useState<Set<string>>(() => new Set(READ_SCOPES));
  const [create, state] = useMutation(CreateApiKeyDocument);
  const close = () => {
    state.reset();
    onClose();
  };
  const submit = async () => {
    const result = await create({ input: { name: name.trim(), scopes: SCOPES.filter((scope) => scopes.has(scope)) } });
    if (!result) return;
    setName("");
    setScopes(new Set(READ_SCOPES));
    state.reset();
    onCreated(result.createApiKey.api_key, result.createApiKey.secret);
  };
  return (
    <Dialog open={open} title="Create an API key" onClose={close}>
      <Form onSubmit={submit} aria-label="Create an API key">
        <ErrorBanner error={state.error} />
        <TextField
          label="Name"
          required
          maxLength={200}
          hint="What the key is for, e.g. “Billing sync”."
          value={name}
          error={fieldError(state.error, "name") ?? fieldError(state.error, "input.name")}
          onChange={(event) => setName(event.target.value)}
        />
        <CheckboxGroup
          label="Scopes"
          hint="What the key may do. A write scope does not include reading."
          options={SCOPES.map((scope) => ({ value: scope, label: scope }))}
          value={scopes}
          onChange={setScopes}
          error={fieldError(state.error, "scopes") ?? fieldError(state.error, "input.scopes")}
        />
        <Actions>
          <Button onClick={() => setScopes(new Set(READ_SCOPES))}>Read only</Button>
          <Button onClick={() => setScopes(new Set(SCOPES))}>Every scope</Button>
          <Button onClick={close}>Cancel</Button>
          <Button type="submit" variant="primary" busy={state.pending} disabled={scopes.size === 0}>
            Create key
          </Button>
        </Actions>
      </Form>
    </Dialog>
  );
}

function RotateKeyDialog({
  apiKey,
  onClose,
  onRotated,
}: {
  apiKey: Key | null;
  onClose(): void;
  onRotated(result: { key: Key; secret: string; previous: Key }): void;
}) {
  const [grace, setGrace] = useState("0");
  const [rotate, state] = useMutation(RotateApiKeyDocument);
  const close = () => {
    state.reset();
    setGrace("0");
    onClose();
  };
  const submit = async () => {
    if (!apiKey) return;
    const result = await rotate({ id: apiKey.id, grace_seconds: Number(grace) });
    if (!result) return;
    state.reset();
    setGrace("0");
    onRotated({ key: result.rotateApiKey.api_key, secret: result.rotateApiKey.secret, previous: result.rotateApiKey.previous });
  };
  return (
    <Dialog open={apiKey !== null} title={`Rotate ${apiKey ? label(apiKey) : "key"}`} onClose={close}>
      <Form onSubmit={submit} aria-label="Rotate key">
        <p>A new key with the same name and scopes replaces this one. Update every program that uses it.</p>
        <ErrorBanner error={state.error} />
        <SelectField
          label="Revoke the old key"
          options={GRACE_OPTIONS}
          value={grace}
          error={fieldError(state.error, "grace_seconds")}
          onChange={(event) => setGrace(event.target.value)}
          hint="A grace period lets programs switch to the new key before the old one stops working."
        />
        <Actions>
          <Button onClick={close}>Cancel</Button>
          <Button type="submit" variant="primary" busy={state.pending}>
            Rotate key
          </Button>
        </Actions>
      </Form>
    </Dialog>
  );
}

function RevokeKeyDialog({ apiKey, onClose, onRevoked }: { apiKey: Key | null; onClose(): void; onRevoked(key: Key): void }) {
  const [revoke, state] = useMutation(RevokeApiKeyDocument);
  const close = () => {
    state.reset();
    onClose();
  };
  const submit = async () => {
    if (!apiKey) return;
    const result = await revoke({ id: apiKey.id });
    if (!result) return;
    state.reset();
    onRevoked(result.revokeApiKey);
  };
  return (
    <Dialog open={apiKey !== null} title={`Revoke ${apiKey ? label(apiKey) : "key"}?`} onClose={close}>
      <Form onSubmit={submit} aria-label="Revoke key">
        <p>Requests with this key are refused within seconds. This cannot be undone.</p>
        <ErrorBanner error={state.error} />
        <Actions>
          <Button onClick={close}>Cancel</Button>
          <Button type="submit" variant="danger" busy={state.pending}>
            Revoke key
          </Button>
        </Actions>
      </Form>
    </Dialog>
  );
}
