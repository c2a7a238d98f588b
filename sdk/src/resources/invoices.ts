import type { APIPromise, RequestOptions } from "../core.js";
import type { PagePromise } from "../pagination.js";
import type { Invoice, InvoiceCreateParams, InvoiceListParams, InvoiceUpdateParams, Payment, PaymentCreateParams, Result } from "../types.js";
import { APIResource } from "./resource.js";

export class Payments extends APIResource {
  /**
   * Records a payment on an invoice; the answer carries the updated `invoice`. More than the
   * balance due is a `ValidationError` (`amount_exceeds_balance`). Needs `payments.write`.
   */
  create(invoiceId: string, params: PaymentCreateParams, options?: RequestOptions): APIPromise<Payment> {
    return this._client._route("POST /invoices/{invoice_id}/payments", [invoiceId], params, options);
  }
}

/** Invoices and quotes (`document_type`). */
export class Invoices extends APIResource {
  /** `/v1/invoices/{invoice_id}/payments`. */
  readonly payments: Payments = new Payments(this._client);

  /** Invoices and quotes, newest first (`limit` at most 30). Needs `invoices.read`. */
  list(params?: InvoiceListParams, options?: RequestOptions): PagePromise<Invoice> {
    return this._client._list("GET /invoices", [], params, options);
  }

  create(params: InvoiceCreateParams, options?: RequestOptions): APIPromise<Invoice> {
    return this._client._route("POST /invoices", [], params, options);
  }

  /** The invoice or quote with its items and payments. */
  retrieve(id: string, options?: RequestOptions): APIPromise<Invoice> {
    return this._client._route("GET /invoices/{id}", [id], undefined, options);
  }

  /** Changes a draft; anything else is a `ValidationError` (`invalid_state`). */
  update(id: string, params: InvoiceUpdateParams, options?: RequestOptions): APIPromise<Invoice> {
    return this._client._route("PATCH /invoices/{id}", [id], params, options);
  }

  /** Marks a draft as sent. */
  send(id: string, options?: RequestOptions): APIPromise<Result<"POST /invoices/{id}/send">> {
    return this._client._route("POST /invoices/{id}/send", [id], undefined, options);
  }

  /** Voids an invoice (draft, sent or partially paid). */
  void(id: string, options?: RequestOptions): APIPromise<Result<"POST /invoices/{id}/void">> {
    return this._client._route("POST /invoices/{id}/void", [id], undefined, options);
  }

  /** Accepts a quote. */
  accept(id: string, options?: RequestOptions): APIPromise<Result<"POST /invoices/{id}/accept">> {
    return this._client._route("POST /invoices/{id}/accept", [id], undefined, options);
  }

  /** Declines a quote. */
  decline(id: string, options?: RequestOptions): APIPromise<Result<"POST /invoices/{id}/decline">> {
    return this._client._route("POST /invoices/{id}/decline", [id], undefined, options);
  }

  /** Converts an accepted quote into a new draft invoice, which it returns. */
  convert(id: string, options?: RequestOptions): APIPromise<Result<"POST /invoices/{id}/convert">> {
    return this._client._route("POST /invoices/{id}/convert", [id], undefined, options);
  }
}
