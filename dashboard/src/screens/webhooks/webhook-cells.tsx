import { ALL_EVENTS } from "../../../../schema/lib/event-types.ts";
import type {
  WebhookDeliveryFieldsFragment,
  WebhookDeliveryStatus,
  WebhookEndpointFieldsFragment,
} from "../../generated/graphql.ts";
import { formatDateTime } from "../../ui/format.ts";

// The Webhooks screen's shared types, texts and cells.

export type Endpoint = WebhookEndpointFieldsFragment;
export type Delivery = WebhookDeliveryFieldsFragment;

/** Why a member's buttons are disabled. */
export const ONLY_OWNERS =
  "Only owners of the workspace can add, pause, test, rotate and delete endpoints, and replay deliveries.";

/** How often the deliveries shown are asked for again while one of them is on its way. */
export const POLL_MS = 1_000;

/** Pending with an attempt due: on its way (a paused endpoint's held delivery has none due). */
export const isUnderway = (delivery: { status: WebhookDeliveryStatus; next_attempt_at: string | null }) =>
  delivery.status === "pending" && delivery.next_attempt_at !== null;

/** An endpoint's events as tags; "every event" for the wildcard. */
export function Events({ events }: { events: readonly string[] }) {
  if (events.includes(ALL_EVENTS)) return <span className="tag">every event</span>;
  return (
    <>
      {events.map((type) => (
        <span key={type} className="tag">
          {type}
        </span>
      ))}
    </>
  );
}

/** Active, or paused (by the owner, or because it answered 410 Gone). */
export function EndpointStatus({ endpoint }: { endpoint: Endpoint }) {
  if (endpoint.is_active) return <span className="tag tag-ok">Active</span>;
  if (endpoint.disabled_reason === "gone")
    return <span className="tag tag-bad">Paused: it answered 410 Gone</span>;
  return <span className="tag tag-warn">Paused</span>;
}

const STATUS_TEXT: Record<WebhookDeliveryStatus, string> = {
  pending: "Pending",
  retrying: "Retrying",
  succeeded: "Succeeded",
  failed: "Failed",
};

/** A delivery's status as a tag; a pending one a pause holds says so. */
export function DeliveryStatus({ delivery }: { delivery: Delivery }) {
  if (delivery.status === "pending" && delivery.next_attempt_at === null)
    return <span className="tag tag-warn">Held: endpoint paused</span>;
  const tone = { pending: "", retrying: "tag-warn", succeeded: "tag-ok", failed: "tag-bad" }[delivery.status];
  return <span className={["tag", tone].filter(Boolean).join(" ")}>{STATUS_TEXT[delivery.status]}</span>;
}

/** The last attempt's answer: its HTTP status, or why none came. */
export function Response({
  delivery,
}: {
  delivery: Pick<Delivery, "response_status" | "last_error" | "attempts">;
}) {
  if (delivery.response_status !== null) return <>HTTP {delivery.response_status}</>;
  if (delivery.last_error) return <code>{delivery.last_error}</code>;
  return <span className="muted">{delivery.attempts === 0 ? "Not sent yet" : "No answer"}</span>;
}

/** When the next attempt is due, in words. */
export function nextAttempt(delivery: Pick<Delivery, "status" | "next_attempt_at">): string {
  if (delivery.next_attempt_at) return formatDateTime(delivery.next_attempt_at);
  if (delivery.status === "pending") return "When resumed";
  return "None";
}
