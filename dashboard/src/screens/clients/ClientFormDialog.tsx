import { useMutation } from "../../api/hooks.ts";
import { type AddressInput, CreateClientDocument, UpdateClientDocument } from "../../generated/graphql.ts";
import { Button } from "../../ui/Button.tsx";
import { Dialog, useDialogDraft } from "../../ui/Dialog.tsx";
import { ErrorBanner, fieldError } from "../../ui/ErrorBanner.tsx";
import { TextAreaField, TextField } from "../../ui/Field.tsx";
import { Actions, Form } from "../../ui/Form.tsx";
import { ADDRESS_PARTS, type AddressPart, type Client } from "./client-shared.ts";

const FIELDS = ["name", "email", "phone", "company_name", "tax_id", "currency", "notes"] as const;
type Field = (typeof FIELDS)[number];
type Draft = Record<Field, string> & { address: Record<AddressPart, string> };

function draftOf(client: Client | null): Draft {
  return {
    name: client?.name ?? "",
    email: client?.email ?? "",
    phone: client?.phone ?? "",
    company_name: client?.company_name ?? "",
    tax_id: client?.tax_id ?? "",
    currency: client?.currency ?? "USD",
    notes: client?.notes ?? "",
    address: Object.fromEntries(ADDRESS_PARTS.map((part) => [part, client?.address[part] ?? ""])) as Record<
      AddressPart,
      string
    >,
  };
}

const text = (value: string) => (value.trim() === "" ? null : value.trim());

const ADDRESS_LABEL: Record<AddressPart, string> = {
  line1: "Street and number",
  line2: "Apartment, suite, building",
  city: "City",
  region: "Region or state",
  postal_code: "Postal code",
  country: "Country",
};

/** Every param the form shows under a field: its own errors are not repeated in the banner. */
const PARAMS = [...FIELDS, "address", ...ADDRESS_PARTS.map((part) => `address.${part}`)];

/**
 * Creates a client, or edits one (`client` set): an edit sends only what changed (the address as
 * a whole when any of its parts did), so a field left alone is left as it is.
 */
export function ClientFormDialog({
  open,
  client,
  onClose,
  onSaved,
}: {
  open: boolean;
  client: Client | null;
  onClose(): void;
  onSaved(client: Client): void;
}) {
  const [draft, setDraft] = useDialogDraft(open, client, () => draftOf(client));
  const [create, creating] = useMutation(CreateClientDocument);
  const [update, updating] = useMutation(UpdateClientDocument);
  const state = client ? updating : creating;

  const close = () => {
    creating.reset();
    updating.reset();
    onClose();
  };
  const addressOf = (): AddressInput =>
    Object.fromEntries(ADDRESS_PARTS.map((part) => [part, text(draft.address[part])]));
  const fieldValue = (field: Field) =>
    field === "name" || field === "currency" ? draft[field].trim() : text(draft[field]);

  const submit = async () => {
    if (client) {
      const initial = draftOf(client);
      const changed = FIELDS.filter((field) => draft[field] !== initial[field]);
      const addressChanged = ADDRESS_PARTS.some((part) => draft.address[part] !== initial.address[part]);
      if (changed.length === 0 && !addressChanged) return close();
      const result = await update({
        id: client.id,
        ...Object.fromEntries(changed.map((field) => [field, fieldValue(field)])),
        ...(addressChanged && { address: addressOf() }),
      });
      if (result) onSaved(result.updateClient);
      return;
    }
    const address = addressOf();
    const result = await create({
      name: draft.name.trim(),
      email: text(draft.email),
      phone: text(draft.phone),
      company_name: text(draft.company_name),
      tax_id: text(draft.tax_id),
      currency: draft.currency.trim() || null,
      notes: text(draft.notes),
      ...(Object.values(address).some(Boolean) && { address }),
    });
    if (result) onSaved(result.createClient);
  };

  const bind = (field: Field) => ({
    value: draft[field],
    error: fieldError(state.error, field),
    onChange: (event: { target: { value: string } }) =>
      setDraft((current) => ({ ...current, [field]: event.target.value })),
  });
  const bindAddress = (part: AddressPart) => ({
    label: `${ADDRESS_LABEL[part]} (optional)`,
    value: draft.address[part],
    error: fieldError(state.error, `address.${part}`),
    autoComplete: "off",
    maxLength: part === "postal_code" ? 32 : 200,
    onChange: (event: { target: { value: string } }) =>
      setDraft((current) => ({ ...current, address: { ...current.address, [part]: event.target.value } })),
  });
  const title = client ? `Edit ${client.name}` : "New client";

  return (
    <Dialog open={open} title={title} onClose={close}>
      <Form onSubmit={submit} aria-label={title}>
        <ErrorBanner error={state.error} fields={PARAMS} />
        <div className="crm-form-grid">
          <TextField label="Name" required maxLength={200} autoComplete="off" {...bind("name")} />
          <TextField
            label="Company (optional)"
            maxLength={200}
            autoComplete="off"
            {...bind("company_name")}
          />
          <TextField
            label="E-mail (optional)"
            type="email"
            maxLength={320}
            autoComplete="off"
            spellCheck={false}
            {...bind("email")}
          />
          <TextField
            label="Phone (optional)"
            type="tel"
            maxLength={64}
            autoComplete="off"
            {...bind("phone")}
          />
          <TextField
            label="Tax or VAT number (optional)"
            maxLength={64}
            autoComplete="off"
            {...bind("tax_id")}
          />
          <TextField
            label="Currency"
            required
            maxLength={3}
            autoComplete="off"
            spellCheck={false}
            hint="ISO 4217 code of new invoices, e.g. USD."
            {...bind("currency")}
            onChange={(event) =>
              setDraft((current) => ({ ...current, currency: event.target.value.toUpperCase() }))
            }
          />
        </div>
        <fieldset className="field crm-address">
          <legend>Address</legend>
          <ErrorBanner error={fieldError(state.error, "address") ? state.error : undefined} />
          <div className="crm-form-grid">
            {ADDRESS_PARTS.map((part) => (
              <TextField key={part} {...bindAddress(part)} />
            ))}
          </div>
        </fieldset>
        <TextAreaField label="Notes (optional)" rows={3} maxLength={10000} {...bind("notes")} />
        <Actions>
          <Button onClick={close}>Cancel</Button>
          <Button type="submit" variant="primary" busy={state.pending}>
            {client ? "Save client" : "Create client"}
          </Button>
        </Actions>
      </Form>
    </Dialog>
  );
}
