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

/** The old key of a rotation, still working until its grace period ends. */
export const isOld = (key: Key) => key.revoked_at !== null && !isRevoked(key);

/**
 * How a key's row buttons are named: its label and prefix, "old key" for a key in its grace
 * period, so that a rotated key's two rows never have buttons of the same name.
 *
 * @example buttonLabel(key) // "“Billing sync” (old key ktr_live_ab12…)"
 */
export const buttonLabel = (key: Key) => `${label(key)} (${isOld(key) ? "old key " : ""}${key.prefix}…)`;

/** The time left until `until`, roughly: "23 h", "45 min". */
export function timeLeft(until: string, now = Date.now()): string {
  const minutes = Math.max(0, Math.floor((new Date(until).getTime() - now) / 60_000));
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  return hours < 48 ? `${hours} h` : `${Math.floor(hours / 24)} days`;
}

/** Active, the old key of a rotation (with the time it has left), or revoked. */
export function Status({ apiKey }: { apiKey: Key }) {
  if (apiKey.revoked_at === null) return <span className="tag tag-ok">Active</span>;
  if (isRevoked(apiKey))
    return <span className="tag tag-bad">Revoked {formatDateTime(apiKey.revoked_at)}</span>;
  return (
    <span className="tag tag-warn" title={`Stops working at ${formatDateTime(apiKey.revoked_at)}`}>
      Old key, expires in {timeLeft(apiKey.revoked_at)}
    </span>
  );
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
