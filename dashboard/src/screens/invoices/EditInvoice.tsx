import { useMutation, useQuery } from "../../api/hooks.ts";
import { InvoiceDocument, UpdateInvoiceDocument } from "../../generated/graphql.ts";
import { Link, navigate, useLocation } from "../../router.tsx";
import { routeParam } from "../../routes.ts";
import { useSession } from "../../session.tsx";
import { ErrorBanner } from "../../ui/ErrorBanner.tsx";
import { Loading, Page } from "../../ui/Page.tsx";
import { withParam } from "./form-errors.ts";
import { InvoiceForm, type InvoiceValues, itemsInput } from "./InvoiceForm.tsx";
import {
  CANNOT_WRITE,
  documentName,
  INVOICES_PATH,
  type InvoiceDetail,
  invoicePath,
  STATUS_TEXT,
} from "./invoice-cells.tsx";
import { newLine } from "./LineItems.tsx";
import { fieldText, toNumber } from "./totals.ts";
import "./invoices.css";

const PATTERN = `${INVOICES_PATH}/:id/edit`;

/** The form filled with a draft as the API holds it. */
const valuesOf = (doc: InvoiceDetail): InvoiceValues => ({
  document_type: doc.document_type,
  client: doc.client ?? { id: doc.client_id, name: doc.client_id, currency: doc.currency },
  issue_date: doc.issue_date,
  due_date: doc.due_date ?? "",
  tax_rate: fieldText(doc.tax_rate),
  currency: doc.currency,
  notes: doc.notes ?? "",
  items: doc.items.map((item) =>
    newLine({
      description: item.description,
      quantity: fieldText(item.quantity),
      unit_price: fieldText(item.unit_price),
    }),
  ),
});

/** A draft invoice or quote edited in the form it was created with; every field is sent again. */
export default function EditInvoice() {
  const { can } = useSession();
  const { path } = useLocation();
  const id = routeParam(PATTERN, path);
  const detail = useQuery(InvoiceDocument, { id });
  const [update, state] = useMutation(UpdateInvoiceDocument);
  const doc = detail.data?.invoice;

  const submit = async (values: InvoiceValues) => {
    const result = await update({
      id,
      client_id: values.client?.id ?? "",
      issue_date: values.issue_date,
      due_date: values.due_date || null,
      tax_rate: toNumber(values.tax_rate),
      currency: values.currency.trim(),
      notes: values.notes.trim() || null,
      items: itemsInput(values.items),
    });
    if (result) navigate(invoicePath(id));
  };

  return (
    <Page title={doc ? `Edit ${documentName(doc)}` : "Edit"}>
      <ErrorBanner error={detail.error} />
      {detail.loading && !doc && <Loading />}
      {doc && doc.status !== "draft" && (
        <p className="banner banner-info">
          {documentName(doc)} is {STATUS_TEXT[doc.status].toLowerCase()}: only a draft can be edited.{" "}
          <Link to={invoicePath(id)}>Back to {documentName(doc)}</Link>
        </p>
      )}
      {doc?.status === "draft" && (
        <InvoiceForm
          key={doc.updated_at}
          initial={valuesOf(doc)}
          editing
          error={withParam(state.error)}
          pending={state.pending}
          disabled={can("invoices.write") ? undefined : CANNOT_WRITE}
          submitLabel="Save changes"
          onSubmit={submit}
          onCancel={() => navigate(invoicePath(id))}
        />
      )}
    </Page>
  );
}
