export type WebhookVerificationErrorReason =
  /** The secret is not a `whsec_…` string (or its base64 part does not decode). */
  | "invalid_secret"
  /** A signature header or its timestamp is missing. */
  | "missing_header"
  /** A header is malformed (a timestamp that is not Unix seconds, `Kontor-Event` not the body's type). */
  | "invalid_header"
  /** No signature matches: a wrong secret, or a body or timestamp changed on the way. */
  | "invalid_signature"
  /** Signed, but older than the tolerance: possibly a replay. */
  | "timestamp_too_old"
  /** Signed, but further in the future than the tolerance. */
  | "timestamp_in_future"
  /** Signed, but not an event envelope (or not valid UTF-8 JSON), or the body was not passed raw. */
  | "invalid_payload"
  /** Signed and well-formed, but of a type this SDK does not know (a newer server): see `payload`. */
  | "unknown_event_type";

/** Why a delivery was refused. `reason` is stable; `message` explains it to a person. */
export class WebhookVerificationError extends Error {
  override name = "WebhookVerificationError";
  readonly reason: WebhookVerificationErrorReason;
  /** Only for `unknown_event_type`: the verified body, parsed. */
  readonly payload?: Record<string, unknown>;

  constructor(reason: WebhookVerificationErrorReason, message: string, payload?: Record<string, unknown>) {
    super(message);
    this.reason = reason;
    if (payload !== undefined) this.payload = payload;
  }
}
