import { useState } from "react";
import { usePaged } from "../../api/paged.ts";
import { ApiKeysDocument, RevokeApiKeyDocument } from "../../generated/graphql.ts";
import { useSession } from "../../session.tsx";
import { Button } from "../../ui/Button.tsx";
import { ConfirmDialog } from "../../ui/ConfirmDialog.tsx";
import { ErrorBanner, Notice } from "../../ui/ErrorBanner.tsx";
import { Actions } from "../../ui/Form.tsx";
import { formatDateTime } from "../../ui/format.ts";
import { Loading, Page, Panel } from "../../ui/Page.tsx";
import { SecretBox } from "../../ui/SecretBox.tsx";
import { Table } from "../../ui/Table.tsx";
import { CreateKeyDialog, RotateKeyDialog } from "./KeyDialogs.tsx";
import { buttonLabel, isOld, isRevoked, type Key, label, Scopes, Status } from "./key-cells.tsx";
import { TryKey } from "./TryKey.tsx";

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
  const list = usePaged(ApiKeysDocument, { include_revoked: includeRevoked }, (data) => data.apiKeys, {
    skip: !isOwner,
  });
  const [creating, setCreating] = useState(false);
  const [revealed, setRevealed] = useState<Revealed | null>(null);
  const [revoking, setRevoking] = useState<Key | null>(null);
  const [rotating, setRotating] = useState<Key | null>(null);
  const [notice, setNotice] = useState("");

  const keys = list.rows;
  const done = (message: string) => {
    setNotice(message);
    list.restart();
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
          <SecretBox
            label={`Secret of ${revealed.key.name ?? revealed.key.prefix}`}
            secret={revealed.secret}
          />
          <TryKey secret={revealed.secret} />
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
                onChange={(event) => setIncludeRevoked(event.target.checked)}
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
                { header: "Created", cell: (key) => formatDateTime(key.created_at) },
                { header: "Last used", cell: (key) => formatDateTime(key.last_used_at) },
                { header: "Status", cell: (key) => <Status apiKey={key} /> },
                {
                  header: "Actions",
                  cell: (key) =>
                    isRevoked(key) ? null : (
                      <div className="row-actions">
                        {/* An old key is replaced already: it can only be ended sooner. */}
                        {!isOld(key) && (
                          <Button onClick={() => setRotating(key)} aria-label={`Rotate ${buttonLabel(key)}`}>
                            Rotate
                          </Button>
                        )}
                        <Button
                          variant="danger"
                          onClick={() => setRevoking(key)}
                          aria-label={`Revoke ${buttonLabel(key)}`}
                        >
                          Revoke
                        </Button>
                      </div>
                    ),
                },
              ]}
            />
          )}
          {list.hasMore && (
            <Actions>
              <Button busy={list.loading} onClick={list.more}>
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
      <ConfirmDialog
        subject={revoking}
        title={
          revoking && isOld(revoking)
            ? `Revoke the old key ${label(revoking)} (${revoking.prefix}…)?`
            : `Revoke ${revoking ? label(revoking) : "key"}?`
        }
        label="Revoke key"
        confirm="Revoke key"
        mutation={RevokeApiKeyDocument}
        variables={(key) => ({ id: key.id })}
        onClose={() => setRevoking(null)}
        onDone={({ revokeApiKey: key }) => {
          setRevoking(null);
          if (revealed?.key.id === key.id) setRevealed(null);
          done(`Key ${label(key)} revoked: requests with it are refused from now on.`);
        }}
      >
        <p>
          Requests with the key <code>{revoking?.prefix}…</code> are refused within seconds.{" "}
          {revoking && isOld(revoking) ? "The key that replaced it goes on working. " : ""}
          This cannot be undone.
        </p>
      </ConfirmDialog>
    </Page>
  );
}
