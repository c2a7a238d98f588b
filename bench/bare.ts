/**
 * The bare handlers `npm run bench` compares Kontor with (issue 15): plain `node:http` and a `pg`
 * Pool (10 connections, as Kontor's), no framework. Run as a child process like the Kontor servers
 * (DATABASE_URL, PORT), on the same database.
 *
 * - The same key check as Kontor (server/auth/api-keys.ts; bench/peer-input.ts): `Authorization: Bearer ktr_live_…`,
 *   the key's format, the SHA-256 (hex) of it looked up on the unique hash index together with its
 *   workspace's plan, refused when revoked, the result (found or not) cached 4 s per hash; then the
 *   scope (leads.read or leads.write). Not done: last_used_at bookkeeping (Kontor writes it at most
 *   once a minute per key, off the request path) and every other policy.
 * - `GET /v1/leads/{id}`: one SELECT, the same JSON as Kontor's REST representation.
 * - `GET /v1/leads`: one SELECT of 21 rows newest first (`limit`, `cursor`), the same list envelope
 *   and the same cursor encoding.
 * - `POST /v1/leads`: BEGIN, INSERT the lead (RETURNING it), INSERT its `lead.created` event into
 *   the outbox (the representation as `data`, as schema/events.ts emit() does), COMMIT: the same
 *   statements in the same transaction as Kontor, answering 201 with the lead.
 * Plain parameterised queries (pg's default, no named prepared statements), like most code written
 * against pg. bench/run.ts checks every body against Kontor's before measuring.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import pg from "pg";
import { newId } from "../schema/lib/ids.ts";
import {
  type Credential,
  decodeCursor,
  encodeCursor,
  HttpError,
  KeyCheck,
  type KeyRow,
  LEAD_ID,
  leadInput,
  text,
} from "./peer-input.ts";

// A `date` column as the text PostgreSQL sends (YYYY-MM-DD), not a Date at local midnight.
pg.types.setTypeParser(pg.types.builtins.DATE, (value) => value);

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
pool.on("error", () => {});

// ---- the key check (bench/peer-input.ts): the key and its workspace's plan in one query ----

const keys = new KeyCheck(async (hash) => {
  const { rows } = await pool.query<KeyRow>(
    `select k.id, k.workspace_id as "workspaceId", k.scopes, k.revoked_at as "revokedAt", w.plan
       from api_keys k join workspaces w on w.id = k.workspace_id
      where k.hash = $1`,
    [hash],
  );
  return rows[0] ?? null;
});

// ---- the representation ----

const COLUMNS = `id, first_name, last_name, company_name, email, phone, source, notes, stage, priority, estimated_value,
  currency, expected_close_date, next_follow_up_at, last_contacted_at, stage_changed_at, client_id, created_at, updated_at`;

interface LeadRow {
  id: string;
  first_name: string;
  last_name: string | null;
  company_name: string | null;
  email: string | null;
  phone: string | null;
  source: string | null;
  notes: string | null;
  stage: string;
  priority: string;
  estimated_value: string | null;
  currency: string;
  expected_close_date: string | null;
  next_follow_up_at: Date | null;
  last_contacted_at: Date | null;
  stage_changed_at: Date | null;
  client_id: string | null;
  created_at: Date;
  updated_at: Date;
}

const iso = (date: Date | null) => (date ? date.toISOString() : null);

/** The 21 fields of Kontor's REST lead, in its order. */
function lead(row: LeadRow) {
  return {
    object: "lead",
    id: row.id,
    first_name: row.first_name,
    last_name: row.last_name,
    full_name: row.last_name ? `${row.first_name} ${row.last_name}` : row.first_name,
    company_name: row.company_name,
    email: row.email,
    phone: row.phone,
    source: row.source,
    notes: row.notes,
    stage: row.stage,
    priority: row.priority,
    estimated_value: row.estimated_value === null ? null : Number(row.estimated_value),
    currency: row.currency,
    expected_close_date: row.expected_close_date,
    next_follow_up_at: iso(row.next_follow_up_at),
    last_contacted_at: iso(row.last_contacted_at),
    stage_changed_at: iso(row.stage_changed_at),
    client_id: row.client_id,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

// ---- the handlers ----

function send(res: ServerResponse, status: number, body: unknown) {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(text),
  });
  res.end(text);
}

async function getLead(credential: Credential, id: string) {
  if (!LEAD_ID.test(id)) throw new HttpError(404, "not_found");
  const { rows } = await pool.query<LeadRow>(
    `select ${COLUMNS} from leads where id = $1 and workspace_id = $2`,
    [id, credential.workspaceId],
  );
  if (!rows[0]) throw new HttpError(404, "not_found");
  return lead(rows[0]);
}

