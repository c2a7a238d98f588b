/**
 * What the two peers of `npm run bench` (bench/bare.ts, bench/fastify.ts) check the same way, so
 * they differ only in what they stand for (the driver and the framework): the key check as Kontor
 * makes it, the lead's id and list cursor, and the create's input. Each peer keeps its own queries.
 */
import { createHash } from "node:crypto";

/** An answer with this status and error code (the peers answer `{ error: { code } }`). */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
  ) {
    super(code);
  }
}

// ---- the key check ----

export interface Credential {
  id: string;
  workspaceId: string;
  plan: string;
  scopes: Set<string>;
  expiresAt: number | undefined;
}

/** A key's row as a peer reads it with its workspace's plan. */
export interface KeyRow {
  id: string;
  workspaceId: string;
  plan: string;
  scopes: string[];
  revokedAt: Date | null;
}

const KEY = /^ktr_live_[0-9A-Za-z]{43}$/;
const TTL_MS = 4_000;
const MAX_CACHED = 10_000;

/**
 * Kontor's key check (server/auth/api-keys.ts): `Authorization: Bearer ktr_live_…` in the key's
 * format, the SHA-256 (hex) of it looked up by `load`, refused when revoked; the result (found or
 * not) cached 4 s per hash, at most 10 000 hashes.
 *
 * @example
 * const keys = new KeyCheck((hash) => prisma.apiKey.findUnique({ where: { hash } }).then(toKeyRow));
 * const credential = await keys.credentialOf(request.headers.authorization); // null: 401
 */
export class KeyCheck {
  private readonly cache = new Map<string, { credential: Credential | null; expires: number }>();

  constructor(private readonly load: (hash: string) => Promise<KeyRow | null>) {}

  async credentialOf(authorization: string | undefined): Promise<Credential | null> {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? "");
    if (!match || !KEY.test(match[1]!)) return null;
    const hash = createHash("sha256").update(match[1]!).digest("hex");
    const now = Date.now();
    let cached = this.cache.get(hash);
    if (!cached || cached.expires <= now) {
      const row = await this.load(hash);
      const credential =
        row && (!row.revokedAt || row.revokedAt.getTime() > now)
          ? {
              id: row.id,
              workspaceId: row.workspaceId,
              plan: row.plan,
              scopes: new Set(row.scopes),
              expiresAt: row.revokedAt?.getTime(),
            }
          : null;
      if (this.cache.size >= MAX_CACHED) this.cache.clear();
      cached = { credential, expires: now + TTL_MS };
      this.cache.set(hash, cached);
    }
    const credential = cached.credential;
    return credential && (credential.expiresAt === undefined || credential.expiresAt > now)
      ? credential
      : null;
  }
}

// ---- ids and cursors ----

export const LEAD_ID = /^lead_[0-9A-HJKMNP-TV-Z]{26}$/;

/** Kontor's list cursor: base64url of `v1:<id>`. */
export const encodeCursor = (id: string) => Buffer.from(`v1:${id}`, "utf8").toString("base64url");

export function decodeCursor(cursor: string): string {
  const [version, id, ...rest] = Buffer.from(cursor, "base64url").toString("utf8").split(":");
  if (version !== "v1" || !id || rest.length || !LEAD_ID.test(id))
    throw new HttpError(400, "validation_failed");
  return id;
}

// ---- the create's input ----

/** A text field: trimmed, empty as null; 400 when it is not a string. */
export const text = (value: unknown): string | null => {
  if (value === undefined || value === null) return null;
  if (typeof value !== "string") throw new HttpError(400, "validation_failed");
  return value.trim() || null;
};

/** The fields of a create both peers read alike: the name (from `full_name` when no `first_name`) and the value. */
export function leadInput(body: Record<string, unknown>): {
  firstName: string;
  lastName: string | null;
  estimatedValue: string | null;
} {
  let first = text(body.first_name);
  let last = text(body.last_name);
  if (!first) {
    const full = text(body.full_name);
    if (!full) throw new HttpError(400, "validation_failed");
    const match = /^(\S+)\s+(.+)$/.exec(full);
    first = match ? match[1]! : full;
    if (body.last_name === undefined) last = match ? match[2]! : null;
  }
  const value = body.estimated_value;
  if (value !== undefined && value !== null && !(typeof value === "number" && value >= 0))
    throw new HttpError(400, "validation_failed");
  return {
    firstName: first,
    lastName: last,
    estimatedValue: typeof value === "number" ? String(value) : null,
  };
}
