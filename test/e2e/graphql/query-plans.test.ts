import { createHash } from "node:crypto";
import { beforeAll, expect, it } from "vitest";
import { SCOPES } from "../../../schema/lib/scopes.ts";
import { type ApiSession, createUser, sessionGraphql, signInApi } from "../../support/dashboard.ts";
import { rest } from "../../support/http.ts";
import type { TestServer } from "../../support/server.ts";
import { explainPlan, recordSql, type Statement } from "../../support/sql.ts";
import { e2e } from "../../support/suite.ts";

/**
 * Issue 15: every list query is served by an index, never by a sequential scan, on tables far
 * bigger than the workspace that lists them: 100 000 leads and 100 000 request logs, 20 000–40 000
 * rows in every other listed table. The SQL is not written here: it is what the server sends to its
 * driver while it answers the real request (REST, or GraphQL for the session-only lists), recorded
 * at the driver and EXPLAINed with the same parameters, so a change in a resolver or in Prisma is
 * checked too.
 *
 * Two tenants list: a large one, holding a quarter of every table (where a sequential scan is most
 * tempting; the planner may also walk the primary key newest first and stop after a page, which is
 * as good), and a small one, holding 1 row in 200, which must use the index made for the query.
 */

// ---------------------------------------------------------------------------------------------
// Plans
// ---------------------------------------------------------------------------------------------

/** KONTOR_TEST_PLANS=1 prints every plan and how long the seeding took. */
const show = (text: string) => process.env.KONTOR_TEST_PLANS && console.log(text);

interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Index Name"?: string;
  "Index Cond"?: string;
  "Recheck Cond"?: string;
  Filter?: string;
  Plans?: PlanNode[];
}

const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)];

const explain = (server: TestServer, statement: Statement) => explainPlan<PlanNode>(server, statement);

/** One line per node, indented: what a failed expectation prints. */
function describePlan(node: PlanNode, depth = 0): string {
  const on = [
    node["Relation Name"] && `on ${node["Relation Name"]}`,
    node["Index Name"] && `using ${node["Index Name"]}`,
    node["Index Cond"] && `(${node["Index Cond"]})`,
    node.Filter && `filter (${node.Filter})`,
  ]
    .filter(Boolean)
    .join(" ");
  return [
    `${"  ".repeat(depth)}${node["Node Type"]} ${on}`.trimEnd(),
    ...(node.Plans ?? []).map((child) => describePlan(child, depth + 1)),
  ].join("\n");
}

// ---------------------------------------------------------------------------------------------
// Data. Row g of a table belongs to workspace g % 4 (0: the large tenant, `$1`; 1–3: neighbours);
// every 200th row number comes once more for the small tenant (`$2`). Ids look like real ones
// (prefix, 26 characters that sort by g), and attributes vary with k, not with the workspace.
// ---------------------------------------------------------------------------------------------

const ROWS = { leads: 100_000, requestLogs: 100_000, tasks: 40_000, deliveries: 40_000, other: 20_000 };
const SMALL_EVERY = 200;
const NEIGHBOURS = [1, 2, 3].map((n) => `ws_01J${String(n).padStart(23, "0")}`);

/** Row n of a table, in the four big workspaces (`large`) or the small tenant's (`small`). */
const rowOf = (prefix: string, n: number, who: Who) =>
  `${prefix}_01J${String(n).padStart(22, "0")}${who === "large" ? "0" : "1"}`;
/** md5 of the row's number and kind: names made of it share few trigrams, like real ones. */
const md5Of = (n: number, who: Who) =>
  createHash("md5")
    .update(`${n}-${who === "large" ? "0" : "1"}`)
    .digest("hex");

/** The rows of a table of `n` rows: (g, k, ws, tail). */
const rows = (n: number) => `with r as (
  select g, g / 4 as k, (array[$1::text, ${NEIGHBOURS.map((w) => `'${w}'`).join(", ")}])[1 + g % 4] as ws, '0' as tail from generate_series(1, ${n}) g
  union all
  select ${SMALL_EVERY} * g, g, $2::text, '1' from generate_series(1, ${n / SMALL_EVERY}) g
)`;
const rowId = (prefix: string) => `'${prefix}_01J' || lpad(g::text, 22, '0') || tail`;
/** A row of another table in the same workspace: one of `spread` (one of `smallSpread` for the small tenant). */
const parentId = (prefix: string, spread: number, smallSpread = 1) =>
  `'${prefix}_01J' || case when tail = '0' then lpad((4 + g % 4 + 4 * (k % ${spread}))::text, 22, '0') || '0'
                           else lpad((${SMALL_EVERY} * (1 + k % ${smallSpread}))::text, 22, '0') || '1' end`;
