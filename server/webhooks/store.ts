import { TEST_EVENT_TYPE, type Tx } from "../../schema/events.ts";
import { Prisma, type PrismaClient } from "../../schema/generated/prisma/client.ts";
import { newId } from "../../schema/lib/ids.ts";
import { holdDeliveries } from "../../schema/lib/webhook-hold.ts";

/** Events fanned out per transaction. */
const FAN_OUT_BATCH = 500;
const DAY_MS = 86_400_000;

export interface DueDelivery {
  id: string;
  /** The delivery is due at this time (null: held while its endpoint is paused). */
  nextAttemptAt: Date | null;
  attempts: number;
}

/** One delivery taken by this process: it alone may send it until `lockedUntil`. */
export interface ClaimedDelivery {
  id: string;
  workspaceId: string;
  endpointId: string;
  eventId: string;
  eventType: string;
  attempts: number;
  lockedUntil: Date;
  url: string;
  secretSealed: string;
  eventCreatedAt: Date;
  eventData: unknown;
}

/** What one attempt came to, as the worker records it. */
export interface AttemptOutcome {
  status: "succeeded" | "retrying" | "failed";
  responseStatus: number | null;
  responseBody: string | null;
  lastError: string | null;
  durationMs: number;
  /** Milliseconds until the next attempt, when `status` is retrying. */
  retryInMs?: number;
  /** The endpoint answered 410 Gone: pause it. */
  gone?: boolean;
}

interface EventRow {
  id: string;
  workspace_id: string;
  type: string;
  created_at: Date;
}

interface EndpointRow {
  id: string;
  workspace_id: string;
  events: string[];
  is_active: boolean;
  created_at: Date;
}

/** An endpoint receives the events of its types that happened once it existed, never earlier ones. */
const receives = (endpoint: EndpointRow, event: EventRow) =>
  endpoint.workspace_id === event.workspace_id &&
  new Date(endpoint.created_at) <= new Date(event.created_at) &&
  (endpoint.events.includes("*") || endpoint.events.includes(event.type));

/**
 * Takes committed events nobody has fanned out yet (SKIP LOCKED: processes share the work, never
 * an event) and creates one delivery per subscribed endpoint, in the transaction that marks the
 * events dispatched. Deliveries to paused endpoints are created held. Returns the new deliveries.
 */
export async function fanOut(prisma: PrismaClient): Promise<{ events: number; deliveries: DueDelivery[] }> {
  return prisma.$transaction(async (tx) => {
    const events = await tx.$queryRaw<EventRow[]>`
      select id, workspace_id, type, created_at from events
      where dispatched_at is null
      order by id
      limit ${FAN_OUT_BATCH}::int
      for update skip locked`;
    if (events.length === 0) return { events: 0, deliveries: [] };
    const workspaces = [...new Set(events.map((event) => event.workspace_id))];
    const endpoints = await tx.$queryRaw<EndpointRow[]>`
      select id, workspace_id, events, is_active, created_at from webhook_endpoints where workspace_id = any(${workspaces}::text[])`;
    const rows = events.flatMap((event) =>
      endpoints
        .filter((endpoint) => receives(endpoint, event))
        .map((endpoint) => ({ id: newId("webhookDelivery"), event, endpoint })),
    );
    let deliveries: DueDelivery[] = [];
    if (rows.length > 0) {
      deliveries = await tx.$queryRaw<DueDelivery[]>`
        insert into webhook_deliveries (id, workspace_id, endpoint_id, event_id, event_type, status, attempts, next_attempt_at, created_at, updated_at)
        select d.id, d.workspace_id, d.endpoint_id, d.event_id, d.event_type, 'pending', 0,
               case when d.active then now() end, now(), now()
        from unnest(
          ${rows.map((row) => row.id)}::text[], ${rows.map((row) => row.event.workspace_id)}::text[],
          ${rows.map((row) => row.endpoint.id)}::text[], ${rows.map((row) => row.event.id)}::text[],
          ${rows.map((row) => row.event.type)}::text[], ${rows.map((row) => row.endpoint.is_active)}::boolean[]
        ) as d(id, workspace_id, endpoint_id, event_id, event_type, active)
        returning id, next_attempt_at as "nextAttemptAt", attempts`;
    }
    await tx.$executeRaw`update events set dispatched_at = now() where id = any(${events.map((event) => event.id)}::text[])`;
    return { events: events.length, deliveries };
  });
}

