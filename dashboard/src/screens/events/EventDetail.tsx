import { useState } from "react";
import { useMutation, useQuery } from "../../api/hooks.ts";
import { usePaged } from "../../api/paged.ts";
import {
  EventDeliveriesDocument,
  EventDetailDocument,
  ReplayWebhookDeliveryDocument,
} from "../../generated/graphql.ts";
import { BASE, Link, useLocation } from "../../router.tsx";
import { routeParam } from "../../routes.ts";
import { useSession } from "../../session.tsx";
import { Button } from "../../ui/Button.tsx";
import { ErrorBanner, Notice } from "../../ui/ErrorBanner.tsx";
import { Actions } from "../../ui/Form.tsx";
import { formatDateTime, formatNumber } from "../../ui/format.ts";
import { Loading, Page, Panel } from "../../ui/Page.tsx";
import { Table } from "../../ui/Table.tsx";
import { DeliveryDialog } from "../webhooks/DeliveryDialog.tsx";
import { type Delivery, DeliveryStatus, Response } from "../webhooks/webhook-cells.tsx";
import "./events.css";

/**
 * One event at `/dashboard/events/:id`: its payload as webhooks deliver it (pretty-printed JSON
 * with a copy button), and its deliveries (webhookDeliveries(event_id:)) to each endpoint, each
 * with the Webhooks screen's delivery details and, for owners, replay.
 */

const PATH = `${BASE}/events`;

export default function EventDetail() {
  const { path } = useLocation();
  const id = routeParam(`${PATH}/:id`, path);
  const { isOwner } = useSession();
  const query = useQuery(EventDetailDocument, { id });
  const deliveries = usePaged(EventDeliveriesDocument, { event_id: id }, (data) => data.webhookDeliveries);
  const [showing, setShowing] = useState<Delivery | null>(null);
  const [replay, replaying] = useMutation(ReplayWebhookDeliveryDocument);
  const [notice, setNotice] = useState("");
  const event = query.data?.event;
  // The body every delivery of it carries, in the API's order of fields.
  const payload = event
    ? JSON.stringify(
        {
          id: event.id,
          object: event.object,
          type: event.type,
          created_at: event.created_at,
          workspace_id: event.workspace_id,
          data: event.data,
        },
        null,
        2,
      )
    : "";

  const replayDelivery = async (delivery: Delivery) => {
    const result = await replay({ id: delivery.id });
    if (!result) return;
    setShowing(null);
    setNotice(`${delivery.event_type} sent again as delivery ${result.replayWebhookDelivery.id}.`);
    deliveries.restart();
  };

  return (
    <Page
      title={event ? event.type : "Event"}
      actions={
        <Link to={PATH} className="button button-secondary">
          All events
        </Link>
      }
    >
      <Notice>{notice}</Notice>
      <ErrorBanner error={query.error} />
      {query.loading && !event && <Loading label="Loading the event…" />}
      {event && (
        <>
          <Panel title="Payload">
            <dl className="facts">
              <div>
                <dt>Event (webhook-id)</dt>
                <dd>
                  <code>{event.id}</code>
                </dd>
              </div>
              <div>
                <dt>Time</dt>
                <dd>
                  <time dateTime={event.created_at}>{formatDateTime(event.created_at)}</time>
                </dd>
              </div>
            </dl>
            <Payload json={payload} />
          </Panel>
          <Panel title="Deliveries">
            <ErrorBanner error={deliveries.error} />
            {deliveries.loading && deliveries.firstPage && <Loading label="Loading deliveries…" />}
            {!(deliveries.loading && deliveries.firstPage) && (
              <Table
                caption="Deliveries of this event"
                rows={deliveries.rows}
                rowKey={(delivery) => delivery.id}
                empty="Not delivered: no endpoint listened for this event when it happened."
                columns={[
                  {
                    header: "Endpoint",
                    cell: (delivery) => <code className="webhooks-url">{delivery.endpoint.url}</code>,
                  },
                  {
                    header: "Status",
                    nowrap: true,
                    cell: (delivery) => <DeliveryStatus delivery={delivery} />,
                  },
                  { header: "Response", nowrap: true, cell: (delivery) => <Response delivery={delivery} /> },
                  { header: "Attempts", nowrap: true, cell: (delivery) => formatNumber(delivery.attempts) },
                  { header: "Time", nowrap: true, cell: (delivery) => formatDateTime(delivery.created_at) },
                  {
                    header: "Details",
                    cell: (delivery) => (
                      <Button
                        variant="link"
                        onClick={() => setShowing(delivery)}
                        aria-label={`Details of delivery ${delivery.id}`}
                      >
                        Details
                      </Button>
                    ),
                  },
                ]}
              />
            )}
            {deliveries.hasMore && (
              <Actions>
                <Button busy={deliveries.loading} onClick={deliveries.more}>
                  Show more
                </Button>
              </Actions>
            )}
          </Panel>
        </>
      )}
      <DeliveryDialog
        delivery={showing}
        canReplay={isOwner}
        replaying={replaying.pending}
        replayError={replaying.error}
        onReplay={replayDelivery}
        onClose={() => setShowing(null)}
      />
    </Page>
  );
}

/** The JSON, wrapped on a phone, with a copy button whose outcome is announced. */
function Payload({ json }: { json: string }) {
  const [status, setStatus] = useState("");
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(json);
      setStatus("Copied.");
    } catch {
      setStatus("Select the JSON and copy it with Ctrl+C (⌘C).");
    }
  };
  return (
    <div className="stack">
      <div className="events-payload-head">
        <h3 id="events-payload">JSON</h3>
        <Button onClick={() => void copy()} aria-label="Copy the JSON">
          Copy
        </Button>
      </div>
      {/* biome-ignore lint/a11y/useSemanticElements: a <pre> that scrolls, labelled as a region; <section> would lose the preformatting. */}
      <pre
        className="code-block events-payload"
        // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must take focus to be scrolled by keyboard.
        tabIndex={0}
        role="region"
        aria-labelledby="events-payload"
      >
        {json}
      </pre>
      <p className="copy-status" role="status">
        {status}
      </p>
    </div>
  );
}
