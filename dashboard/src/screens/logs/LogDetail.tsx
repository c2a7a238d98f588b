import { type ReactNode, useEffect, useRef } from "react";
import { Button } from "../../ui/Button.tsx";
import { Dialog } from "../../ui/Dialog.tsx";
import { formatNumber } from "../../ui/format.ts";
import { type Filters, formatMs, type Log, StatusTag, shortId, timeLong } from "./log-format.tsx";

/** One request in detail. */
export function LogDetail({
  log,
  keyLabel,
  onClose,
  onFilter,
}: {
  log: Log | null;
  keyLabel(id: string | null): string;
  onClose(): void;
  onFilter(change: Partial<Filters>): void;
}) {
  const none = <span className="muted">none</span>;
  // Focus starts on Close (the dialog's own effect has opened it by now), not on a filter button.
  const actions = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (log) actions.current?.querySelector<HTMLButtonElement>("button")?.focus();
  }, [log]);
  const item = (term: string, value: ReactNode) => (
    <div key={term}>
      <dt>{term}</dt>
      <dd>{value ?? none}</dd>
    </div>
  );
  return (
    <Dialog open={log !== null} title="Request details" onClose={onClose}>
      {log && (
        <>
          <dl className="logs-detail" aria-label={`Request ${log.request_id}`}>
            {item("Request id", <code>{log.request_id}</code>)}
            {item(
              "Time",
              <>
                {timeLong.format(new Date(log.created_at))} <code className="logs-iso">{log.created_at}</code>
              </>,
            )}
            {item("Method", log.method)}
            {item(
              "Route",
              log.route && (
                <>
                  <code>{log.route}</code>{" "}
                  <Button variant="link" onClick={() => onFilter({ route: log.route ?? "" })}>
                    Only this route
                  </Button>
                </>
              ),
            )}
            {item("Status", <StatusTag status={log.status} />)}
            {item("Latency", formatMs(log.latency_ms))}
            {item("Error code", log.error_code && <code>{log.error_code}</code>)}
            {item(
              "Key",
              log.key_id && (
                <>
                  {keyLabel(log.key_id) !== shortId(log.key_id) && <>{keyLabel(log.key_id)} </>}
                  <code>{log.key_id}</code>{" "}
                  {log.key_id.startsWith("key_") && (
                    <Button variant="link" onClick={() => onFilter({ key: log.key_id ?? "" })}>
                      Only this key
                    </Button>
                  )}
                </>
              ),
            )}
            {item("Client IP", log.client_ip && <code>{log.client_ip}</code>)}
            {item("User agent", log.user_agent && <code>{log.user_agent}</code>)}
            {item("Model", log.model && <code>{log.model}</code>)}
            {item("Input tokens", log.input_tokens == null ? null : formatNumber(log.input_tokens))}
            {item("Output tokens", log.output_tokens == null ? null : formatNumber(log.output_tokens))}
          </dl>
          <div className="actions" ref={actions}>
            <Button variant="primary" onClick={onClose}>
              Close
            </Button>
          </div>
        </>
      )}
    </Dialog>
  );
}