/** A delivery due now that nobody holds (a live lease) and whose endpoint may be sent to. */
const claimable = Prisma.sql`
  d.status in ('pending', 'retrying')
  and d.next_attempt_at <= now()
  and (d.locked_until is null or d.locked_until < now())`;

/** An arbitrary constant: the advisory lock that makes claims, in every process, take turns. */
const CLAIM_LOCK = 7_202_612;

export interface ClaimOptions {
  /** Deliveries this process has room for. */
  limit: number;
  leaseMs: number;
  /** In flight at once to one target host, across the deployment (docs/api/webhooks.md). */
  hostSlots: number;
  /** In flight at once for one workspace, across the deployment. */
  workspaceSlots: number;
}

/**
 * Claims up to `limit` due deliveries for this process, fairly (docs/api/webhooks.md, fair delivery):
 * - in turns: every workspace's oldest due delivery comes before any workspace's second, so a
 *   backlog, however large, never delays another workspace's next delivery;
 * - never past a cap: a target host (`hostname:port`) has at most `hostSlots` deliveries in flight
 *   and a workspace at most `workspaceSlots`, counting every live lease of every process. Claims
 *   take turns under an advisory lock, so each one counts what the ones before it took.
 * Each claim counts an attempt and holds the delivery for `leaseMs`, so no other process sends it
 * meanwhile; a process that dies mid-send lets the lease run out, and the delivery is sent again
 * (at least once). Each endpoint is one host, so it offers at most `hostSlots` candidates, read
 * from its own index range: a claim's work grows with the endpoints, not with the backlog.
 */
export async function claim(prisma: PrismaClient, options: ClaimOptions): Promise<ClaimedDelivery[]> {
  if (options.limit <= 0) return [];
  const { hostSlots, workspaceSlots } = options;
  return prisma.$transaction(async (tx) => {
    // Its own statement: the claim's snapshot is taken after the previous claim has committed.
    await tx.$executeRaw`select pg_advisory_xact_lock(${CLAIM_LOCK}::bigint)`;
    return tx.$queryRaw<ClaimedDelivery[]>`
      with busy as (
        select d.workspace_id, e.target_host
        from webhook_deliveries d join webhook_endpoints e on e.id = d.endpoint_id
        where d.locked_until >= now()
      ),
      busy_hosts as (select target_host, count(*)::int as n from busy group by target_host),
      busy_workspaces as (select workspace_id, count(*)::int as n from busy group by workspace_id),
      candidates as (
        select c.id, e.workspace_id, e.target_host, c.next_attempt_at
        from webhook_endpoints e
        cross join lateral (
          select d.id, d.next_attempt_at from webhook_deliveries d
          where d.endpoint_id = e.id and ${claimable} and (e.is_active or d.event_type = ${TEST_EVENT_TYPE})
          order by d.next_attempt_at
          limit ${hostSlots}::int
        ) c
        where e.target_host not in (select target_host from busy_hosts where n >= ${hostSlots}::int)
          and e.workspace_id not in (select workspace_id from busy_workspaces where n >= ${workspaceSlots}::int)
      ),
      turns as (
        select c.*, row_number() over (partition by c.workspace_id order by c.next_attempt_at, c.id) as turn
        from candidates c
      ),
      by_host as (
        select t.*, row_number() over (partition by t.target_host order by t.turn, t.next_attempt_at, t.id) as host_turn
        from turns t
      ),
      host_room as (
        select h.* from by_host h left join busy_hosts b on b.target_host = h.target_host
        where h.host_turn + coalesce(b.n, 0) <= ${hostSlots}::int
      ),
      by_workspace as (
        select r.*, row_number() over (partition by r.workspace_id order by r.turn) as workspace_turn
        from host_room r
      ),
      picked as (
        select w.id from by_workspace w left join busy_workspaces b on b.workspace_id = w.workspace_id
        where w.workspace_turn + coalesce(b.n, 0) <= ${workspaceSlots}::int
        order by w.workspace_turn, w.next_attempt_at, w.id
        limit ${options.limit}::int
      ),
      due as (
        select d.id from webhook_deliveries d
        where d.id in (select id from picked) and ${claimable}
        for update of d skip locked
      )
      update webhook_deliveries d
      set attempts = d.attempts + 1,
          locked_until = now() + ${options.leaseMs}::double precision * interval '1 millisecond',
          updated_at = now()
      from due, webhook_endpoints e, events ev
      where d.id = due.id and e.id = d.endpoint_id and ev.id = d.event_id
      returning d.id, d.workspace_id as "workspaceId", d.endpoint_id as "endpointId", d.event_id as "eventId",
                d.event_type as "eventType", d.attempts, d.locked_until as "lockedUntil", e.url,
                e.secret_sealed as "secretSealed", ev.created_at as "eventCreatedAt", ev.data as "eventData"`;
  });
}

