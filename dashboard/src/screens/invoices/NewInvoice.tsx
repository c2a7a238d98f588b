import { useMutation } from "../../api/hooks.ts";
import { CreateInvoiceDocument } from "../../generated/graphql.ts";
import { navigate, useLocation } from "../../router.tsx";
import { useSession } from "../../session.tsx";
import { Page } from "../../ui/Page.tsx";
import { withParam } from "./form-errors.ts";
import { emptyValues, InvoiceForm, type InvoiceValues, itemsInput } from "./InvoiceForm.tsx";
import { CANNOT_WRITE, INVOICES_PATH, invoicePath } from "./invoice-cells.tsx";
import { toNumber } from "./totals.ts";
import "./invoices.css";

/** A new invoice or quote (`?type=quote` starts with a quote): created as a draft, then shown. */
export default function NewInvoice() {
  const { can } = useSession();
  const { query } = useLocation();
  const [create, state] = useMutation(CreateInvoiceDocument);

  const submit = async (values: InvoiceValues) => {
    const result = await create({
      document_type: values.document_type,
      client_id: values.client?.id ?? "",
      issue_date: values.issue_date || undefined,
      due_date: values.due_date || undefined,
      tax_rate: toNumber(values.tax_rate),
      currency: values.currency.trim() || undefined,
      notes: values.notes.trim() || undefined,
      items: itemsInput(values.items),
    });
    if (result) navigate(invoicePath(result.createInvoice.id));
  };

  return (
    <Page title="New invoice or quote">
      <InvoiceForm
        initial={emptyValues(query.get("type") === "quote" ? "quote" : "invoice")}
        editing={false}
        error={withParam(state.error)}
        pending={state.pending}
        disabled={can("invoices.write") ? undefined : CANNOT_WRITE}
        submitLabel="Create draft"
        onSubmit={submit}
        onCancel={() => navigate(INVOICES_PATH)}
      />
    </Page>
  );
}
