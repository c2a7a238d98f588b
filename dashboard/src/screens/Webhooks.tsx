import { useEffect, useRef, useState } from "react";
import { ApiError } from "../api/errors.ts";
import type { Variables } from "../api/graphql.ts";
import { useMutation, useQuery } from "../api/hooks.ts";
import {
  CreateWebhookEndpointDocument,
  DeleteWebhookEndpointDocument,
  ReplayWebhookDeliveryDocument,
  RotateWebhookEndpointSecretDocument,
  SetWebhookEndpointActiveDocument,
  TestWebhookEndpointDocument,
  WebhookDeliveriesDocument,
  WebhookDeliveryDocument,
  WebhookEndpointsDocument,
  type TypedDocumentString,
  type WebhookDeliveryFieldsFragment,
  type WebhookDeliveryStatus,
  type WebhookEndpointFieldsFragment,
} from "../generated/graphql.ts";
import { useSession } from "../session.tsx";
import { Button } from "../ui/Button.tsx";
import { Dialog } from "../ui/Dialog.tsx";
import { ErrorBanner, fieldError, Notice } from "../ui/ErrorBanner.tsx";
import { CheckboxGroup, SelectField, TextField } from "../ui/Field.tsx";
import { Actions, Form } from "../ui/Form.tsx";
import { formatDateTime, formatNumber } from "../ui/format.ts";
import { Loading, Page, Panel } from "../ui/Page.tsx";
import { SecretBox } from "../ui/SecretBox.tsx";
import { Table } from "../ui/Table.tsx";
import { ALL_EVENTS, EVENT_TYPES, TEST_EVENT_TYPE } from "../../../schema/lib/event-types.ts";

type Endpoint = WebhookEndpointFieldsFragment;
type Delivery = WebhookDeliveryFieldsFragment;

const ONLY_OWNERS = "Only owners of the workspace can add, pause, test, rotate and delete endpoints, and replay deliveries.";

/** How often the deliveries shown are asked for again while one of them is on its way. */
const POLL_MS = 1_000;

const STATUS_OPTIONS = [
  { value: "", label: "Any status" },
  { value: "pending", label: "Pending" },
  { value: "retrying", label: "Retrying" },
  { value: "succeeded", label: "Succeeded" },
  { value: "failed", label: "Failed" },
];