const HEX = "md5(g || '-' || tail)";
/** The 10 characters of a ULID's time, in SQL, for milliseconds since 1970: request ids carry their arrival time. */
const ulidTime = (ms: string) =>
  Array.from(
    { length: 10 },
    (_, i) => `substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((${ms} >> ${45 - 5 * i}) & 31)::int + 1, 1)`,
  ).join(" || ");

function seedStatements(): string[] {
  const n = ROWS.other;
  return [
    `insert into workspaces (id, name, agent_auth_enabled, updated_at)
     select w, 'Neighbour ' || w, false, now() from unnest(array[${NEIGHBOURS.map((w) => `'${w}'`).join(", ")}]) w`,
    `${rows(ROWS.leads)}
     insert into leads (id, workspace_id, first_name, last_name, company_name, email, stage, updated_at)
     select ${rowId("lead")}, ws, initcap(substr(${HEX}, 1, 7)), initcap(substr(${HEX}, 8, 9)), 'Firm ' || substr(md5((k % 997)::text), 1, 6),
            substr(${HEX}, 17, 10) || '@example.com',
            (case k % 50 when 0 then 'won' when 1 then 'lost' else (array['new','contacted','qualified','proposal'])[1 + k % 4] end)::"LeadStage", now()
     from r`,
    `${rows(n)}
     insert into clients (id, workspace_id, name, company_name, email, updated_at)
     select ${rowId("cli")}, ws, initcap(substr(${HEX}, 1, 8)) || ' ' || initcap(substr(${HEX}, 9, 8)),
            'Firm ' || substr(md5((k % 500)::text), 1, 6), substr(${HEX}, 17, 10) || '@example.com', now()
     from r`,
    `${rows(n)}
     insert into invoices (id, workspace_id, document_type, number, status, client_id, issue_date, subtotal, tax_amount, total, updated_at)
     select ${rowId("inv")}, ws, (case when k % 25 = 3 then 'quote' else 'invoice' end)::"DocumentType",
            'INV-2026-' || lpad(g::text, 6, '0') || tail,
            (case k % 20 when 0 then 'void' when 1 then 'draft' when 2 then 'sent' else 'paid' end)::"InvoiceStatus",
            ${parentId("cli", 3000, 5)}, current_date, 100, 0, 100, now()
     from r`,
    `${rows(n)}
     insert into inventory_items (id, workspace_id, name, sku, category, description, status, updated_at)
     select ${rowId("item")}, ws, 'Item ' || substr(${HEX}, 1, 8), 'SKU-' || upper(substr(${HEX}, 9, 8)) || '-' || g || tail, 'category-' || (k % 50),
            'Stock item ' || substr(${HEX}, 17, 12),
            (case k % 30 when 0 then 'out_of_stock' when 1 then 'low_stock' else 'in_stock' end)::"StockStatus", now()
     from r`,
    `${rows(n)}
     insert into projects (id, workspace_id, name, description, client_id, status, updated_at)
     select ${rowId("prj")}, ws, 'Project ' || substr(${HEX}, 1, 8), 'About ' || substr(${HEX}, 9, 12),
            case when k % 2 = 0 then ${parentId("cli", 3000, 5)} end,
            (case k % 20 when 0 then 'archived' when 1 then 'on_hold' else 'active' end)::"ProjectStatus", now()
     from r`,
    // One big project per workspace.
    `${rows(ROWS.tasks)}
     insert into tasks (id, workspace_id, project_id, title, status, priority, assignee_email, updated_at)
     select ${rowId("task")}, ws, ${parentId("prj", 1)}, 'Task ' || g,
            (case k % 20 when 0 then 'todo' when 1 then 'in_progress' else 'done' end)::"TaskStatus",
            (case when k % 25 = 0 then 'urgent' else 'medium' end)::"Priority", 'worker' || (k % 200) || '@example.com', now()
     from r`,
    // Dispatched already: the server's dispatcher leaves them alone.
    `${rows(n)}
     insert into events (id, workspace_id, type, data, created_at, dispatched_at)
     select ${rowId("evt")}, ws, case when k % 25 = 0 then 'invoice.paid' else 'lead.created' end, '{}'::json, now(), now()
     from r`,
    `${rows(n)}
     insert into webhook_endpoints (id, workspace_id, url, events, is_active, secret_sealed, updated_at)
     select ${rowId("we")}, ws, 'https://example.com/hooks/' || g, '{*}', false, 'sealed', now()
     from r`,
    // Finished or held (no next attempt): nothing for the sender to claim.
    `${rows(ROWS.deliveries)}
     insert into webhook_deliveries (id, workspace_id, endpoint_id, event_id, event_type, status, attempts, updated_at)
     select ${rowId("whd")}, ws, ${parentId("we", 10, 5)}, ${parentId("evt", 4000, 100)},
            case when k % 25 = 0 then 'invoice.paid' else 'lead.created' end,
            (case k % 30 when 0 then 'failed' when 1 then 'retrying' else 'succeeded' end)::"WebhookDeliveryStatus", 1, now()
     from r`,
    // 27 days of traffic (within the 30 days' retention), each id a ULID of its created_at.
    `${rows(ROWS.requestLogs)}
     insert into request_logs (id, workspace_id, credential_id, method, route, status, latency_ms, created_at)
     select 'req_' || ${ulidTime("t.ms")} || lpad(g::text, 15, '0') || tail, ws, ${parentId("key", 10)}, 'GET',
            case when k % 50 = 0 then '/v1/invoices/{id}/void' else (array['/v1/leads','/v1/leads/{id}','/v1/clients','/graphql'])[1 + k % 4] end,
            case k % 40 when 0 then 500 when 1 then 404 else 200 end, g % 100, t.at
     from r, lateral (select now() - interval '27 days' + (g * interval '27 days') / ${ROWS.requestLogs} as at) a,
          lateral (select a.at, (extract(epoch from a.at) * 1000)::bigint as ms) t`,
    `${rows(n)}
     insert into agent_registrations (id, workspace_id, type, status, scopes, post_claim_scopes, updated_at)
     select ${rowId("areg")}, ws, 'service_auth',
            (case k % 20 when 0 then 'revoked' when 1 then 'pending' else 'active' end)::"AgentRegistrationStatus", '{}', '{}', now()
     from r`,
    // Revoked long ago (their hashes are of no key anyway).
    `${rows(n)}
     insert into api_keys (id, workspace_id, prefix, hash, scopes, revoked_at)
     select ${rowId("key")}, ws, 'ktr_live_seed', 'seed-' || g || tail, '{}', now() - interval '30 days'
     from r`,
    `${rows(n)}
     insert into buckets (id, workspace_id, name, updated_at)
     select ${rowId("bkt")}, ws, 'bucket-' || g || '-' || tail, now() from r`,
    // One big bucket per workspace.
    `${rows(n)}
     insert into objects (id, workspace_id, bucket_id, file_name, content_type, size_bytes, sha256, store_key, updated_at)
     select ${rowId("obj")}, ws, ${parentId("bkt", 1)}, substr(${HEX}, 1, 10) || case when k % 25 = 0 then '.png' else '.pdf' end,
            case when k % 25 = 0 then 'image/png' else 'application/pdf' end, 1, 'none', 'seed/' || g || '-' || tail, now()
     from r`,
  ];
}

