import { useState } from "react";
import { ALL_EVENTS, EVENT_TYPES } from "../../../../schema/lib/event-types.ts";
import { useMutation } from "../../api/hooks.ts";
import { CreateWebhookEndpointDocument } from "../../generated/graphql.ts";
import { Button } from "../../ui/Button.tsx";
import { Dialog } from "../../ui/Dialog.tsx";
import { ErrorBanner, fieldError } from "../../ui/ErrorBanner.tsx";
import { CheckboxGroup, TextField } from "../../ui/Field.tsx";
import { Actions, Form } from "../../ui/Form.tsx";

/** Adds an endpoint: its URL and events; the signing secret is shown once, by the screen. */
export function CreateEndpointDialog({
  open,
  onClose,
  onCreated,
}: {
  open: boolean;
  onClose(): void;
  onCreated(url: string, secret: string): void;
}) {
  const [url, setUrl] = useState("");
  const [description, setDescription] = useState("");
  const [everything, setEverything] = useState(true);
  const [types, setTypes] = useState<Set<string>>(() => new Set());
  const [create, state] = useMutation(CreateWebhookEndpointDocument);
  const clear = () => {
    setUrl("");
    setDescription("");
    setEverything(true);
    setTypes(new Set());
    state.reset();
  };
  const close = () => {
    clear();
    onClose();
  };
  const submit = async () => {
    const events = everything ? [ALL_EVENTS] : EVENT_TYPES.filter((type) => types.has(type));
    const result = await create({ url: url.trim(), events, description: description.trim() || null });
    if (!result) return;
    clear();
    onCreated(result.createWebhookEndpoint.url, result.createWebhookEndpoint.secret);
  };
  const eventsError = fieldError(state.error, "events");
  return (
    <Dialog open={open} title="Add a webhook endpoint" onClose={close}>
      <Form onSubmit={submit} aria-label="Add a webhook endpoint">
        <ErrorBanner error={state.error} fields={["url", "description", "events"]} />
        <TextField
          label="URL"
          type="url"
          required
          maxLength={2048}
          inputMode="url"
          spellCheck={false}
          placeholder="https://hooks.example.com/kontor"
          hint="Where Kontor POSTs the events: http or https (https to a public address in production)."
          value={url}
          error={fieldError(state.error, "url")}
          onChange={(event) => setUrl(event.target.value)}
        />
        <TextField
          label="Description (optional)"
          maxLength={500}
          hint="For people: what receives the events."
          value={description}
          error={fieldError(state.error, "description")}
          onChange={(event) => setDescription(event.target.value)}
        />
        <label className="checkbox">
          <input
            type="checkbox"
            checked={everything}
            onChange={(event) => setEverything(event.target.checked)}
          />
          <span>Every event, including types added later</span>
        </label>
        <CheckboxGroup
          label="Events"
          hint={
            everything
              ? "Every event is sent. Clear the box above to choose."
              : "The event types to send to this endpoint."
          }
          options={EVENT_TYPES.map((type) => ({ value: type, label: type }))}
          value={everything ? new Set() : types}
          disabled={everything}
          onChange={setTypes}
          error={eventsError}
        />
        <Actions>
          <Button onClick={close}>Cancel</Button>
          <Button type="submit" variant="primary" busy={state.pending}>
            Add endpoint
          </Button>
        </Actions>
      </Form>
    </Dialog>
  );
}