const EVENT_OPTIONS = [{ value: "", label: "Any event" }, ...[...EVENT_TYPES, TEST_EVENT_TYPE].map((type) => ({ value: type, label: type }))];

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
    lastAction === "active" ? settingActive.error : lastAction === "test" ? sendingTest.error : lastAction === "replay" ? replaying.error : undefined;

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
      updated.is_active ? `${updated.url} resumed: deliveries that waited are sent now.` : `${updated.url} paused: its deliveries wait until it is resumed.`,
    );
    endpoints.reload();
    deliveries.restart();
  };

  const test = async (endpoint: Endpoint) => {
    setNotice("");
    setLastAction("test");
    const result = await sendTest({ id: endpoint.id });
    if (!result) return;
    setNotice(`A ${TEST_EVENT_TYPE} event is on its way to ${endpoint.url} (delivery ${result.testWebhookEndpoint.id}).`);
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
        <p className="muted">Kontor POSTs each event an endpoint subscribes to, signed with its secret, and retries for about 3 days until it answers 2xx.</p>
        <ErrorBanner error={endpoints.error} />
        {endpoints.loading && endpoints.rows.length === 0 && <Loading />}
        {(!endpoints.loading || endpoints.rows.length > 0) && (
          <Table
            caption="Webhook endpoints"
            rows={endpoints.rows}
            rowKey={(endpoint) => endpoint.id}
            empty={isOwner ? "No endpoints yet. Add one to receive this workspace's events." : "No endpoints yet."}
            columns={[
              {
                header: "URL",
                cell: (endpoint) => (
                  <span className="webhooks-url">
                    <code>{endpoint.url}</code>
                    {endpoint.description && <span className="muted webhooks-description">{endpoint.description}</span>}
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
                    <Button onClick={() => showDeliveriesOf(endpoint)} aria-label={`Deliveries to ${endpoint.url}`}>
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
                    <Button disabled={!isOwner} onClick={() => setRotating(endpoint)} aria-label={`Rotate secret of ${endpoint.url}`}>
                      Rotate secret
                    </Button>
                    <Button variant="danger" disabled={!isOwner} onClick={() => setDeleting(endpoint)} aria-label={`Delete ${endpoint.url}`}>
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
              options={[{ value: "", label: "All endpoints" }, ...endpoints.rows.map((endpoint) => ({ value: endpoint.id, label: endpoint.url }))]}
              onChange={(event) => setEndpointFilter(event.target.value)}
            />
            <SelectField label="Event" value={eventFilter} options={EVENT_OPTIONS} onChange={(event) => setEventFilter(event.target.value)} />
            <SelectField label="Status" value={statusFilter} options={STATUS_OPTIONS} onChange={(event) => setStatusFilter(event.target.value)} />
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
                { header: "Endpoint", cell: (delivery) => <code className="webhooks-url webhooks-url-narrow">{urlOf(delivery.endpoint_id)}</code> },
                {
                  header: "Status",
                  cell: (delivery) => (
                    <span className="webhooks-status">
                      <DeliveryStatus delivery={delivery} />
                      {delivery.status === "retrying" && delivery.next_attempt_at && (
                        <span className="muted webhooks-next">Next attempt {formatDateTime(delivery.next_attempt_at)}</span>
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
                      <Button onClick={() => setShowing(delivery)} aria-label={`Details of delivery ${delivery.id}`}>
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
      <RotateSecretDialog
        endpoint={rotating}
        onClose={() => setRotating(null)}
        onRotated={(url, secret) => {
          setRotating(null);
          setRevealed({ title: "The endpoint's new secret", url, secret });
          setNotice(`The secret of ${url} was replaced: deliveries from now on are signed with the new one.`);
        }}
      />
      <DeleteEndpointDialog
        endpoint={deleting}
        onClose={() => setDeleting(null)}
        onDeleted={(endpoint) => {
          setDeleting(null);
          if (revealed?.url === endpoint.url) setRevealed(null);
          if (endpointFilter === endpoint.id) setEndpointFilter("");
          setNotice(`Endpoint ${endpoint.url} deleted, with its deliveries: nothing more is sent to it.`);
          endpoints.restart();
          deliveries.restart();
        }}
      />
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

/** Pending with an attempt due: on its way (a paused endpoint's held delivery has none due). */
const isUnderway = (delivery: { status: WebhookDeliveryStatus; next_attempt_at: string | null }) =>
  delivery.status === "pending" && delivery.next_attempt_at !== null;

interface ListPage<T> {
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
}

/**
 * A list the API pages with a cursor, shown as one list that grows with "Show more". Other
 * filters (or another workspace) start it over; `restart()` reloads it from its first page.
 */
function usePaged<TResult, TVariables extends Variables & { cursor?: string | null }, T>(
  document: TypedDocumentString<TResult, TVariables>,
  filters: Omit<TVariables, "cursor">,
  pick: (data: TResult) => ListPage<T>,
) {
  const { workspaceId } = useSession();
  const key = JSON.stringify([workspaceId, filters]);
  const [paging, setPaging] = useState<{ key: string; earlier: T[]; cursor: string | null }>({ key, earlier: [], cursor: null });
  const current = paging.key === key ? paging : { key, earlier: [], cursor: null };
  const query = useQuery(document, { ...filters, cursor: current.cursor } as TVariables);
  const page = query.data ? pick(query.data) : undefined;
  // Until the first page of other filters arrives, the old rows are not shown under them.
  const stale = paging.key !== key && query.loading;
  const rows = stale ? [] : [...current.earlier, ...(page?.data ?? [])];
  const { reload } = query;
  return {
    rows,
    error: query.error,
    loading: query.loading,
    hasMore: !stale && (page?.has_more ?? false),
    firstPage: current.cursor === null,
    reload,
    restart: () => {
      setPaging({ key, earlier: [], cursor: null });
      reload();
    },
    more: () => setPaging({ key, earlier: rows, cursor: page?.next_cursor ?? null }),
  };
}

function Events({ events }: { events: readonly string[] }) {
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

function EndpointStatus({ endpoint }: { endpoint: Endpoint }) {
  if (endpoint.is_active) return <span className="tag tag-ok">Active</span>;
  if (endpoint.disabled_reason === "gone") return <span className="tag tag-bad">Paused: it answered 410 Gone</span>;
  return <span className="tag tag-warn">Paused</span>;
}

const STATUS_TEXT: Record<WebhookDeliveryStatus, string> = {
  pending: "Pending",
  retrying: "Retrying",
  succeeded: "Succeeded",
  failed: "Failed",
};

function DeliveryStatus({ delivery }: { delivery: Delivery }) {
  if (delivery.status === "pending" && delivery.next_attempt_at === null) return <span className="tag tag-warn">Held: endpoint paused</span>;
  const tone = { pending: "", retrying: "tag-warn", succeeded: "tag-ok", failed: "tag-bad" }[delivery.status];
  return <span className={["tag", tone].filter(Boolean).join(" ")}>{STATUS_TEXT[delivery.status]}</span>;
}

/** The last attempt's answer: its HTTP status, or why none came. */
function Response({ delivery }: { delivery: Pick<Delivery, "response_status" | "last_error" | "attempts"> }) {
  if (delivery.response_status !== null) return <>HTTP {delivery.response_status}</>;
  if (delivery.last_error) return <code>{delivery.last_error}</code>;
  return <span className="muted">{delivery.attempts === 0 ? "Not sent yet" : "No answer"}</span>;
}

function nextAttempt(delivery: Pick<Delivery, "status" | "next_attempt_at">): string {
  if (delivery.next_attempt_at) return formatDateTime(delivery.next_attempt_at);
  if (delivery.status === "pending") return "When resumed";
  return "None";
}

function CreateEndpointDialog({ open, onClose, onCreated }: { open: boolean; onClose(): void; onCreated(url: string, secret: string): void }) {
  const [url, setUrl] = useState("");
  const [description, setDescription] = useState("");
  const [everything, setEverything] = useState(true);
  const [types, setTypes] = useState<Set<string>>(() => new Set());
  const [create, state] = useMutation(CreateWebhookEndpointDocument);
  const clear = () => {
    setUrl("");
    setDescription("");
    setEverything(true);
    setTypes(new Set());
    state.reset();
  };
  const close = () => {
    clear();
    onClose();
  };
  const submit = async () => {
    const events = everything ? [ALL_EVENTS] : EVENT_TYPES.filter((type) => types.has(type));
    const result = await create({ url: url.trim(), events, description: description.trim() || null });
    if (!result) return;
    clear();
    onCreated(result.createWebhookEndpoint.url, result.createWebhookEndpoint.secret);
  };
  const eventsError =
    fieldError(state.error, "events") ?? (state.error instanceof ApiError && state.error.param?.startsWith("events[") ? state.error.message : undefined);
  return (
    <Dialog open={open} title="Add a webhook endpoint" onClose={close}>
      <Form onSubmit={submit} aria-label="Add a webhook endpoint">
        <ErrorBanner error={state.error} />
        <TextField
          label="URL"
          type="url"
          required
          maxLength={2048}
          inputMode="url"
          spellCheck={false}
          placeholder="https://hooks.example.com/kontor"
          hint="Where Kontor POSTs the events: http or https (https to a public address in production)."
          value={url}
          error={fieldError(state.error, "url")}
          onChange={(event) => setUrl(event.target.value)}
        />
        <TextField
          label="Description (optional)"
          maxLength={500}
          hint="For people: what receives the events."
          value={description}
          error={fieldError(state.error, "description")}
          onChange={(event) => setDescription(event.target.value)}
        />
        <label className="checkbox">
          <input type="checkbox" checked={everything} onChange={(event) => setEverything(event.target.checked)} />
          <span>Every event, including types added later</span>
        </label>
        <CheckboxGroup
          label="Events"
          hint={everything ? "Every event is sent. Clear the box above to choose." : "The event types to send to this endpoint."}
          options={EVENT_TYPES.map((type) => ({ value: type, label: type }))}
          value={everything ? new Set() : types}
          disabled={everything}
          onChange={setTypes}
          error={eventsError}
        />
        <Actions>
          <Button onClick={close}>Cancel</Button>
          <Button type="submit" variant="primary" busy={state.pending}>
            Add endpoint
          </Button>
        </Actions>
      </Form>
    </Dialog>
  );
}

function RotateSecretDialog({ endpoint, onClose, onRotated }: { endpoint: Endpoint | null; onClose(): void; onRotated(url: string, secret: string): void }) {
  const [rotate, state] = useMutation(RotateWebhookEndpointSecretDocument);
  const close = () => {
    state.reset();
    onClose();
  };
  const submit = async () => {
    if (!endpoint) return;
    const result = await rotate({ id: endpoint.id });
    if (!result) return;
    state.reset();
    onRotated(result.rotateWebhookEndpointSecret.url, result.rotateWebhookEndpointSecret.secret);
  };
  return (
    <Dialog open={endpoint !== null} title="Rotate the signing secret?" onClose={close}>
      <Form onSubmit={submit} aria-label="Rotate the signing secret">
        <p>
          A new secret replaces the one of <code className="webhooks-url">{endpoint?.url}</code> at once, with no overlap: every delivery from now on is signed
          with the new one. Give it to the receiver right after.
        </p>
        <ErrorBanner error={state.error} />
        <Actions>
          <Button onClick={close}>Cancel</Button>
          <Button type="submit" variant="primary" busy={state.pending}>
            Rotate secret
          </Button>
        </Actions>
      </Form>
    </Dialog>
  );
}

function DeleteEndpointDialog({ endpoint, onClose, onDeleted }: { endpoint: Endpoint | null; onClose(): void; onDeleted(endpoint: Endpoint): void }) {
  const [remove, state] = useMutation(DeleteWebhookEndpointDocument);
  const close = () => {
    state.reset();
    onClose();
  };
  const submit = async () => {
    if (!endpoint) return;
    const result = await remove({ id: endpoint.id });
    if (!result) return;
    state.reset();
    onDeleted(endpoint);
  };
  return (
    <Dialog open={endpoint !== null} title="Delete this endpoint?" onClose={close}>
      <Form onSubmit={submit} aria-label="Delete endpoint">
        <p>
          Nothing more is sent to <code className="webhooks-url">{endpoint?.url}</code>, and its delivery history is deleted. This cannot be undone.
        </p>
        <ErrorBanner error={state.error} />
        <Actions>
          <Button onClick={close}>Cancel</Button>
          <Button type="submit" variant="danger" busy={state.pending}>
            Delete endpoint
          </Button>
        </Actions>
      </Form>
    </Dialog>
  );
}

function DeliveryDialog({
  delivery,
  canReplay,
  replaying,
  replayError,
  onReplay,
  onClose,
}: {
  delivery: Delivery | null;
  canReplay: boolean;
  replaying: boolean;
  replayError: unknown;
  onReplay(delivery: Delivery): Promise<void>;
  onClose(): void;
}) {
  const detail = useQuery(WebhookDeliveryDocument, { id: delivery?.id ?? "" }, { skip: delivery === null });
  const shown = detail.data?.webhookDelivery;
  const current = shown && shown.id === delivery?.id ? shown : undefined;
  const live = current !== undefined && !detail.error && isUnderway(current);
  useEffect(() => {
    if (!live || detail.loading) return;
    const timer = setTimeout(detail.reload, POLL_MS);
    return () => clearTimeout(timer);
  }, [live, detail.loading, detail.reload]);

  return (
    <Dialog open={delivery !== null} title={`Delivery of ${delivery?.event_type ?? "an event"}`} onClose={onClose}>
      <div className="stack">
        <ErrorBanner error={detail.error} />
        <ErrorBanner error={replayError} />
        {!current && !detail.error && <Loading />}
        {current && (
          <>
            <dl className="facts webhooks-facts">
              <div>
                <dt>Status</dt>
                <dd>
                  <DeliveryStatus delivery={current} />
                </dd>
              </div>
              <div>
                <dt>Response status</dt>
                <dd>
                  <Response delivery={current} />
                </dd>
              </div>
              <div>
                <dt>Attempts</dt>
                <dd>{formatNumber(current.attempts)}</dd>
              </div>
              <div>
                <dt>Took</dt>
                <dd>{current.duration_ms === null ? "—" : `${formatNumber(current.duration_ms)} ms`}</dd>
              </div>
              <div>
                <dt>Next attempt</dt>
                <dd>{nextAttempt(current)}</dd>
              </div>
              <div>
                <dt>Delivered</dt>
                <dd>{formatDateTime(current.delivered_at, "Not yet")}</dd>
              </div>
              <div>
                <dt>Created</dt>
                <dd>{formatDateTime(current.created_at)}</dd>
              </div>
              <div>
                <dt>Last error</dt>
                <dd>{current.last_error ? <code>{current.last_error}</code> : "None"}</dd>
              </div>
            </dl>
            <div className="stack">
              <h3 id="webhooks-response-body">Response body</h3>
              {current.response_body === null ? (
                <p className="muted">{current.attempts === 0 ? "Not sent yet." : "No answer arrived."}</p>
              ) : (
                <pre className="webhooks-body" tabIndex={0} role="region" aria-labelledby="webhooks-response-body">
                  {current.response_body === "" ? "(empty)" : current.response_body}
                </pre>
              )}
              <p className="field-hint">The first 2 KiB of the last answer.</p>
            </div>
            <dl className="facts webhooks-facts webhooks-ids">
              <div>
                <dt>Endpoint</dt>
                <dd>
                  <code>{current.endpoint.url}</code>
                </dd>
              </div>
              <div>
                <dt>Delivery (Kontor-Delivery)</dt>
                <dd>
                  <code>{current.id}</code>
                </dd>
              </div>
              <div>
                <dt>Event (webhook-id)</dt>
                <dd>
                  <code>{current.event_id}</code>
                </dd>
              </div>
            </dl>
          </>
        )}
        {!canReplay && <p className="muted">{ONLY_OWNERS}</p>}
        <Actions>
          <Button busy={detail.loading} onClick={detail.reload}>
            Refresh
          </Button>
          <Button disabled={!canReplay || !current} busy={replaying} onClick={() => current && void onReplay(current)}>
            Replay
          </Button>
          <Button variant="primary" onClick={onClose}>
            Close
          </Button>
        </Actions>
      </div>
    </Dialog>
  );
}
