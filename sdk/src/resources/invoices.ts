import type { APIPromise, RequestOptions } from "../lib/core.js";
import type { PagePromise } from "../lib/pagination.js";
import type {
  Invoice,
  InvoiceCreateParams,
  InvoiceListParams,
  InvoiceUpdateParams,
  Payment,
  PaymentCreateParams,
  Result,
} from "../types.js";
import { APIResource } from "./resource.js";

export class Payments extends APIResource {
  /**
   * Records a payment on an invoice; the answer carries the updated `invoice`. More than the
   * balance due is a `ValidationError` (`amount_exceeds_balance`). Needs `payments.write`.
   *
   * @example
   * ```ts
   * const payment = await kontor.invoices.payments.create("inv_…", { amount: 120.5, payment_method: "bank_transfer" });
   * console.log(payment.invoice.status);
   * ```
   */
  create(invoiceId: string, params: PaymentCreateParams, options?: RequestOptions): APIPromise<Payment> {
    return this._client._route("POST /invoices/{invoice_id}/payments", [invoiceId], params, options);
  }
}

/** Invoices and quotes (`document_type`). */
export class Invoices extends APIResource {
  /** `/v1/invoices/{invoice_id}/payments`. */
  readonly payments: Payments = new Payments(this._client);

  /**
   * Invoices and quotes, newest first (`limit` at most 30). Needs `invoices.read`.
   *
   * @example
   * ```ts
   * for await (const invoice of kontor.invoices.list({ status: "sent" })) console.log(invoice.invoice_number, invoice.balance_due);
   * ```
   */
  list(params?: InvoiceListParams, options?: RequestOptions): PagePromise<Invoice> {
    return this._client._list("GET /invoices", [], params, options);
  }

  /**
   * Creates a draft invoice, or a quote with `document_type: "quote"`. Needs `invoices.write`.
   *
   * @example
   * ```ts
   * const invoice = await kontor.invoices.create({
   *   client_id: "cli_…",
   *   items: [{ description: "Consulting", quantity: 4, unit_price: 150 }],
   * });
   * ```
   */
  create(params: InvoiceCreateParams, options?: RequestOptions): APIPromise<Invoice> {
    return this._client._route("POST /invoices", [], params, options);
  }

  /**
   * The invoice or quote with its items and payments.
   *
   * @example
   * ```ts
   * const invoice = await kontor.invoices.retrieve("inv_…");
   * console.log(invoice.items.length, invoice.payments.length);
   * ```
   */
  retrieve(id: string, options?: RequestOptions): APIPromise<Invoice> {
    return this._client._route("GET /invoices/{id}", [id], undefined, options);
  }

  /**
   * Changes a draft; anything else is a `ValidationError` (`invalid_state`).
   *
   * @example
   * ```ts
   * await kontor.invoices.update("inv_…", { due_date: "2026-12-31" });
   * ```
   */
  update(id: string, params: InvoiceUpdateParams, options?: RequestOptions): APIPromise<Invoice> {
    return this._client._route("PATCH /invoices/{id}", [id], params, options);
  }

  /**
   * Marks a draft as sent.
   *
   * @example
   * ```ts
   * const sent = await kontor.invoices.send("inv_…");
   * ```
   */
  send(id: string, options?: RequestOptions): APIPromise<Result<"POST /invoices/{id}/send">> {
    return this._client._route("POST /invoices/{id}/send", [id], undefined, options);
  }

  /**
   * Voids an invoice (draft, sent or partially paid).
   *
   * @example
   * ```ts
   * const voided = await kontor.invoices.void("inv_…");
   * ```
   */
  void(id: string, options?: RequestOptions): APIPromise<Result<"POST /invoices/{id}/void">> {
    return this._client._route("POST /invoices/{id}/void", [id], undefined, options);
  }

  /**
   * Accepts a quote.
   *
   * @example
   * ```ts
   * const quote = await kontor.invoices.accept("inv_…");
   * ```
   */
  accept(id: string, options?: RequestOptions): APIPromise<Result<"POST /invoices/{id}/accept">> {
    return this._client._route("POST /invoices/{id}/accept", [id], undefined, options);
  }

  /**
   * Declines a quote.
   *
   * @example
   * ```ts
   * const quote = await kontor.invoices.decline("inv_…");
   * ```
   */
  decline(id: string, options?: RequestOptions): APIPromise<Result<"POST /invoices/{id}/decline">> {
    return this._client._route("POST /invoices/{id}/decline", [id], undefined, options);
  }

  /**
   * Converts an accepted quote into a new draft invoice, which it returns.
   *
   * @example
   * ```ts
   * await kontor.invoices.accept(quoteId);
   * const invoice = await kontor.invoices.convert(quoteId);
   * ```
   */
  convert(id: string, options?: RequestOptions): APIPromise<Result<"POST /invoices/{id}/convert">> {
    return this._client._route("POST /invoices/{id}/convert", [id], undefined, options);
  }
}
