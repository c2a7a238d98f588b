import type { IncomingMessage, ServerResponse } from "node:http";
import { newId } from "../../schema/lib/ids.ts";
import { log } from "../observability/log.ts";
import { CORS_ALLOWED_METHODS } from "./cors.ts";

/** What `OPTIONS *` answers in `Allow`: every method some route serves. */
const SERVER_METHODS = [...CORS_ALLOWED_METHODS, "OPTIONS"].join(", ");

/** RFC 3986's `host [ ":" port ]`: an IP literal or a registered name (IPv4 included), no user info. */
const AUTHORITY = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9\-._~!$&'()*+,;=%]+)(?::[0-9]*)?$/;

/** An absolute-form target, `scheme://authority[/path][?query]` (RFC 9112 §3.2.2). */
const ABSOLUTE_FORM = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)([^#]*)$/;

type Verdict = { refuse: string } | { options: true } | undefined;

/** The host part of a URL made of `authority`, normalised (lower case, default port dropped); undefined when it is not one. */
function hostOf(scheme: string, authority: string): string | undefined {
  if (!AUTHORITY.test(authority)) return undefined;
  try {
    return new URL(`${scheme}://${authority}/`).host;
  } catch {
    return undefined;
  }
}

/**
 * Takes an absolute-form target (`GET http://host/v1/workspace`) as the origin-form one it stands for,
 * when it names the host the request was sent to (its Host header): this server is not a proxy.
 */
function fromAbsoluteForm(req: IncomingMessage, target: string): Verdict {
  const [, scheme = "", authority = "", rest = ""] = ABSOLUTE_FORM.exec(target) ?? [];
  if (!/^https?$/i.test(scheme))
    return { refuse: "The request target must be a path (`/v1/…`), or an http(s) URL of this server." };
  const named = hostOf(scheme.toLowerCase(), authority);
  if (named === undefined) return { refuse: "The request target's host is not a valid host." };
  const host = req.headers.host;
  if (host !== undefined && hostOf(scheme.toLowerCase(), host) !== named) {
    return {
      refuse: "The request target names another host than the Host header: this server is not a proxy.",
    };
  }
  // An HTTP/1.0 request may come without Host: the target's authority stands for it (RFC 9112 §3.2.2).
  if (host === undefined) req.headers.host = authority;
  req.url = rest.startsWith("/") ? rest : `/${rest}`;
  return undefined;
}

/** Why this request line and Host cannot be served as a request for a URL of this server, if they cannot. */
function verdict(req: IncomingMessage): Verdict {
  let hosts = 0;
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i]!;
    if (name.length === 4 && name.toLowerCase() === "host") hosts++;
  }
  if (hosts > 1) return { refuse: "The request has more than one Host header." };
  const host = req.headers.host;
  // HTTP/1.0 predates Host: such a request is served without one.
  if (host === undefined && req.httpVersion !== "1.0")
    return { refuse: "An HTTP/1.1 request must send a Host header." };
  if (host !== undefined && !AUTHORITY.test(host)) return { refuse: "The Host header is not a valid host." };
  const target = req.url ?? "";
  if (target === "*")
    return req.method === "OPTIONS"
      ? { options: true }
      : { refuse: "The request target `*` is for OPTIONS only." };
  const absolute = target.startsWith("/") ? undefined : fromAbsoluteForm(req, target);
  if (absolute) return absolute;
  // The URL @whatwg-node/server's normalizeNodeRequest makes of them must parse.
  if (!URL.canParse(`http://${req.headers.host ?? "localhost"}${req.url}`))
    return { refuse: "The request target and Host header do not make a valid URL." };
  return undefined;
}

/** Writes the API's error shape (docs/api/conventions-and-errors.md#errors) with a request id of its own, and closes the connection. */
function refuse(req: IncomingMessage, res: ServerResponse, message: string): void {
  const id = newId("request");
  const body = JSON.stringify({
    error: { type: "invalid_request_error", code: "bad_request", message, request_id: id },
  });
  log("warn", "request line refused", {
    request_id: id,
    method: req.method,
    http_version: req.httpVersion,
    reason: message,
  });
  res.writeHead(400, {
    "Content-Type": "application/json",
    "Content-Length": Buffer.byteLength(body),
    "X-Request-Id": id,
    Connection: "close",
  });
  res.end(body);
}

/**
 * Settles the request target and Host before Yoga builds its Request from them (`http://{Host}{target}`,
 * which throws on anything else than a path under a valid host). Answers, and returns true, when the
 * request is not one for a URL of this server:
 *
 * - an absolute-form target (`GET http://host:port/v1/…`) is served as its path when it names the
 *   Host header's host, and refused 400 otherwise;
 * - `OPTIONS *` (a question about the server as a whole) is answered 204 with `Allow`; `*` with
 *   another method is refused 400;
 * - an HTTP/1.1 request without Host, with two, or with one that is not a host, is refused 400
 *   (RFC 9112 §3.2); HTTP/1.0 without Host is served.
 *
 * Refusals are 400 `bad_request` in the API's error shape with `X-Request-Id`, like those of
 * server/http/client-error.ts.
 */
export function answerRequestTarget(req: IncomingMessage, res: ServerResponse): boolean {
  const outcome = verdict(req);
  if (!outcome) return false;
  if ("refuse" in outcome) {
    refuse(req, res, outcome.refuse);
    return true;
  }
  res.writeHead(204, { Allow: SERVER_METHODS, "X-Request-Id": newId("request") });
  res.end();
  return true;
}
