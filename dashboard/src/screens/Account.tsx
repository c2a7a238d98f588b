import { useState } from "react";
import { accounts } from "../api/accounts.ts";
import { useSession } from "../session.tsx";
import { Button } from "../ui/Button.tsx";
import { ErrorBanner, fieldError, Notice } from "../ui/ErrorBanner.tsx";
import { TextField } from "../ui/Field.tsx";
import { Actions, Form } from "../ui/Form.tsx";
import { formatDate, formatDateTime } from "../ui/format.ts";
import { Page, Panel } from "../ui/Page.tsx";
import { Table } from "../ui/Table.tsx";

export default function Account() {
  const session = useSession();
  const user = session.body?.user;
  return (
    <Page title="Account">
      <Panel title="You">
        <dl className="facts">
          <div>
            <dt>E-mail</dt>
            <dd>{user?.email}</dd>
          </div>
          <div>
            <dt>Member since</dt>
            <dd>{formatDate(user?.created_at)}</dd>
          </div>
          <div>
            <dt>Session ends</dt>
            <dd>{formatDateTime(session.body?.expires_at)}</dd>
          </div>
        </dl>
      </Panel>
      <PasswordForm />
      <Panel title="Your workspaces">
        <Table
          caption="Your workspaces"
          rows={session.body?.workspaces ?? []}
          rowKey={(w) => w.id}
          columns={[
            { header: "Name", cell: (w) => w.name },
            { header: "Plan", cell: (w) => w.plan },
            { header: "Role", cell: (w) => w.role },
            {
              header: "",
              cell: (w) =>
                w.id === session.workspaceId ? (
                  <span className="tag tag-ok">Current</span>
                ) : (
                  <Button
                    variant="link"
                    onClick={() => session.switchWorkspace(w.id)}
                    aria-label={`Switch to ${w.name}`}
                  >
                    Switch
                  </Button>
                ),
            },
          ]}
        />
      </Panel>
    </Page>
  );
}

function PasswordForm() {
  const [current, setCurrent] = useState("");
  const [next, setNext] = useState("");
  const [confirm, setConfirm] = useState("");
  const [error, setError] = useState<unknown>();
  const [mismatch, setMismatch] = useState(false);
  const [done, setDone] = useState(false);
  const [busy, setBusy] = useState(false);

  const submit = async () => {
    setDone(false);
    setError(undefined);
    if (next !== confirm) return setMismatch(true);
    setMismatch(false);
    setBusy(true);
    try {
      await accounts.changePassword({ current_password: current, new_password: next });
      setCurrent("");
      setNext("");
      setConfirm("");
      setDone(true);
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };

  return (
    <Panel title="Change password">
      <Notice>{done && "Password changed. Your other sessions were signed out."}</Notice>
      <ErrorBanner error={error} fields={["current_password", "new_password"]} />
      <Form onSubmit={submit} aria-label="Change password">
        <TextField
          label="Current password"
          type="password"
          autoComplete="current-password"
          required
          maxLength={1024}
          value={current}
          error={fieldError(error, "current_password")}
          onChange={(e) => setCurrent(e.target.value)}
        />
        <TextField
          label="New password"
          type="password"
          autoComplete="new-password"
          required
          minLength={12}
          maxLength={1024}
          hint="At least 12 characters."
          value={next}
          error={fieldError(error, "new_password")}
          onChange={(e) => setNext(e.target.value)}
        />
        <TextField
          label="Repeat the new password"
          type="password"
          autoComplete="new-password"
          required
          maxLength={1024}
          value={confirm}
          error={mismatch ? "The two new passwords differ." : undefined}
          onChange={(e) => setConfirm(e.target.value)}
        />
        <Actions>
          <Button type="submit" variant="primary" busy={busy}>
            Change password
          </Button>
        </Actions>
      </Form>
    </Panel>
  );
}