const BIG_TABLES = [
  "leads",
  "clients",
  "invoices",
  "inventory_items",
  "projects",
  "tasks",
  "events",
  "webhook_endpoints",
  "webhook_deliveries",
  "request_logs",
  "agent_registrations",
  "api_keys",
  "buckets",
  "objects",
];

// ---------------------------------------------------------------------------------------------
// The list queries
// ---------------------------------------------------------------------------------------------

type Who = "large" | "small";

interface Tenant {
  who: Who;
  workspaceId: string;
  key: string;
  session: ApiSession;
}

interface Case {
  name: string;
  /** A REST path under /v1 (with the tenant's key), or a GraphQL query sent with the owner's session. */
  rest?: (who: Who) => string;
  graphql?: string;
  table: string;
  /** Picks the list's statement among those the request sent (default: the one ordered by id, newest first). */
  statement?: RegExp;
  /** The index made for the query: the small tenant's plan must use it. */
  uses: string[];
  /** What the large tenant's plan may use instead (default: `uses` or the primary key, walked newest first). */
  large?: string[];
  /** Only for the small tenant. */
  smallOnly?: true;
  /** A condition the plan's index must read with (a time window is a range of the index, not a filter). */
  bounded?: RegExp;
}

const DAY_MS = 86_400_000;
const tenDaysAgo = new Date(Date.now() - 10 * DAY_MS);
const dayAfter = new Date(tenDaysAgo.getTime() + DAY_MS);
/** A row of each tenant that `search` looks for. */
const SEARCHED: Record<Who, number> = { large: 20_000, small: 2_000 };
const ANCHOR: Record<Who, number> = { large: 4, small: SMALL_EVERY };
const anchor = (prefix: string, who: Who) => rowOf(prefix, ANCHOR[who], who);
const searched = (who: Who, from: number, length: number) =>
  md5Of(SEARCHED[who], who).slice(from, from + length);
