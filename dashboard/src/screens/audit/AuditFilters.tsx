import { useState } from "react";
import { Button } from "../../ui/Button.tsx";
import { fieldError } from "../../ui/ErrorBanner.tsx";
import { TextField } from "../../ui/Field.tsx";
import { Actions, Form } from "../../ui/Form.tsx";
import { fromLocalInput, toLocalInput } from "../../ui/format.ts";

/** The audit log's filters, as the URL query holds them (times in ISO 8601). */
export interface AuditFilterValues {
  action: string;
  actor: string;
  target: string;
  from: string;
  to: string;
}

export const NO_FILTERS: AuditFilterValues = { action: "", actor: "", target: "", from: "", to: "" };

/** Action, actor, target and time range, applied to the URL on submit (Enter in any field). */
export function AuditFilters({
  filters,
  actions,
  error,
  onApply,
}: {
  filters: AuditFilterValues;
  /** Actions to suggest (those on screen). */
  actions: string[];
  error: unknown;
  onApply(filters: AuditFilterValues): void;
}) {
  const fromUrl = (f: AuditFilterValues) => ({ ...f, from: toLocalInput(f.from), to: toLocalInput(f.to) });
  const [draft, setDraft] = useState(() => fromUrl(filters));
  const [draftOf, setDraftOf] = useState(filters);
  // The URL changed (applied, a link, Back): the fields show it.
  if (draftOf !== filters) {
    setDraftOf(filters);
    setDraft(fromUrl(filters));
  }
  const set = (name: keyof AuditFilterValues) => (event: { target: { value: string } }) =>
    setDraft((d) => ({ ...d, [name]: event.target.value }));
  const submit = () =>
    onApply({
      action: draft.action.trim(),
      actor: draft.actor.trim(),
      target: draft.target.trim(),
      from: fromLocalInput(draft.from) ?? "",
      to: fromLocalInput(draft.to) ?? "",
    });
  const filtering = Object.values(filters).some(Boolean);

  return (
    <Form onSubmit={submit} aria-label="Filter the audit log" className="audit-filters">
      <TextField
        label="Action"
        placeholder="api_key.revoked"
        spellCheck={false}
        autoComplete="off"
        list="audit-actions"
        value={draft.action}
        onChange={set("action")}
        error={fieldError(error, "action")}
      />
      <datalist id="audit-actions">
        {actions.map((action) => (
          <option key={action} value={action} />
        ))}
      </datalist>
      <TextField
        label="Actor id"
        placeholder="usr_…, key_…, areg_…"
        spellCheck={false}
        autoComplete="off"
        value={draft.actor}
        onChange={set("actor")}
        error={fieldError(error, "actor_id")}
      />
      <TextField
        label="Target id"
        placeholder="key_…, usr_…, we_…"
        spellCheck={false}
        autoComplete="off"
        value={draft.target}
        onChange={set("target")}
        error={fieldError(error, "target_id")}
      />
      <TextField
        label="From"
        type="datetime-local"
        value={draft.from}
        onChange={set("from")}
        error={fieldError(error, "from")}
      />
      <TextField
        label="To"
        type="datetime-local"
        value={draft.to}
        onChange={set("to")}
        error={fieldError(error, "to")}
        hint="Up to, not including, this time."
      />
      <Actions>
        <Button
          onClick={() => onApply(NO_FILTERS)}
          disabled={!filtering && !Object.values(draft).some(Boolean)}
        >
          Clear filters
        </Button>
        <Button type="submit" variant="primary">
          Apply filters
        </Button>
      </Actions>
    </Form>
  );
}