async function listLeads(credential: Credential, query: URLSearchParams) {
  const limit = Number(query.get("limit") ?? 20);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw new HttpError(400, "validation_failed");
  const cursor = query.get("cursor");
  const params: unknown[] = [credential.workspaceId, limit + 1];
  if (cursor) params.push(decodeCursor(cursor));
  const { rows } = await pool.query<LeadRow>(
    `select ${COLUMNS} from leads where workspace_id = $1${cursor ? " and id < $3" : ""} order by id desc limit $2`,
    params,
  );
  const hasMore = rows.length > limit;
  const data = (hasMore ? rows.slice(0, limit) : rows).map(lead);
  return {
    object: "list",
    data,
    has_more: hasMore,
    next_cursor: hasMore ? encodeCursor(data[data.length - 1]!.id) : null,
  };
}

async function createLead(credential: Credential, body: Record<string, unknown>) {
  const { firstName, lastName, estimatedValue } = leadInput(body);
  const values = [
    newId("lead"),
    credential.workspaceId,
    firstName,
    lastName,
    text(body.company_name),
    text(body.email)?.toLowerCase() ?? null,
    text(body.phone),
    text(body.source),
    text(body.notes),
    text(body.stage) ?? "new",
    text(body.priority) ?? "medium",
    estimatedValue,
    text(body.currency) ?? "USD",
    text(body.expected_close_date),
    text(body.next_follow_up_at),
    text(body.last_contacted_at),
  ];
  const client = await pool.connect();
  try {
    await client.query("begin");
    const { rows } = await client.query<LeadRow>(
      `insert into leads (id, workspace_id, first_name, last_name, company_name, email, phone, source, notes, stage, priority,
         estimated_value, currency, expected_close_date, next_follow_up_at, last_contacted_at, created_at, updated_at)
       values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, now(), now())
       returning ${COLUMNS}`,
      values,
    );
    const created = lead(rows[0]!);
    await client.query(
      `insert into events (id, workspace_id, type, data) values ($1, $2, 'lead.created', $3)`,
      [newId("event"), credential.workspaceId, JSON.stringify(created)],
    );
    await client.query("commit");
    return created;
  } catch (error) {
    await client.query("rollback").catch(() => {});
    throw (error as { code?: string }).code === "22P02" || (error as { code?: string }).code === "22007"
      ? new HttpError(400, "validation_failed")
      : error;
  } finally {
    client.release();
  }
}

function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > 1_000_000) reject(new HttpError(413, "payload_too_large"));
      else chunks.push(chunk);
    });
    req.on("end", () => {
      try {
        const body: unknown = JSON.parse(Buffer.concat(chunks).toString("utf8"));
        if (typeof body !== "object" || body === null || Array.isArray(body)) throw new Error();
        resolve(body as Record<string, unknown>);
      } catch {
        reject(new HttpError(400, "invalid_json"));
      }
    });
    req.on("error", reject);
  });
}

async function handle(req: IncomingMessage, res: ServerResponse) {
  const url = new URL(req.url ?? "/", "http://bare");
  if (url.pathname === "/ready") return send(res, 200, { ok: true });
  const credential = await keys.credentialOf(req.headers.authorization);
  if (!credential) throw new HttpError(401, "invalid_token");
  const need = (scope: string) => {
    if (!credential.scopes.has(scope)) throw new HttpError(403, "insufficient_scope");
  };
  if (url.pathname === "/v1/leads" && req.method === "GET") {
    need("leads.read");
    return send(res, 200, await listLeads(credential, url.searchParams));
  }
  if (url.pathname === "/v1/leads" && req.method === "POST") {
    need("leads.write");
    return send(res, 201, await createLead(credential, await readJson(req)));
  }
  if (url.pathname.startsWith("/v1/leads/") && req.method === "GET") {
    need("leads.read");
    return send(
      res,
      200,
      await getLead(credential, decodeURIComponent(url.pathname.slice("/v1/leads/".length))),
    );
  }
  throw new HttpError(404, "not_found");
}

const server = createServer((req, res) => {
  handle(req, res).catch((error: unknown) => {
    if (error instanceof HttpError) return send(res, error.status, { error: { code: error.code } });
    console.error(error);
    send(res, 500, { error: { code: "internal_error" } });
  });
});
server.keepAliveTimeout = 5_000;
server.listen(Number(process.env.PORT ?? 4000), "0.0.0.0");

const stop = () => {
  server.closeAllConnections();
  server.close(() => void pool.end().finally(() => process.exit(0)));
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
