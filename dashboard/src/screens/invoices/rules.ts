import type { DocumentType, InvoiceStatus } from "../../generated/graphql.ts";

/** An action on a document, by the name the server's rules give it (schema/lib/invoicing.ts). */
export type Action = "edit" | "send" | "pay" | "void" | "accept" | "decline" | "convert";

/**
 * What the type and status let one do with a document, as the API's descriptions of the
 * mutations say (test/unit/dashboard-invoices.test.ts checks it against the server's rules): the
 * detail screen shows only these actions.
 *
 * @example allowed({ document_type: "quote", status: "accepted" }).convert // true
 */
export function allowed(doc: {
  document_type: DocumentType;
  status: InvoiceStatus;
}): Record<Action, boolean> {
  const invoice = doc.document_type === "invoice";
  const quote = !invoice;
  const open = doc.status === "draft" || doc.status === "sent";
  return {
    edit: doc.status === "draft",
    send: doc.status === "draft",
    pay: invoice && (open || doc.status === "partially_paid"),
    void: invoice && (open || doc.status === "partially_paid"),
    accept: quote && open,
    decline: quote && open,
    convert: quote && doc.status === "accepted",
  };
}
