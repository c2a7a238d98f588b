import { BASE } from "../../router.tsx";
import { formatMoney } from "../../ui/money.ts";

/** One line of the overview's recent activity: what happened, and where to see it. */
export interface ActivityLine {
  text: string;
  href: string | null;
}

const text = (value: unknown, fallback = "") =>
  typeof value === "string" && value !== "" ? value : fallback;
const id = (value: unknown) => encodeURIComponent(text(value));

const STAGE_TEXT: Record<string, string> = {
  new: "new",
  contacted: "contacted",
  qualified: "qualified",
  proposal: "proposal",
  won: "won",
  lost: "lost",
};

/**
 * An event of the API (its type and the object it carries, exactly as the API returned it) as a
 * sentence a business owner reads, with the screen that shows the object.
 *
 * @example describeEvent("invoice.paid", { id: "inv_1", invoice_number: "INV-2026-0001" })
 * // { text: "Invoice INV-2026-0001 paid", href: "/dashboard/invoices/inv_1" }
 */
export function describeEvent(type: string, object: Record<string, unknown>): ActivityLine {
  const [kind, action = ""] = type.split(".");
  const verb = action.replaceAll("_", " ");
  switch (kind) {
    case "lead": {
      const name = text(object.full_name, "A lead");
      const href = `${BASE}/leads/${id(object.id)}`;
      if (action === "stage_changed")
        return { text: `${name} moved to ${STAGE_TEXT[text(object.stage)] ?? text(object.stage)}`, href };
      return { text: `New lead: ${name}`, href };
    }
    case "client":
      return {
        text: `Client ${text(object.name, "(unnamed)")} ${action === "created" ? "added" : "updated"}`,
        href: `${BASE}/clients/${id(object.id)}`,
      };
    case "invoice":
    case "quote":
      return {
        text: `${kind === "invoice" ? "Invoice" : "Quote"} ${text(object.invoice_number)} ${verb}`,
        href: `${BASE}/invoices/${id(object.id)}`,
      };
    case "payment":
      return {
        text: `Payment of ${
          typeof object.amount === "number" ? formatMoney(object.amount, text(object.currency, "USD")) : "?"
        } recorded`,
        href: `${BASE}/invoices/${id(object.invoice_id)}`,
      };
    case "inventory":
      return {
        text: `${text(object.name, "An item")} is ${action === "out_of_stock" ? "out of stock" : "low on stock"}`,
        href: `${BASE}/inventory/${id(object.id)}`,
      };
    case "task":
      return {
        text: `Task ${text(object.title, "(untitled)")} completed`,
        href: `${BASE}/projects/${id(object.project_id)}`,
      };
    case "file":
      return {
        text: `File ${text(object.file_name, "(unnamed)")} ${verb}`,
        href: action === "deleted" ? null : `${BASE}/storage?bucket=${id(object.bucket_id)}`,
      };
    default:
      return { text: type, href: null };
  }
}