/**
 * Records an attempt, if this process still holds the delivery. A retry of a delivery whose
 * endpoint was paused meanwhile is held instead of scheduled (test events excepted: they are
 * sent to paused endpoints too). Returns false when the lease was lost.
 */
export async function complete(
  prisma: PrismaClient,
  delivery: ClaimedDelivery,
  outcome: AttemptOutcome,
): Promise<boolean> {
  if (!outcome.gone) return (await record(prisma, delivery, outcome)) > 0;
  // A 410: the failed delivery and the paused endpoint are one change, never seen apart.
  return prisma.$transaction(async (tx) => {
    const updated = await record(tx, delivery, outcome);
    if (updated > 0) await disableGoneEndpoint(tx, delivery.endpointId);
    return updated > 0;
  });
}

function record(
  prisma: PrismaClient | Tx,
  delivery: ClaimedDelivery,
  outcome: AttemptOutcome,
): Promise<number> {
  // The attempt's row is written by the same statement, so the history never misses an attempt the
  // delivery counts, nor holds one whose lease was lost. Its count is the delivery's (0 or 1).
  return prisma.$executeRaw`
    with updated as (
    update webhook_deliveries d
    set status = ${outcome.status}::"WebhookDeliveryStatus",
        response_status = ${outcome.responseStatus}::int,
        response_body = ${outcome.responseBody}::text,
        last_error = ${outcome.lastError}::text,
        duration_ms = ${outcome.durationMs}::int,
        delivered_at = case when ${outcome.status}::text = 'succeeded' then now() end,
        next_attempt_at = case
          when ${outcome.status}::text <> 'retrying' then null
          when d.event_type = ${TEST_EVENT_TYPE} or exists (select 1 from webhook_endpoints e where e.id = d.endpoint_id and e.is_active)
            then now() + ${outcome.retryInMs ?? 0}::double precision * interval '1 millisecond'
        end,
        locked_until = null,
        updated_at = now()
    where d.id = ${delivery.id} and d.locked_until = ${delivery.lockedUntil}::timestamptz
    returning d.id, d.attempts)
    insert into webhook_delivery_attempts
      (delivery_id, number, response_status, response_body, error, duration_ms)
    select id, attempts, ${outcome.responseStatus}::int, ${outcome.responseBody}::text,
           ${outcome.lastError}::text, ${outcome.durationMs}::int
    from updated`;
}

/** A 410 means the receiver is gone for good: pause the endpoint and hold what waits for it. */
async function disableGoneEndpoint(tx: Tx, endpointId: string): Promise<void> {
  // updateMany: an endpoint deleted meanwhile is no error.
  await tx.webhookEndpoint.updateMany({
    where: { id: endpointId },
    data: { isActive: false, disabledReason: "gone" },
  });
  await holdDeliveries(tx, endpointId, true);
}

/** Deletes events older than `days` (their deliveries go with them), in slices. */
export async function deleteExpiredEvents(
  prisma: PrismaClient,
  days: number,
  now: Date = new Date(),
): Promise<number> {
  const cutoff = new Date(now.getTime() - days * DAY_MS);
  let total = 0;
  for (;;) {
    const deleted = await prisma.$executeRaw`
      delete from events where id in (select id from events where created_at < ${cutoff} limit 2000)`;
    total += deleted;
    if (deleted < 2000) return total;
  }
}
