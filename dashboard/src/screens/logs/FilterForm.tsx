import { useState } from "react";
import { Button } from "../../ui/Button.tsx";
import { fieldError } from "../../ui/ErrorBanner.tsx";
import { SelectField, TextField } from "../../ui/Field.tsx";
import { Actions, Form } from "../../ui/Form.tsx";
import type { Filters, KeyInfo } from "./log-format.tsx";

const pad = (n: number) => String(n).padStart(2, "0");

/** An ISO time as a datetime-local value, in the browser's time zone, to the second. */
function toLocalInput(iso: string): string {
  const date = new Date(iso);
  if (!iso || Number.isNaN(date.getTime())) return "";
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
}

/** A datetime-local value (the browser's time zone) as an ISO time. */
function fromLocalInput(value: string): string {
  const date = new Date(value);
  return value && !Number.isNaN(date.getTime()) ? date.toISOString() : "";
}

const OUTCOME_OPTIONS = [
  { value: "", label: "All" },
  { value: "succeeded", label: "Succeeded (2xx–3xx)" },
  { value: "failed", label: "Failed (4xx–5xx)" },
];

/** The list's filters: key, outcome, status, route and time range, applied to the URL. */
export function FilterForm({
  filters,
  error,
  statusInvalid,
  pickKey,
  keys,
  routes,
  onApply,
  onClear,
  filtering,
}: {
  filters: Filters;
  error: unknown;
  statusInvalid: boolean;
  pickKey: boolean;
  keys: KeyInfo[] | undefined;
  routes: string[];
  onApply(filters: Filters): void;
  onClear(): void;
  filtering: boolean;
}) {
  const fromUrl = (f: Filters): Filters => ({ ...f, from: toLocalInput(f.from), to: toLocalInput(f.to) });
  const [draft, setDraft] = useState(() => fromUrl(filters));
  const [draftOf, setDraftOf] = useState(filters);
  // The URL changed (applied, a link, Back): the fields show it.
  if (draftOf !== filters) {
    setDraftOf(filters);
    setDraft(fromUrl(filters));
  }
  const set = (name: keyof Filters) => (event: { target: { value: string } }) =>
    setDraft((d) => ({ ...d, [name]: event.target.value }));
  const submit = () => onApply({ ...draft, from: fromLocalInput(draft.from), to: fromLocalInput(draft.to) });

  const keyOptions = [
    { value: "", label: "All keys" },
    ...(keys ?? []).map((key) => ({
      value: key.id,
      label: `${key.name ?? "(no name)"} · ${key.prefix}…${key.revoked_at ? " (revoked)" : ""}`,
    })),
  ];
  if (draft.key && !keyOptions.some((option) => option.value === draft.key))
    keyOptions.push({ value: draft.key, label: draft.key });
  const routesId = "logs-routes";

  return (
    <Form onSubmit={submit} aria-label="Filter requests" className="logs-filters">
      {pickKey ? (
        <SelectField
          label="Key"
          options={keyOptions}
          value={draft.key}
          onChange={set("key")}
          error={fieldError(error, "key_id")}
        />
      ) : (
        <TextField
          label="Key id"
          placeholder="key_…"
          spellCheck={false}
          autoComplete="off"
          value={draft.key}
          onChange={set("key")}
          error={fieldError(error, "key_id")}
          hint="As shown in a request's details."
        />
      )}
      <SelectField
        label="Outcome"
        options={OUTCOME_OPTIONS}
        value={OUTCOME_OPTIONS.some((option) => option.value === draft.outcome) ? draft.outcome : ""}
        onChange={set("outcome")}
        error={fieldError(error, "outcome")}
      />
      <TextField
        label="Status"
        type="number"
        inputMode="numeric"
        placeholder="e.g. 404"
        value={draft.status}
        onChange={set("status")}
        error={statusInvalid ? "The status is a whole number, e.g. 404." : fieldError(error, "status")}
      />
      <TextField
        label="Route"
        placeholder="/v1/leads/{id}"
        spellCheck={false}
        autoComplete="off"
        list={routesId}
        value={draft.route}
        onChange={set("route")}
        error={fieldError(error, "route")}
        hint="The route template, as logged."
      />
      <datalist id={routesId}>
        {routes.map((route) => (
          <option key={route} value={route} />
        ))}
      </datalist>
      <TextField
        label="From"
        type="datetime-local"
        step={1}
        value={draft.from}
        onChange={set("from")}
        error={fieldError(error, "from")}
      />
      <TextField
        label="To"
        type="datetime-local"
        step={1}
        value={draft.to}
        onChange={set("to")}
        error={fieldError(error, "to")}
        hint="Up to, not including, this time."
      />
      <Actions>
        <Button onClick={onClear} disabled={!filtering && !Object.values(draft).some(Boolean)}>
          Clear filters
        </Button>
        <Button type="submit" variant="primary">
          Apply filters
        </Button>
      </Actions>
    </Form>
  );
}
