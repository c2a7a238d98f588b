/**
 * The peer `npm run bench` measures Kontor against: what a user would write instead of running
 * Kontor, Fastify with Kontor's own Prisma client (schema/generated/prisma over @prisma/adapter-pg,
 * built as server/db/open.ts builds it: a `pg` Pool of 10 with the same time-outs, the same
 * transaction options and error format). No limits, no request logs, no idempotency. Run as a child
 * process like the Kontor servers (DATABASE_URL, PORT), on the same database.
 *
 * - The key check both peers share (bench/peer-input.ts): `Authorization: Bearer ktr_live_…`, the key's format, the
 *   SHA-256 (hex) of it looked up with its workspace's plan (the Prisma query Kontor makes),
 *   refused when revoked, the result (found or not) cached 4 s per hash; then the scope.
 * - `GET /v1/leads/{id}`: findFirst by id and workspace, the same JSON as Kontor's REST lead.
 * - `GET /v1/leads`: findMany of limit + 1 rows newest first (`limit`, `cursor`), the same list
 *   envelope and cursor encoding.
 * - `POST /v1/leads`: an interactive transaction creating the lead, then its `lead.created` event
 *   in the outbox (the representation as `data`), answering 201 with the lead.
 * Fastify's defaults otherwise: its JSON body parser and JSON.stringify for replies (no schemas).
 * bench/run.ts checks every body against Kontor's before measuring.
 */
import { PrismaPg } from "@prisma/adapter-pg";
import Fastify, { type FastifyReply, type FastifyRequest } from "fastify";
import pg from "pg";
import { PrismaClient } from "../schema/generated/prisma/client.ts";
import { LeadStage, Priority } from "../schema/generated/prisma/enums.ts";
import { newId } from "../schema/lib/ids.ts";
import {
  type Credential,
  decodeCursor,
  encodeCursor,
  HttpError,
  KeyCheck,
  LEAD_ID,
  leadInput,
  text,
} from "./peer-input.ts";

const TIMEOUT_MS = 15_000;
const pool = new pg.Pool({
  connectionString: process.env.DATABASE_URL,
  max: 10,
  statement_timeout: TIMEOUT_MS,
  idle_in_transaction_session_timeout: TIMEOUT_MS + 5_000,
});
pool.on("error", () => {});
const prisma = new PrismaClient({
  adapter: new PrismaPg(pool),
  transactionOptions: { maxWait: TIMEOUT_MS, timeout: TIMEOUT_MS },
  errorFormat: "minimal",
});

// ---- the key check (bench/peer-input.ts), reading the key as Kontor's Prisma query does ----

const keys = new KeyCheck(async (hash) => {
  const row = await prisma.apiKey.findUnique({
    where: { hash },
    select: {
      id: true,
      workspaceId: true,
      scopes: true,
      revokedAt: true,
      workspace: { select: { plan: true } },
    },
  });
  return row && { ...row, plan: row.workspace.plan };
});

// ---- the representation ----

const LEAD_SELECT = {
  id: true,
  firstName: true,
  lastName: true,
  companyName: true,
  email: true,
  phone: true,
  source: true,
  notes: true,
  stage: true,
  priority: true,
  estimatedValue: true,
  currency: true,
  expectedCloseDate: true,
  nextFollowUpAt: true,
  lastContactedAt: true,
  stageChangedAt: true,
  clientId: true,
  createdAt: true,
  updatedAt: true,
} as const;

type LeadRow = NonNullable<Awaited<ReturnType<typeof prisma.lead.findFirst<{ select: typeof LEAD_SELECT }>>>>;

const iso = (date: Date | null) => (date ? date.toISOString() : null);