const cursor = (lastId: string) => Buffer.from(`v1:${lastId}`, "utf8").toString("base64url");
const TOTALS = /percentile_cont[\s\S]*from request_logs(?![\s\S]*group by)/;

/**
 * A search reads a small tenant's rows through any index led by workspace_id (they are few); the
 * trigram index is what keeps a large tenant's search from reading all of its rows.
 */
const LEADS_OF_WORKSPACE = ["leads_workspace_id_id_idx", "leads_workspace_id_stage_id_idx"];
const ITEMS_OF_WORKSPACE = [
  "inventory_items_workspace_id_id_idx",
  "inventory_items_workspace_id_status_id_idx",
  "inventory_items_workspace_id_category_id_idx",
  "inventory_items_workspace_id_sku_key",
];

const cases: Case[] = [
  { name: "leads", rest: () => "/leads", table: "leads", uses: ["leads_workspace_id_id_idx"] },
  {
    name: "leads, a later page",
    rest: (who) => `/leads?cursor=${cursor(rowOf("lead", 50_000, who))}`,
    table: "leads",
    uses: ["leads_workspace_id_id_idx"],
  },
  {
    name: "leads by stage",
    rest: () => "/leads?stage=won",
    table: "leads",
    uses: ["leads_workspace_id_stage_id_idx"],
  },
  {
    name: "leads by search",
    rest: (who) => `/leads?search=${searched(who, 7, 9)}`,
    table: "leads",
    uses: ["leads_search_idx", ...LEADS_OF_WORKSPACE],
    large: ["leads_search_idx"],
  },
  {
    name: "leads by search of an e-mail",
    rest: (who) => `/leads?search=${searched(who, 16, 10)}%40example`,
    table: "leads",
    uses: ["leads_search_idx", ...LEADS_OF_WORKSPACE],
    large: ["leads_search_idx"],
  },
  {
    name: "leads by stage and search",
    rest: (who) => `/leads?stage=won&search=${searched(who, 7, 9)}`,
    table: "leads",
    uses: ["leads_search_idx", "leads_workspace_id_stage_id_idx"],
  },
  {
    name: "leads by a search too short for trigrams",
    rest: () => "/leads?search=zq",
    table: "leads",
    uses: LEADS_OF_WORKSPACE,
    smallOnly: true,
  },
  {
    name: "leads over GraphQL",
    graphql: "{ leads(stage: lost) { data { id } } }",
    table: "leads",
    uses: ["leads_workspace_id_stage_id_idx"],
  },
  { name: "clients", rest: () => "/clients", table: "clients", uses: ["clients_workspace_id_id_idx"] },
  {
    name: "clients by search",
    rest: (who) => `/clients?search=${searched(who, 8, 8)}`,
    table: "clients",
    uses: ["clients_search_idx", "clients_workspace_id_id_idx"],
    large: ["clients_search_idx"],
  },
  { name: "invoices", rest: () => "/invoices", table: "invoices", uses: ["invoices_workspace_id_id_idx"] },
  {
    name: "invoices by status",
    rest: () => "/invoices?status=void",
    table: "invoices",
    uses: ["invoices_workspace_id_status_id_idx"],
  },
  {
    name: "invoices by document type",
    rest: () => "/invoices?document_type=quote",
    table: "invoices",
    uses: ["invoices_workspace_id_document_type_id_idx"],
  },
  {
    name: "invoices by client",
    rest: (who) => `/invoices?client_id=${anchor("cli", who)}`,
    table: "invoices",
    uses: ["invoices_client_id_id_idx"],
  },
  {
    name: "inventory items",
    rest: () => "/inventory/items",
    table: "inventory_items",
    uses: ["inventory_items_workspace_id_id_idx"],
  },
  {
    name: "inventory items by status",
    rest: () => "/inventory/items?status=out_of_stock",
    table: "inventory_items",
    uses: ["inventory_items_workspace_id_status_id_idx"],
  },
  {
    name: "inventory items by category",
    rest: () => "/inventory/items?category=category-7",
    table: "inventory_items",
    uses: ["inventory_items_workspace_id_category_id_idx"],
  },
  {
    name: "inventory items by search",
    rest: (who) => `/inventory/items?search=${searched(who, 0, 8)}`,
    table: "inventory_items",
    uses: ["inventory_items_search_idx", ...ITEMS_OF_WORKSPACE],
    large: ["inventory_items_search_idx"],
  },
  { name: "projects", rest: () => "/projects", table: "projects", uses: ["projects_workspace_id_id_idx"] },
  {
    name: "projects by status",
    rest: () => "/projects?status=archived",
    table: "projects",
    uses: ["projects_workspace_id_status_id_idx"],
  },
  {
    name: "projects by client",
    rest: (who) => `/projects?client_id=${anchor("cli", who)}`,
    table: "projects",
    uses: ["projects_client_id_id_idx"],
  },
  {
    name: "projects by search",
    rest: (who) => `/projects?search=${searched(who, 0, 8)}`,
    table: "projects",
    uses: ["projects_search_idx", "projects_workspace_id_id_idx", "projects_workspace_id_status_id_idx"],
    large: ["projects_search_idx"],
  },
  {
    name: "tasks of a project",
    rest: (who) => `/projects/${anchor("prj", who)}/tasks`,
    table: "tasks",
    // Any index led by project_id bounds it to the project.
    uses: [
      "tasks_project_id_id_idx",
      "tasks_project_id_status_id_idx",
      "tasks_project_id_priority_id_idx",
      "tasks_project_id_assignee_email_id_idx",
    ],
  },
  {
    name: "tasks by status",
    rest: (who) => `/projects/${anchor("prj", who)}/tasks?status=todo`,
    table: "tasks",
    uses: ["tasks_project_id_status_id_idx"],
  },
  {
    name: "tasks by priority",
    rest: (who) => `/projects/${anchor("prj", who)}/tasks?priority=urgent`,
    table: "tasks",
    uses: ["tasks_project_id_priority_id_idx"],
  },
  {
    name: "tasks by assignee",
    rest: (who) => `/projects/${anchor("prj", who)}/tasks?assignee_email=worker7%40example.com`,
    table: "tasks",
    uses: ["tasks_project_id_assignee_email_id_idx"],
  },
  { name: "events", rest: () => "/events", table: "events", uses: ["events_workspace_id_id_idx"] },
  {
    name: "events by type",
    rest: () => "/events?type=invoice.paid",
    table: "events",
    uses: ["events_workspace_id_type_id_idx"],
  },
  {
    name: "webhook endpoints",
    rest: () => "/webhook-endpoints",
    table: "webhook_endpoints",
    uses: ["webhook_endpoints_workspace_id_id_idx"],
  },
  {
    name: "webhook deliveries",
    rest: () => "/webhook-deliveries",
    table: "webhook_deliveries",
    uses: ["webhook_deliveries_workspace_id_id_idx"],
  },
  {
    name: "webhook deliveries by endpoint",
    rest: (who) => `/webhook-deliveries?endpoint_id=${anchor("we", who)}`,
    table: "webhook_deliveries",
    uses: ["webhook_deliveries_workspace_id_endpoint_id_id_idx"],
  },
  {
    name: "webhook deliveries by event type",
    rest: () => "/webhook-deliveries?event_type=invoice.paid",
    table: "webhook_deliveries",
    uses: ["webhook_deliveries_workspace_id_event_type_id_idx"],
  },
  {
    name: "webhook deliveries by status",
    rest: () => "/webhook-deliveries?status=failed",
    table: "webhook_deliveries",
    uses: ["webhook_deliveries_workspace_id_status_id_idx"],
  },
  {
    name: "request logs",
    rest: () => "/request-logs",
    table: "request_logs",
    uses: ["request_logs_workspace_id_id_idx"],
  },
  {
    name: "request logs by key",
    rest: (who) => `/request-logs?key_id=${anchor("key", who)}`,
    table: "request_logs",
    uses: ["request_logs_workspace_id_credential_id_id_idx"],
  },
  {
    name: "request logs by status",
    rest: () => "/request-logs?status=500",
    table: "request_logs",
    uses: ["request_logs_workspace_id_status_id_idx"],
  },
  {
    name: "request logs by route",
    rest: () => `/request-logs?route=${encodeURIComponent("/v1/invoices/{id}/void")}`,
    table: "request_logs",
    uses: ["request_logs_workspace_id_route_id_idx"],
  },
  {
    name: "request logs of one day",
    rest: () => `/request-logs?from=${tenDaysAgo.toISOString()}&to=${dayAfter.toISOString()}`,
    table: "request_logs",
    uses: ["request_logs_workspace_id_id_idx"],
    bounded: /id >= 'req_\w+'::text\) AND \(id < 'req_\w+'::text/,
  },
  ...(["totals", "per day", "top endpoints"] as const).map(
    (part, index): Case => ({
      name: `request log stats of 7 days: ${part}`,
      rest: () => "/request-logs/stats?days=7",
      table: "request_logs",
      statement: [TOTALS, /group by 1/, /group by method, route/][index],
      uses: ["request_logs_workspace_id_id_idx"],
      // A quarter of the table in a quarter of the time: reading it in time order is as good.
      large: ["request_logs_workspace_id_id_idx", "request_logs_pkey", "request_logs_created_at_idx"],
      bounded: /id >= 'req_\w+'::text|created_at >= /,
    }),
  ),
  {
    name: "request log stats of 7 days of one key",
    rest: (who) => `/request-logs/stats?days=7&key_id=${anchor("key", who)}`,
    table: "request_logs",
    statement: TOTALS,
    uses: ["request_logs_workspace_id_credential_id_id_idx", "request_logs_workspace_id_id_idx"],
    bounded: /id >= 'req_\w+'::text|created_at >= /,
  },
  {
    name: "agent registrations",
    rest: () => "/agent-registrations",
    table: "agent_registrations",
    uses: ["agent_registrations_workspace_id_id_idx"],
  },
  {
    name: "agent registrations by status",
    rest: () => "/agent-registrations?status=revoked",
    table: "agent_registrations",
    uses: ["agent_registrations_workspace_id_status_id_idx"],
  },
  { name: "buckets", rest: () => "/buckets", table: "buckets", uses: ["buckets_workspace_id_id_idx"] },
  {
    name: "files of a bucket",
    rest: (who) => `/buckets/${anchor("bkt", who)}/objects`,
    table: "objects",
    uses: ["objects_bucket_id_id_idx"],
  },
  {
    name: "files by search",
    rest: (who) => `/buckets/${anchor("bkt", who)}/objects?search=${searched(who, 0, 10)}`,
    table: "objects",
    uses: ["objects_search_idx", "objects_bucket_id_id_idx"],
  },
  {
    name: "files by content type",
    rest: (who) => `/buckets/${anchor("bkt", who)}/objects?content_type=image/png`,
    table: "objects",
    uses: ["objects_bucket_id_id_idx"],
  },
  {
    name: "files by content family",
    rest: (who) => `/buckets/${anchor("bkt", who)}/objects?content_type=image/*`,
    table: "objects",
    uses: ["objects_bucket_id_id_idx"],
  },
  {
    name: "live API keys",
    graphql: "{ apiKeys { data { id } } }",
    table: "api_keys",
    uses: ["api_keys_workspace_id_revoked_at_idx"],
    large: ["api_keys_workspace_id_revoked_at_idx"],
  },
  {
    name: "API keys with the revoked ones",
    graphql: "{ apiKeys(include_revoked: true) { data { id } } }",
    table: "api_keys",
    uses: ["api_keys_workspace_id_id_idx"],
  },
];

