import { useEffect, useRef, useState } from "react";
import { EVENT_TYPES, TEST_EVENT_TYPE } from "../../../../schema/lib/event-types.ts";
import { useMutation } from "../../api/hooks.ts";
import { usePaged } from "../../api/paged.ts";
import {
  DeleteWebhookEndpointDocument,
  ReplayWebhookDeliveryDocument,
  RotateWebhookEndpointSecretDocument,
  SetWebhookEndpointActiveDocument,
  TestWebhookEndpointDocument,
  WebhookDeliveriesDocument,
  type WebhookDeliveryStatus,
  WebhookEndpointsDocument,
} from "../../generated/graphql.ts";
import { useSession } from "../../session.tsx";
import { Button } from "../../ui/Button.tsx";
import { ConfirmDialog } from "../../ui/ConfirmDialog.tsx";
import { ErrorBanner, Notice } from "../../ui/ErrorBanner.tsx";
import { SelectField } from "../../ui/Field.tsx";
import { Actions } from "../../ui/Form.tsx";
import { formatDateTime, formatNumber } from "../../ui/format.ts";
import { Loading, Page, Panel } from "../../ui/Page.tsx";
import { SecretBox } from "../../ui/SecretBox.tsx";
import { Table } from "../../ui/Table.tsx";
import { CreateEndpointDialog } from "./CreateEndpointDialog.tsx";
import { DeliveryDialog } from "./DeliveryDialog.tsx";
import {
  type Delivery,
  DeliveryStatus,
  type Endpoint,
  EndpointStatus,
  Events,
  isUnderway,
  ONLY_OWNERS,
  POLL_MS,
  Response,
} from "./webhook-cells.tsx";

const STATUS_OPTIONS = [
  { value: "", label: "Any status" },
  { value: "pending", label: "Pending" },
  { value: "retrying", label: "Retrying" },
  { value: "succeeded", label: "Succeeded" },
  { value: "failed", label: "Failed" },
];

const EVENT_OPTIONS = [
  { value: "", label: "Any event" },
  ...[...EVENT_TYPES, TEST_EVENT_TYPE].map((type) => ({ value: type, label: type })),
];

/** A secret shown once: a new endpoint's, or a rotated one's. */
interface Revealed {
  title: string;
  url: string;
  secret: string;
}

/**
 * Webhook endpoints (added with their signing secret shown once, paused and resumed, tested,
 * rotated, deleted) and their deliveries: status, last answer and attempts, a detail view, replay.
 */
