import { useState } from "react";
import { SCOPES } from "../../../../schema/lib/scopes.ts";
import { useMutation } from "../../api/hooks.ts";
import { CreateApiKeyDocument, RotateApiKeyDocument } from "../../generated/graphql.ts";
import { Button } from "../../ui/Button.tsx";
import { Dialog } from "../../ui/Dialog.tsx";
import { ErrorBanner, fieldError } from "../../ui/ErrorBanner.tsx";
import { CheckboxGroup, SelectField, TextField } from "../../ui/Field.tsx";
import { Actions, Form } from "../../ui/Form.tsx";
import { type Key, label } from "./key-cells.tsx";

/** How long a rotated key keeps working, as rotateApiKey's grace_seconds. */
const GRACE_OPTIONS = [
  { value: "0", label: "At once" },
  { value: "3600", label: "In 1 hour" },
  { value: "86400", label: "In 24 hours" },
  { value: "604800", label: "In 7 days" },
];

const READ_SCOPES = SCOPES.filter((scope) => scope.endsWith(".read"));

/** Makes a key with a name and scopes; its secret is shown once, by the screen. */
export function CreateKeyDialog({
  open,
  onClose,
  onCreated,
}: {
  open: boolean;
  onClose(): void;
  onCreated(key: Key, secret: string): void;
}) {
  const [name, setName] = useState("");
  const [scopes, setScopes] = useState<Set<string>>(() => new Set(READ_SCOPES));
  const [create, state] = useMutation(CreateApiKeyDocument);
  const close = () => {
    state.reset();
    onClose();
  };
  const submit = async () => {
    const result = await create({
      input: { name: name.trim(), scopes: SCOPES.filter((scope) => scopes.has(scope)) },
    });
    if (!result) return;
    setName("");
    setScopes(new Set(READ_SCOPES));
    state.reset();
    onCreated(result.createApiKey.api_key, result.createApiKey.secret);
  };
  return (
    <Dialog open={open} title="Create an API key" onClose={close}>
      <Form onSubmit={submit} aria-label="Create an API key">
        <ErrorBanner error={state.error} fields={["name", "scopes"]} />
        <TextField
          label="Name"
          required
          maxLength={200}
          hint="What the key is for, e.g. “Billing sync”."
          value={name}
          error={fieldError(state.error, "name")}
          onChange={(event) => setName(event.target.value)}
        />
        <CheckboxGroup
          label="Scopes"
          hint="What the key may do. A write scope does not include reading."
          options={SCOPES.map((scope) => ({ value: scope, label: scope }))}
          value={scopes}
          onChange={setScopes}
          error={fieldError(state.error, "scopes")}
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

/** Replaces a key with a new one, the old one working on for the grace period chosen. */
export function RotateKeyDialog({
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
    onRotated({
      key: result.rotateApiKey.api_key,
      secret: result.rotateApiKey.secret,
      previous: result.rotateApiKey.previous,
    });
  };
  return (
    <Dialog open={apiKey !== null} title={`Rotate ${apiKey ? label(apiKey) : "key"}`} onClose={close}>
      <Form onSubmit={submit} aria-label="Rotate key">
        <p>A new key with the same name and scopes replaces this one. Update every program that uses it.</p>
        <ErrorBanner error={state.error} fields={["grace_seconds"]} />
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
