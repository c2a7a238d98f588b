const KIB = 1024;
const MIB = 1024 * KIB;

/**
 * docs/api/limits.md: the most a request body may hold, by family of routes. Known from the path
 * alone, so a body is refused (413 `payload_too_large`) before a byte of it is read when its
 * Content-Length says more, and as soon as it passes the limit when it comes chunked
 * (server/http/request-body.ts). Raw uploads are not buffered: they stream to the store, up to
 * the storage quota. The routes that read their own body (the agent protocol, the dashboard's
 * account API, the AI routes) read these numbers too, never a copy of them.
 */
export const BODY_LIMITS = {
  /** `/oauth2/*`, `/agent/*`, `/dashboard/api/*`: forms and small JSON objects (an ID-JAG is a few KB). */
  protocol: 64 * KIB,
  /** `/v1/chat/completions`, `/v1/responses`. */
  ai: 1 * MIB,
  /** Every other route: REST, GraphQL. */
  api: 25 * MIB,
} as const;

const PROTOCOL_PATHS = /^\/(?:oauth2|agent|dashboard\/api)(?:\/|$)/;
const AI_PATHS = new Set(["/v1/chat/completions", "/v1/responses"]);

/** The body limit of the route at `pathname`, in bytes. */
export function bodyLimitOf(pathname: string): number {
  if (PROTOCOL_PATHS.test(pathname)) return BODY_LIMITS.protocol;
  if (AI_PATHS.has(pathname.replace(/\/$/, ""))) return BODY_LIMITS.ai;
  return BODY_LIMITS.api;
}

/** `65536` → `64 KiB`, as messages and the README write sizes. */
export function sizeLabel(bytes: number): string {
  if (bytes % MIB === 0) return `${bytes / MIB} MiB`;
  if (bytes % KIB === 0) return `${bytes / KIB} KiB`;
  return `${bytes} bytes`;
}