/** The 21 fields of Kontor's REST lead, in its order. */
function lead(row: LeadRow) {
  return {
    object: "lead",
    id: row.id,
    first_name: row.firstName,
    last_name: row.lastName,
    full_name: row.lastName ? `${row.firstName} ${row.lastName}` : row.firstName,
    company_name: row.companyName,
    email: row.email,
    phone: row.phone,
    source: row.source,
    notes: row.notes,
    stage: row.stage,
    priority: row.priority,
    estimated_value: row.estimatedValue === null ? null : Number(String(row.estimatedValue)),
    currency: row.currency,
    expected_close_date: row.expectedCloseDate ? row.expectedCloseDate.toISOString().slice(0, 10) : null,
    next_follow_up_at: iso(row.nextFollowUpAt),
    last_contacted_at: iso(row.lastContactedAt),
    stage_changed_at: iso(row.stageChangedAt),
    client_id: row.clientId,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

// ---- the handlers ----

/** A date or date-time of the body as a Date, or null; 400 when it is not one. */
function time(value: unknown, suffix = ""): Date | null {
  const given = text(value);
  if (given === null) return null;
  const date = new Date(`${given}${suffix}`);
  if (Number.isNaN(date.getTime())) throw new HttpError(400, "validation_failed");
  return date;
}

function oneOf<T extends string>(values: Record<string, T>, value: unknown, fallback: T): T {
  const given = text(value);
  if (given === null) return fallback;
  if (!Object.hasOwn(values, given)) throw new HttpError(400, "validation_failed");
  return values[given]!;
}

async function createLead(credential: Credential, body: Record<string, unknown>) {
  const { firstName, lastName, estimatedValue } = leadInput(body);
  const data = {
    id: newId("lead"),
    workspaceId: credential.workspaceId,
    firstName,
    lastName,
    companyName: text(body.company_name),
    email: text(body.email)?.toLowerCase() ?? null,
    phone: text(body.phone),
    source: text(body.source),
    notes: text(body.notes),
    stage: oneOf(LeadStage, body.stage, "new"),
    priority: oneOf(Priority, body.priority, "medium"),
    estimatedValue,
    currency: text(body.currency) ?? "USD",
    expectedCloseDate: time(body.expected_close_date, "T00:00:00Z"),
    nextFollowUpAt: time(body.next_follow_up_at),
    lastContactedAt: time(body.last_contacted_at),
  };
  return prisma.$transaction(async (tx) => {
    const created = lead(await tx.lead.create({ data, select: LEAD_SELECT }));
    await tx.event.create({
      data: { id: newId("event"), workspaceId: credential.workspaceId, type: "lead.created", data: created },
    });
    return created;
  });
}

const app = Fastify({ logger: false, keepAliveTimeout: 5_000, bodyLimit: 1_000_000 });

/** The request's credential with `scope`, or a 401/403. */
async function authorize(request: FastifyRequest, scope: string): Promise<Credential> {
  const credential = await keys.credentialOf(request.headers.authorization);
  if (!credential) throw new HttpError(401, "invalid_token");
  if (!credential.scopes.has(scope)) throw new HttpError(403, "insufficient_scope");
  return credential;
}

app.get("/ready", async () => ({ ok: true }));

app.get<{ Params: { id: string } }>("/v1/leads/:id", async (request) => {
  const credential = await authorize(request, "leads.read");
  const { id } = request.params;
  if (!LEAD_ID.test(id)) throw new HttpError(404, "not_found");
  const row = await prisma.lead.findFirst({
    where: { id, workspaceId: credential.workspaceId },
    select: LEAD_SELECT,
  });
  if (!row) throw new HttpError(404, "not_found");
  return lead(row);
});

app.get<{ Querystring: { limit?: string; cursor?: string } }>("/v1/leads", async (request) => {
  const credential = await authorize(request, "leads.read");
  const limit = Number(request.query.limit ?? 20);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw new HttpError(400, "validation_failed");
  const cursor = request.query.cursor;
  const rows = await prisma.lead.findMany({
    where: { workspaceId: credential.workspaceId, ...(cursor && { id: { lt: decodeCursor(cursor) } }) },
    orderBy: { id: "desc" },
    take: limit + 1,
    select: LEAD_SELECT,
  });
  const hasMore = rows.length > limit;
  const data = (hasMore ? rows.slice(0, limit) : rows).map(lead);
  return {
    object: "list",
    data,
    has_more: hasMore,
    next_cursor: hasMore ? encodeCursor(data[data.length - 1]!.id) : null,
  };
});

app.post<{ Body: unknown }>("/v1/leads", async (request, reply) => {
  const credential = await authorize(request, "leads.write");
  const body = request.body;
  if (typeof body !== "object" || body === null || Array.isArray(body))
    throw new HttpError(400, "invalid_json");
  reply.code(201);
  return createLead(credential, body as Record<string, unknown>);
});

app.setNotFoundHandler((_request, reply) => reply.code(404).send({ error: { code: "not_found" } }));

app.setErrorHandler(
  (error: Error & { statusCode?: number }, _request: FastifyRequest, reply: FastifyReply) => {
    if (error instanceof HttpError) return reply.code(error.status).send({ error: { code: error.code } });
    // Fastify's own refusals: a body that is not JSON, too large, or of another type.
    const status = error.statusCode ?? 500;
    if (status === 400) return reply.code(400).send({ error: { code: "invalid_json" } });
    if (status === 413) return reply.code(413).send({ error: { code: "payload_too_large" } });
    if (status === 415) return reply.code(415).send({ error: { code: "unsupported_media_type" } });
    console.error(error);
    return reply.code(500).send({ error: { code: "internal_error" } });
  },
);

await app.listen({ port: Number(process.env.PORT ?? 4000), host: "0.0.0.0" });

const stop = () => {
  void app
    .close()
    .then(() => prisma.$disconnect())
    .then(() => pool.end())
    .finally(() => process.exit(0));
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
