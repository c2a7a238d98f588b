import type { ReactNode } from "react";
import { useQuery } from "../../api/hooks.ts";
import { RequestLogDocument } from "../../generated/graphql.ts";
import { BASE, Link, useLocation } from "../../router.tsx";
import { routeParam } from "../../routes.ts";
import { ErrorBanner } from "../../ui/ErrorBanner.tsx";
import { formatNumber } from "../../ui/format.ts";
import { Loading, Page, Panel } from "../../ui/Page.tsx";
import { useCredentialNames } from "./credentials.ts";
import { formatMs, StatusTag, shortId, timeLong } from "./log-format.tsx";
import "./logs.css";

/**
 * One request in detail, at `/dashboard/logs/:id` (its X-Request-Id), so that a request can be
 * linked to, bookmarked and reached with Back. Read through requestLogs(request_id:), for owners
 * and members alike; the key or agent is named when the viewer may list it.
 */

const PATH = `${BASE}/logs`;

const filterLink = (name: string, value: string) => `${PATH}?${new URLSearchParams({ [name]: value })}`;

export default function LogRequest() {
  const { path } = useLocation();
  const id = routeParam(`${PATH}/:id`, path);
  const query = useQuery(RequestLogDocument, { request_id: id });
  const { label } = useCredentialNames();
  const log = query.data?.requestLogs.data[0];

  const none = <span className="muted">none</span>;
  const item = (term: string, value: ReactNode) => (
    <div key={term}>
      <dt>{term}</dt>
      <dd>{value ?? none}</dd>
    </div>
  );

  return (
    <Page
      title="Request"
      actions={
        <Link to={PATH} className="button button-secondary">
          All requests
        </Link>
      }
    >
      <ErrorBanner error={query.error} />
      {query.loading && !query.data && <Loading label="Loading the request…" />}
      {query.data && !log && (
        <div className="banner banner-info" role="note">
          No request <code>{id}</code> in this workspace's logs: requests are kept 30 days.
        </div>
      )}
      {log && (
        <Panel title={`${log.method} ${log.route ?? "(no route)"}`}>
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
                  <code>{log.route}</code> <Link to={filterLink("route", log.route)}>Only this route</Link>
                </>
              ),
            )}
            {item("Status", <StatusTag status={log.status} />)}
            {item("Latency", formatMs(log.latency_ms))}
            {item("Error code", log.error_code && <code>{log.error_code}</code>)}
            {item(
              log.key_id?.startsWith("areg_") ? "Agent" : "Key",
              log.key_id && (
                <>
                  {label(log.key_id) !== shortId(log.key_id) && <>{label(log.key_id)} </>}
                  <code>{log.key_id}</code>{" "}
                  {log.key_id.startsWith("key_") && (
                    <Link to={filterLink("key", log.key_id)}>Only this key</Link>
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
        </Panel>
      )}
    </Page>
  );
}
