import { SCOPES } from "../../../../schema/lib/scopes.ts";
import type { ApiKeyFieldsFragment } from "../../generated/graphql.ts";
import { formatDateTime } from "../../ui/format.ts";

/** An API key as the screen lists it. */
export type Key = ApiKeyFieldsFragment;

/** How a key is named in text: its name, or its prefix when it has none. */
export const label = (key: Key) => (key.name ? `“${key.name}”` : `${key.prefix}…`);

/** Revoked, and past any grace period. */
export const isRevoked = (key: Key) =>
  key.revoked_at !== null && new Date(key.revoked_at).getTime() <= Date.now();

/** Active, ending at a time (rotated with a grace period), or revoked. */
export function Status({ apiKey }: { apiKey: Key }) {
  if (apiKey.revoked_at === null) return <span className="tag tag-ok">Active</span>;
  if (isRevoked(apiKey))
    return <span className="tag tag-bad">Revoked {formatDateTime(apiKey.revoked_at)}</span>;
  return <span className="tag tag-warn">Ends {formatDateTime(apiKey.revoked_at)}</span>;
}

/** A key's scopes as tags; "every scope" when it has them all. */
export function Scopes({ scopes }: { scopes: readonly string[] }) {
  if (SCOPES.every((scope) => scopes.includes(scope))) return <span className="tag">every scope</span>;
  return (
    <>
      {scopes.map((scope) => (
        <span key={scope} className="tag">
          {scope}
        </span>
      ))}
    </>
  );
}
