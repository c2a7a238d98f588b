import { useMutation } from "../../api/hooks.ts";
import {
  CreateLeadDocument,
  type CreateLeadMutationVariables,
  type LeadStage,
  type Priority,
  UpdateLeadDocument,
} from "../../generated/graphql.ts";
import { Button } from "../../ui/Button.tsx";
import { Dialog, useDialogDraft } from "../../ui/Dialog.tsx";
import { ErrorBanner, fieldError } from "../../ui/ErrorBanner.tsx";
import { SelectField, TextAreaField, TextField } from "../../ui/Field.tsx";
import { Actions, Form } from "../../ui/Form.tsx";
import { fromLocalInput, toLocalInput } from "../../ui/format.ts";
import { MONEY_PATTERN, parseMoneyInput } from "../../ui/money.ts";
import { type Lead, PRIORITY_OPTIONS, STAGE_OPTIONS } from "./lead-shared.tsx";

/** What the form holds: every field as the text of its input. */
interface Draft {
  first_name: string;
  last_name: string;
  company_name: string;
  email: string;
  phone: string;
  source: string;
  stage: LeadStage;
  priority: Priority;
  estimated_value: string;
  currency: string;
  expected_close_date: string;
  next_follow_up_at: string;
  last_contacted_at: string;
  notes: string;
}

type Field = keyof Draft;
const FIELDS = [
  "first_name",
  "last_name",
  "company_name",
  "email",
  "phone",
  "source",
  "stage",
  "priority",
  "estimated_value",
  "currency",
  "expected_close_date",
  "next_follow_up_at",
  "last_contacted_at",
  "notes",
] as const satisfies readonly Field[];

function draftOf(lead: Lead | null): Draft {
  return {
    first_name: lead?.first_name ?? "",
    last_name: lead?.last_name ?? "",
    company_name: lead?.company_name ?? "",
    email: lead?.email ?? "",
    phone: lead?.phone ?? "",
    source: lead?.source ?? "",
    stage: lead?.stage ?? "new",
    priority: lead?.priority ?? "medium",
    estimated_value: lead?.estimated_value == null ? "" : String(lead.estimated_value),
    currency: lead?.currency ?? "USD",
    expected_close_date: lead?.expected_close_date ?? "",
    next_follow_up_at: toLocalInput(lead?.next_follow_up_at),
    last_contacted_at: toLocalInput(lead?.last_contacted_at),
    notes: lead?.notes ?? "",
  };
}

const text = (value: string) => (value.trim() === "" ? null : value.trim());

/** A field's value as the API takes it: empty text is null (which clears it on an update). */
function fieldValue(draft: Draft, field: Field): unknown {
  switch (field) {
    case "first_name":
      return draft.first_name.trim();
    case "stage":
    case "priority":
      return draft[field];
    case "estimated_value":
      return parseMoneyInput(draft.estimated_value);
    case "next_follow_up_at":
    case "last_contacted_at":
      return fromLocalInput(draft[field]);
    case "expected_close_date":
      return draft.expected_close_date || null;
    case "currency":
      return draft.currency.trim();
    default:
      return text(draft[field]);
  }
}

/**
 * Creates a lead, or edits one (`lead` set): an edit sends only the fields changed, so what the
 * form cannot show exactly (the seconds of a follow-up time) is left as it is.
 */
export function LeadFormDialog({
  open,
  lead,
  onClose,
  onSaved,
}: {
  open: boolean;
  lead: Lead | null;
  onClose(): void;
  onSaved(lead: Lead): void;
}) {
  // Opened again, or for another lead: the form starts from what the lead holds now.
  const [draft, setDraft] = useDialogDraft(open, lead, () => draftOf(lead));
  const [create, creating] = useMutation(CreateLeadDocument);
  const [update, updating] = useMutation(UpdateLeadDocument);
  const state = lead ? updating : creating;

  const close = () => {
    creating.reset();
    updating.reset();
    onClose();
  };
  const submit = async () => {
    if (lead) {
      const initial = draftOf(lead);
      const changed = FIELDS.filter((field) => draft[field] !== initial[field]);
      if (changed.length === 0) return close();
      const result = await update({
        id: lead.id,
        ...Object.fromEntries(changed.map((field) => [field, fieldValue(draft, field)])),
      });
      if (result) onSaved(result.updateLead);
      return;
    }
    const variables = Object.fromEntries(
      FIELDS.map((field) => [field, fieldValue(draft, field)]).filter(
        ([, value]) => value !== null && value !== "",
      ),
    ) as CreateLeadMutationVariables;
    const result = await create(variables);
    if (result) onSaved(result.createLead);
  };

  const bind = (field: Field) => ({
    value: draft[field],
    error: fieldError(state.error, field),
    onChange: (event: { target: { value: string } }) =>
      setDraft((current) => ({ ...current, [field]: event.target.value })),
  });
  const title = lead ? `Edit ${lead.full_name}` : "New lead";

  return (
    <Dialog open={open} title={title} onClose={close}>
      <Form onSubmit={submit} aria-label={title}>
        <ErrorBanner error={state.error} fields={FIELDS} />
        <div className="crm-form-grid">
          <TextField label="First name" required maxLength={200} autoComplete="off" {...bind("first_name")} />
          <TextField label="Last name (optional)" maxLength={200} autoComplete="off" {...bind("last_name")} />
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
            label="Source (optional)"
            maxLength={200}
            placeholder="e.g. website"
            autoComplete="off"
            {...bind("source")}
          />
          <SelectField label="Stage" options={STAGE_OPTIONS} {...bind("stage")} />
          <SelectField label="Priority" options={PRIORITY_OPTIONS} {...bind("priority")} />
          <TextField
            label="Estimated value (optional)"
            inputMode="decimal"
            pattern={MONEY_PATTERN}
            title="An amount such as 1250 or 1250.50: at most 2 decimals."
            placeholder="1250.00"
            autoComplete="off"
            {...bind("estimated_value")}
          />
          <TextField
            label="Currency"
            required
            maxLength={3}
            autoComplete="off"
            spellCheck={false}
            hint="ISO 4217 code, e.g. USD, EUR."
            {...bind("currency")}
            onChange={(event) =>
              setDraft((current) => ({ ...current, currency: event.target.value.toUpperCase() }))
            }
          />
          <TextField label="Expected close (optional)" type="date" {...bind("expected_close_date")} />
          <TextField label="Next follow-up (optional)" type="datetime-local" {...bind("next_follow_up_at")} />
          <TextField label="Last contacted (optional)" type="datetime-local" {...bind("last_contacted_at")} />
        </div>
        <TextAreaField label="Notes (optional)" rows={3} maxLength={10000} {...bind("notes")} />
        <Actions>
          <Button onClick={close}>Cancel</Button>
          <Button type="submit" variant="primary" busy={state.pending}>
            {lead ? "Save lead" : "Create lead"}
          </Button>
        </Actions>
      </Form>
    </Dialog>
  );
}