e2e("query plans of the list queries", (server, stack) => {
  const tenants = {} as Record<Who, Tenant>;

  beforeAll(async () => {
    const prisma = server().running.db.prisma;
    const large = await createUser(server(), { label: "plans-large", plan: "max" });
    const small = await createUser(server(), { label: "plans-small", plan: "max" });
    // A bulk load builds the trigram indexes once at the end, as a restore does: several times faster
    // than filling them row by row. (B-tree indexes gain little that way: they stay.)
    const trigram = await prisma.$queryRawUnsafe<{ indexname: string; indexdef: string }[]>(
      "select indexname, indexdef from pg_indexes where schemaname = 'public' and indexdef like '%gin_trgm_ops%' order by indexname",
    );
    expect(trigram.map((index) => index.indexname)).toEqual([
      "clients_search_idx",
      "inventory_items_search_idx",
      "leads_search_idx",
      "objects_search_idx",
      "projects_search_idx",
    ]);
    for (const index of trigram) await prisma.$executeRawUnsafe(`drop index "${index.indexname}"`);
    let t = performance.now();
    for (const statement of seedStatements()) {
      await (statement.includes("$1")
        ? prisma.$executeRawUnsafe(statement, large.workspaceId, small.workspaceId)
        : prisma.$executeRawUnsafe(statement));
    }
    show(`[${stack}] rows inserted in ${Math.round(performance.now() - t)} ms`);
    t = performance.now();
    await prisma.$transaction(
      async (tx) => {
        await tx.$executeRawUnsafe("set local maintenance_work_mem = '256MB'");
        for (const index of trigram) await tx.$executeRawUnsafe(index.indexdef);
      },
      { timeout: 300_000 },
    );
    show(`[${stack}] trigram indexes built in ${Math.round(performance.now() - t)} ms`);
    t = performance.now();
    await prisma.$executeRawUnsafe("analyze");
    show(`[${stack}] analyzed in ${Math.round(performance.now() - t)} ms`);
    // Keys and sessions after the seeding: an HTTP connection left idle that long may be closed.
    for (const [who, user] of [
      ["large", large],
      ["small", small],
    ] as const) {
      tenants[who] = {
        who,
        workspaceId: user.workspaceId,
        key: (await server().key(user.workspaceId, [...SCOPES])).key,
        session: await signInApi(server(), user.email),
      };
    }
  }, 600_000);

  it("seeded tables of the sizes the plans are checked on", async () => {
    const prisma = server().running.db.prisma;
    const [counts] = await prisma.$queryRawUnsafe<Record<string, bigint>[]>(
      `select ${BIG_TABLES.map((table) => `(select count(*) from ${table}) as ${table}`).join(", ")}`,
    );
    expect(Number(counts!.leads)).toBeGreaterThanOrEqual(ROWS.leads);
    for (const table of BIG_TABLES) expect(Number(counts![table]), table).toBeGreaterThanOrEqual(ROWS.other);
  });

  for (const testCase of cases) {
    for (const who of ["large", "small"] as const) {
      if (who === "large" && testCase.smallOnly) continue;
      const accepted =
        who === "small" ? testCase.uses : (testCase.large ?? [...testCase.uses, `${testCase.table}_pkey`]);
      it(`${testCase.name} (${who} tenant): ${accepted.join(" or ")}, no sequential scan`, async () => {
        const tenant = tenants[who];
        let status = 0;
        const statements = await recordSql(async () => {
          if (testCase.rest) {
            status = (await rest(server().api, tenant.key).get(testCase.rest(who))).status;
          } else {
            await sessionGraphql(server(), tenant.session, testCase.graphql!, {}, tenant.workspaceId);
            status = 200;
          }
        });
        expect(status, testCase.name).toBe(200);
        const from = new RegExp(`from "public"\\."${testCase.table}"|from ${testCase.table}\\b`, "i");
        const pick = testCase.statement ?? /order by "(?:public"\."\w+|t\d+)"\."id" desc/i;
        const matching = statements.filter((s) => from.test(s.sql) && pick.test(s.sql));
        expect(
          matching.length,
          `the list's statement among:\n${statements.map((s) => s.sql).join("\n")}`,
        ).toBe(1);
        const plan = await explain(server(), matching[0]!);
        const nodes = nodesOf(plan);
        const shown = `[${stack}] ${matching[0]!.sql}\n${JSON.stringify(matching[0]!.values)}\n${describePlan(plan)}`;
        show(`[${stack}] ${testCase.name} (${who} tenant)\n${describePlan(plan)}`);
        expect(
          nodes.filter(
            (node) => node["Node Type"] === "Seq Scan" && BIG_TABLES.includes(node["Relation Name"] ?? ""),
          ),
          shown,
        ).toEqual([]);
        expect(
          nodes.some((node) => accepted.includes(node["Index Name"] ?? "")),
          shown,
        ).toBe(true);
        if (testCase.bounded)
          expect(
            nodes.some((node) => testCase.bounded!.test(node["Index Cond"] ?? "")),
            shown,
          ).toBe(true);
      });
    }
  }
});
