import type { ReactNode } from "react";
import { ApiError, describe } from "../api/errors.ts";

/**
 * An error as the API said it: one plain message, with its code and the request id to quote to
 * support behind a "Details" toggle. `role="alert"` has it read out when it appears. Renders
 * nothing without an error, or when `fields` names the field the error is about: that field shows
 * it under itself (`fieldError`), and an error is never shown twice.
 *
 * @example <ErrorBanner error={state.error} fields={["name", "email"]} />
 */
export function ErrorBanner({
  error,
  title,
  fields = [],
}: {
  error: unknown;
  title?: string;
  fields?: readonly string[];
}) {
  if (error === undefined || error === null) return null;
  if (fields.some((field) => fieldError(error, field) !== undefined)) return null;
  const api = error instanceof ApiError ? error : undefined;
  return (
    <div className="banner banner-error" role="alert" data-code={api?.code}>
      {title && <strong>{title} </strong>}
      <span className="banner-message">{describe(error)}</span>
      {api && api.code !== "network_error" && (
        <details className="banner-details">
          <summary>Details</summary>
          <span className="banner-meta">
            Code <code>{api.code}</code>
            {api.requestId && (
              <>
                , request <code>{api.requestId}</code>
              </>
            )}
          </span>
        </details>
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

/**
 * Why a role sees the screen's buttons greyed out ("Your role can read leads but not change
 * them."), read as a note.
 *
 * @example {!can("leads.write") && <RoleNote>{CANNOT_WRITE}</RoleNote>}
 */
export function RoleNote({ children }: { children: ReactNode }) {
  return (
    <div className="banner banner-info" role="note">
      {children}
    </div>
  );
}

/**
 * The error of one field, when an API error's `param` names it (a GraphQL argument's own name, or
 * the field of an `input` object: `input.name` is the field `name`), or one of its items
 * (`scopes[2]`) — but not a field of an item (`items[1].quantity`), which that field shows.
 */
export function fieldError(error: unknown, param: string): string | undefined {
  if (!(error instanceof ApiError) || error.param === undefined) return undefined;
  const name = error.param.replace(/^input\./, "");
  const item = name.startsWith(`${param}[`) && !name.slice(param.length).includes(".");
  return name === param || item ? error.message : undefined;
}
