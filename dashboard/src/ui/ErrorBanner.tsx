import type { ReactNode } from "react";
import { ApiError, describe } from "../api/errors.ts";

/**
 * An error as the API said it: its message, its code, and the request id to quote to support.
 * `role="alert"` has it read out when it appears. Renders nothing without an error.
 */
export function ErrorBanner({ error, title }: { error: unknown; title?: string }) {
  if (error === undefined || error === null) return null;
  const api = error instanceof ApiError ? error : undefined;
  return (
    <div className="banner banner-error" role="alert" data-code={api?.code}>
      {title && <strong>{title} </strong>}
      <span className="banner-message">{describe(error)}</span>
      {api && api.code !== "network_error" && (
        <span className="banner-meta">
          {" "}
          (<code>{api.code}</code>
          {api.requestId && (
            <>
              , request <code>{api.requestId}</code>
            </>
          )}
          )
        </span>
      )}
    </div>
  );
}

/** A short confirmation ("Key revoked."), read out politely. */
export function Notice({ children }: { children: ReactNode }) {
  if (!children) return null;
  return (
    <div className="banner banner-notice" role="status">
      {children}
    </div>
  );
}

/** The error of one field, when an API error's `param` names it. */
export function fieldError(error: unknown, param: string): string | undefined {
  return error instanceof ApiError && error.param === param ? error.message : undefined;
}