export default function Webhooks() {
  const { isOwner } = useSession();
  const endpoints = usePaged(WebhookEndpointsDocument, {}, (data) => data.webhookEndpoints);
  const [endpointFilter, setEndpointFilter] = useState("");
  const [eventFilter, setEventFilter] = useState("");
  const [statusFilter, setStatusFilter] = useState("");
  const deliveries = usePaged(
    WebhookDeliveriesDocument,
    {
      endpoint_id: endpointFilter || null,
      event_type: eventFilter || null,
      status: (statusFilter || null) as WebhookDeliveryStatus | null,
    },
    (data) => data.webhookDeliveries,
  );
  const [creating, setCreating] = useState(false);
  const [rotating, setRotating] = useState<Endpoint | null>(null);
  const [deleting, setDeleting] = useState<Endpoint | null>(null);
  const [showing, setShowing] = useState<Delivery | null>(null);
  const [revealed, setRevealed] = useState<Revealed | null>(null);
  const [notice, setNotice] = useState("");
  const [setActive, settingActive] = useMutation(SetWebhookEndpointActiveDocument);
  const [sendTest, sendingTest] = useMutation(TestWebhookEndpointDocument);
  const [replay, replaying] = useMutation(ReplayWebhookDeliveryDocument);
  const deliveriesPanel = useRef<HTMLDivElement>(null);

  const urlOf = (id: string) => endpoints.rows.find((endpoint) => endpoint.id === id)?.url ?? id;
  // Only one row action's error is shown: the latest one tried.
  const [lastAction, setLastAction] = useState<"active" | "test" | "replay" | null>(null);
  const actionError =
    lastAction === "active"
      ? settingActive.error
      : lastAction === "test"
        ? sendingTest.error
        : lastAction === "replay"
          ? replaying.error
          : undefined;

  // While a delivery shown is on its way (pending, not held by a pause), ask again until it is not.
  // A failed request stops it: Refresh tries again.
  const live = deliveries.firstPage && !deliveries.error && deliveries.rows.some(isUnderway);
  useEffect(() => {
    if (!live || deliveries.loading) return;
    const timer = setTimeout(deliveries.reload, POLL_MS);
    return () => clearTimeout(timer);
  }, [live, deliveries.loading, deliveries.reload]);

  const toggle = async (endpoint: Endpoint) => {
    setNotice("");
    setLastAction("active");
    const result = await setActive({ id: endpoint.id, is_active: !endpoint.is_active });
    if (!result) return;
    const updated = result.updateWebhookEndpoint;
    setNotice(
      updated.is_active
        ? `${updated.url} resumed: deliveries that waited are sent now.`
        : `${updated.url} paused: its deliveries wait until it is resumed.`,
    );
    endpoints.reload();
    deliveries.restart();
  };

  const test = async (endpoint: Endpoint) => {
    setNotice("");
    setLastAction("test");
    const result = await sendTest({ id: endpoint.id });
    if (!result) return;
    setNotice(
      `A ${TEST_EVENT_TYPE} event is on its way to ${endpoint.url} (delivery ${result.testWebhookEndpoint.id}).`,
    );
    deliveries.restart();
  };

  const replayDelivery = async (delivery: Delivery) => {
    setNotice("");
    setLastAction("replay");
    const result = await replay({ id: delivery.id });
    if (!result) return false;
    const again = result.replayWebhookDelivery;
    setNotice(
      isUnderway(again)
        ? `${delivery.event_type} sent again to ${urlOf(delivery.endpoint_id)} as delivery ${again.id}.`
        : `${delivery.event_type} queued for ${urlOf(delivery.endpoint_id)} as delivery ${again.id}: held until the endpoint is resumed.`,
    );
    deliveries.restart();
    return true;
  };

  const showDeliveriesOf = (endpoint: Endpoint) => {
    setEndpointFilter(endpoint.id);
    deliveriesPanel.current?.scrollIntoView({ block: "start" });
    deliveriesPanel.current?.querySelector("select")?.focus({ preventScroll: true });
  };

  return (
    <Page
      title="Webhooks"
      actions={
        <Button variant="primary" disabled={!isOwner} onClick={() => setCreating(true)}>
          Add endpoint
        </Button>
      }
    >
      {!isOwner && (
        <div className="banner banner-info" role="note">
          {ONLY_OWNERS}
        </div>
      )}
      <Notice>{notice}</Notice>
      <ErrorBanner error={actionError} />
      {revealed && (
        <Panel title={revealed.title} actions={<Button onClick={() => setRevealed(null)}>Done</Button>}>
          <div className="webhooks-secret">
            <SecretBox
              label={`Signing secret of ${revealed.url}`}
              secret={revealed.secret}
              note="Copy it now: it is shown only once. Your receiver checks each delivery's Kontor-Signature (or webhook-signature) with it."
            />
          </div>
        </Panel>
      )}
      <Panel title="Endpoints">
        <p className="muted">
          Kontor POSTs each event an endpoint subscribes to, signed with its secret, and retries for about 3
          days until it answers 2xx.
        </p>
        <ErrorBanner error={endpoints.error} />
        {endpoints.loading && endpoints.rows.length === 0 && <Loading />}
        {(!endpoints.loading || endpoints.rows.length > 0) && (
          <Table
            caption="Webhook endpoints"
            rows={endpoints.rows}
            rowKey={(endpoint) => endpoint.id}
            empty={
              isOwner ? "No endpoints yet. Add one to receive this workspace's events." : "No endpoints yet."
            }
            columns={[
              {
                header: "URL",
                cell: (endpoint) => (
                  <span className="webhooks-url">
                    <code>{endpoint.url}</code>
                    {endpoint.description && (
                      <span className="muted webhooks-description">{endpoint.description}</span>
                    )}
                  </span>
                ),
              },
              { header: "Events", cell: (endpoint) => <Events events={endpoint.events} /> },
              { header: "Status", cell: (endpoint) => <EndpointStatus endpoint={endpoint} />, nowrap: true },
              { header: "Created", cell: (endpoint) => formatDateTime(endpoint.created_at), nowrap: true },
              {
                header: "Actions",
                cell: (endpoint) => (
                  <div className="row-actions">
                    <Button
                      onClick={() => showDeliveriesOf(endpoint)}
                      aria-label={`Deliveries to ${endpoint.url}`}
                    >
                      Deliveries
                    </Button>
                    <Button
                      disabled={!isOwner}
                      busy={sendingTest.pending}
                      onClick={() => void test(endpoint)}
                      aria-label={`Send test event to ${endpoint.url}`}
                    >
                      Send test event
                    </Button>
                    <Button
                      disabled={!isOwner}
                      busy={settingActive.pending}
                      onClick={() => void toggle(endpoint)}
                      aria-label={`${endpoint.is_active ? "Pause" : "Resume"} ${endpoint.url}`}
                    >
                      {endpoint.is_active ? "Pause" : "Resume"}
                    </Button>
                    <Button
                      disabled={!isOwner}
                      onClick={() => setRotating(endpoint)}
                      aria-label={`Rotate secret of ${endpoint.url}`}
                    >
                      Rotate secret
                    </Button>
                    <Button
                      variant="danger"
                      disabled={!isOwner}
                      onClick={() => setDeleting(endpoint)}
                      aria-label={`Delete ${endpoint.url}`}
                    >
                      Delete
                    </Button>
                  </div>
                ),
              },
            ]}
          />
        )}
        {endpoints.hasMore && (
          <Actions>
            <Button busy={endpoints.loading} onClick={endpoints.more}>
              Show more endpoints
            </Button>
          </Actions>
        )}
      </Panel>
      <div ref={deliveriesPanel} className="webhooks-anchor">
        <Panel
          title="Deliveries"
          actions={
            <Button
              busy={deliveries.loading && !live}
              onClick={() => {
                deliveries.restart();
                endpoints.reload();
              }}
            >
              Refresh
            </Button>
          }
        >
          <div className="webhooks-filters">
            <SelectField
              label="Endpoint"
              value={endpointFilter}
              options={[
                { value: "", label: "All endpoints" },
                ...endpoints.rows.map((endpoint) => ({ value: endpoint.id, label: endpoint.url })),
              ]}
              onChange={(event) => setEndpointFilter(event.target.value)}
            />
            <SelectField
              label="Event"
              value={eventFilter}
              options={EVENT_OPTIONS}
              onChange={(event) => setEventFilter(event.target.value)}
            />
            <SelectField
              label="Status"
              value={statusFilter}
              options={STATUS_OPTIONS}
              onChange={(event) => setStatusFilter(event.target.value)}
            />
          </div>
          <ErrorBanner error={deliveries.error} />
          {deliveries.loading && deliveries.rows.length === 0 && <Loading />}
          {(!deliveries.loading || deliveries.rows.length > 0) && (
            <Table
              caption="Webhook deliveries"
              rows={deliveries.rows}
              rowKey={(delivery) => delivery.id}
              empty="No deliveries match. Events of the last 30 days are kept with their deliveries."
              columns={[
                {
                  header: "Event",
                  cell: (delivery) => (
                    <span className="webhooks-event">
                      <code>{delivery.event_type}</code>
                      <span className="muted">{formatDateTime(delivery.created_at)}</span>
                    </span>
                  ),
                },
                {
                  header: "Endpoint",
                  cell: (delivery) => (
                    <code className="webhooks-url webhooks-url-narrow">{urlOf(delivery.endpoint_id)}</code>
                  ),
                },
                {
                  header: "Status",
                  cell: (delivery) => (
                    <span className="webhooks-status">
                      <DeliveryStatus delivery={delivery} />
                      {delivery.status === "retrying" && delivery.next_attempt_at && (
                        <span className="muted webhooks-next">
                          Next attempt {formatDateTime(delivery.next_attempt_at)}
                        </span>
                      )}
                    </span>
                  ),
                },
                { header: "Response", cell: (delivery) => <Response delivery={delivery} />, nowrap: true },
                { header: "Attempts", cell: (delivery) => formatNumber(delivery.attempts), nowrap: true },
                {
                  header: "Actions",
                  cell: (delivery) => (
                    <div className="row-actions">
                      <Button
                        onClick={() => setShowing(delivery)}
                        aria-label={`Details of delivery ${delivery.id}`}
                      >
                        Details
                      </Button>
                      <Button
                        disabled={!isOwner}
                        busy={replaying.pending}
                        onClick={() => void replayDelivery(delivery)}
                        aria-label={`Replay delivery ${delivery.id}`}
                      >
                        Replay
                      </Button>
                    </div>
                  ),
                },
              ]}
            />
          )}
          {deliveries.hasMore && (
            <Actions>
              <Button busy={deliveries.loading} onClick={deliveries.more}>
                Show more deliveries
              </Button>
            </Actions>
          )}
        </Panel>
      </div>
      <CreateEndpointDialog
        open={creating}
        onClose={() => setCreating(false)}
        onCreated={(url, secret) => {
          setCreating(false);
          setRevealed({ title: "Your new endpoint", url, secret });
          setNotice(`Endpoint ${url} added: it receives events from now on.`);
          endpoints.restart();
        }}
      />
      <ConfirmDialog
        subject={rotating}
        title="Rotate the signing secret?"
        label="Rotate the signing secret"
        confirm="Rotate secret"
        variant="primary"
        mutation={RotateWebhookEndpointSecretDocument}
        variables={(endpoint) => ({ id: endpoint.id })}
        onClose={() => setRotating(null)}
        onDone={({ rotateWebhookEndpointSecret: { url, secret } }) => {
          setRotating(null);
          setRevealed({ title: "The endpoint's new secret", url, secret });
          setNotice(`The secret of ${url} was replaced: deliveries from now on are signed with the new one.`);
        }}
      >
        <p>
          A new secret replaces the one of <code className="webhooks-url">{rotating?.url}</code> at once, with
          no overlap: every delivery from now on is signed with the new one. Give it to the receiver right
          after.
        </p>
      </ConfirmDialog>
      <ConfirmDialog
        subject={deleting}
        title="Delete this endpoint?"
        label="Delete endpoint"
        confirm="Delete endpoint"
        mutation={DeleteWebhookEndpointDocument}
        variables={(endpoint) => ({ id: endpoint.id })}
        onClose={() => setDeleting(null)}
        onDone={(_, endpoint) => {
          setDeleting(null);
          if (revealed?.url === endpoint.url) setRevealed(null);
          if (endpointFilter === endpoint.id) setEndpointFilter("");
          setNotice(`Endpoint ${endpoint.url} deleted, with its deliveries: nothing more is sent to it.`);
          endpoints.restart();
          deliveries.restart();
        }}
      >
        <p>
          Nothing more is sent to <code className="webhooks-url">{deleting?.url}</code>, and its delivery
          history is deleted. This cannot be undone.
        </p>
      </ConfirmDialog>
      <DeliveryDialog
        delivery={showing}
        canReplay={isOwner}
        replaying={replaying.pending}
        replayError={lastAction === "replay" ? replaying.error : undefined}
        onReplay={async (delivery) => {
          if (await replayDelivery(delivery)) setShowing(null);
        }}
        onClose={() => {
          setShowing(null);
          if (lastAction === "replay") setLastAction(null);
        }}
      />
    </Page>
  );
}
