import { useEffect } from "react";
import { useQuery } from "../../api/hooks.ts";
import { WebhookDeliveryDocument } from "../../generated/graphql.ts";
import { Button } from "../../ui/Button.tsx";
import { Dialog } from "../../ui/Dialog.tsx";
import { ErrorBanner } from "../../ui/ErrorBanner.tsx";
import { Actions } from "../../ui/Form.tsx";
import { formatDateTime, formatNumber } from "../../ui/format.ts";
import { Loading } from "../../ui/Page.tsx";
import { Table } from "../../ui/Table.tsx";
import {
  type Delivery,
  DeliveryStatus,
  isUnderway,
  nextAttempt,
  ONLY_OWNERS,
  POLL_MS,
  Response,
} from "./webhook-cells.tsx";

/** One delivery in detail (asked again while it is on its way), with its replay. */
export function DeliveryDialog({
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
    <Dialog
      open={delivery !== null}
      title={`Delivery of ${delivery?.event_type ?? "an event"}`}
      onClose={onClose}
    >
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
            {current.attempt_history.length > 0 && (
              <div className="stack">
                <h3>Attempts</h3>
                <Table
                  caption="Attempts"
                  rows={current.attempt_history}
                  rowKey={(attempt) => String(attempt.number)}
                  columns={[
                    { header: "Attempt", nowrap: true, cell: (attempt) => formatNumber(attempt.number) },
                    {
                      header: "Answer",
                      nowrap: true,
                      cell: (attempt) => (
                        <Response delivery={{ ...attempt, last_error: attempt.error, attempts: 1 }} />
                      ),
                    },
                    {
                      header: "Took",
                      nowrap: true,
                      cell: (attempt) => `${formatNumber(attempt.duration_ms)} ms`,
                    },
                    { header: "Time", cell: (attempt) => formatDateTime(attempt.created_at) },
                  ]}
                />
              </div>
            )}
            <div className="stack">
              <h3 id="webhooks-response-body">Response body</h3>
              {current.response_body === null ? (
                <p className="muted">{current.attempts === 0 ? "Not sent yet." : "No answer arrived."}</p>
              ) : (
                // biome-ignore lint/a11y/useSemanticElements: a <pre> that scrolls, labelled as a region; <section> would lose the preformatting.
                <pre
                  className="code-block"
                  // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must take focus to be scrolled by keyboard.
                  tabIndex={0}
                  role="region"
                  aria-labelledby="webhooks-response-body"
                >
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
          <Button
            disabled={!canReplay || !current}
            busy={replaying}
            onClick={() => current && void onReplay(current)}
          >
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
