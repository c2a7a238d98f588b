import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  DEFAULT_LIST_ITEMS,
  DEFAULT_TEXT_LENGTH,
  ID_LENGTH,
  MAX_IDEMPOTENT_RESPONSE_BYTES,
  MAX_JSON_DEPTH,
  MAX_PAYMENTS_PER_INVOICE,
  MAX_QUERY_STRING_BYTES,
  MAX_YEAR,
  MIN_YEAR,
  MODEL_ID_LENGTH,
  maxListItems,
  maxTextLength,
  RESPONSE_BUDGET_BYTES,
  TEXT_BY_FIELD,
  TEXT_BY_NAME,
} from "../../schema/lib/limits.ts";
import { PLAN_LIMITS, PLANS, type PlanLimits } from "../../schema/lib/plans.ts";
import { MAX_BODY_BYTES } from "../../server/http/request-body.ts";
import { SANDBOX_DATA_SHARE } from "../../server/policies/data-quota.ts";

/**
 * docs/api/limits.md states the enforced limits (schema/lib/limits.ts): each row of its table is read
 * and compared with the constants, and every named rule of limits.ts has its row. The OpenAPI
 * document needs no such test: it is generated from the same constants (server/rest/openapi.ts).
 */

const limitsPage = readFileSync(new URL("../../docs/api/limits.md", import.meta.url), "utf8");

/** The table of docs/api/limits.md, first column → second column. */
function limitsTable(): Map<string, string> {
  const section = limitsPage;
  const table = section.slice(
    section.indexOf("| what | limit |"),
    section.indexOf("\n\n", section.indexOf("| what | limit |")),
  );
  const rows = table.split("\n").slice(2);
  return new Map(
    rows.map((row) => row.split(" | ").map((cell) => cell.replace(/^\| ?| ?\|$/g, "")) as [string, string]),
  );
}

/** As the docs write numbers: a space between thousands (`2 048`, `10 000`). */
const spelled = (n: number) => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, " ");
const MiB = (bytes: number) => `${bytes / 1024 / 1024} MiB`;

/** Each text row, the limit it states, and the fields (`owner`, `name`) whose enforced limit it is. */
const TEXT_ROWS: [row: string, fields: [owner: string, name: string][]][] = [
  [
    "a text field without a rule of its own (names, titles, `source`, `reference`, `unit_of_measure`, address lines, an AI `model` id, …)",
    [
      ["LeadInput", "first_name"],
      ["Query.model", "model"],
    ],
  ],
  [
    "`email`, `payer_email`, `assignee_email`",
    [
      ["", "email"],
      ["", "payer_email"],
      ["", "assignee_email"],
    ],
  ],
  [
    "`phone`, `tax_id`",
    [
      ["", "phone"],
      ["", "tax_id"],
    ],
  ],
  [
    "`sku`, `supplier_sku`, `category`",
    [
      ["", "sku"],
      ["", "supplier_sku"],
      ["", "category"],
    ],
  ],
  ["`postal_code`", [["", "postal_code"]]],
  ["`currency`", [["", "currency"]]],
  [
    "`url` (webhook endpoints), `issuer`, `jwks_url` (trusted providers)",
    [
      ["", "url"],
      ["", "issuer"],
      ["", "jwks_url"],
    ],
  ],
  [
    "`notes`, `description` (long text: a lead's, a project's, a webhook endpoint's, …)",
    [
      ["", "notes"],
      ["", "description"],
      ["Mutation.createWebhookEndpoint", "description"],
    ],
  ],
  [
    "an invoice line's `description`, a payment's `notes`",
    [
      ["InvoiceItemInput", "description"],
      ["Mutation.recordPayment", "notes"],
    ],
  ],
  ["a bucket's `name`", [["Mutation.createBucket", "name"]]],
  [
    "`file_name`, `content_type` (uploads, in the body or the query string)",
    [
      ["", "file_name"],
      ["", "content_type"],
    ],
  ],
  [
    "ids in a path, query or body (`id`, `client_id`, …)",
    [
      ["", "id"],
      ["", "client_id"],
    ],
  ],
  [
    "`cursor`, `search`",
    [
      ["", "cursor"],
      ["", "search"],
    ],
  ],
];

/** Rules of limits.ts the table need not state: the body limit bounds this one first. */
const UNSTATED = new Set(["content_base64"]);

describe("docs/api/limits.md's table states the enforced limits", () => {
  const table = limitsTable();

  it.each(TEXT_ROWS)("%s", (row, fields) => {
    const stated = table.get(row);
    expect(stated, `no row "${row}" in docs/api/limits.md`).toBeDefined();
    const limits = new Set(fields.map(([owner, name]) => maxTextLength(owner, name)));
    expect(limits.size, `the row's fields have different limits: ${[...limits].join(", ")}`).toBe(1);
    expect(stated).toMatch(new RegExp(`^${spelled([...limits][0]!)} characters\\b`));
  });

  it("the text rule of every field name and owner in limits.ts has a row", () => {
    const named = new Set(
      TEXT_ROWS.flatMap(([, fields]) => fields.filter(([owner]) => owner === "").map(([, name]) => name)),
    );
    const owned = new Set(
      TEXT_ROWS.flatMap(([, fields]) => fields.map(([owner, name]) => `${owner}.${name}`)),
    );
    expect(Object.keys(TEXT_BY_NAME).filter((name) => !named.has(name) && !UNSTATED.has(name))).toEqual([]);
    // Input rules only: `Mutation.field.arg` and `…Input.field`; output types' own bounds price answers.
    const inputs = Object.keys(TEXT_BY_FIELD).filter(
      (key) => key.startsWith("Mutation.") || /^\w+Input\./.test(key),
    );
    expect(inputs.filter((key) => !owned.has(key))).toEqual([]);
    expect([DEFAULT_TEXT_LENGTH, MODEL_ID_LENGTH, ID_LENGTH]).toEqual([
      maxTextLength("LeadInput", "first_name"),
      maxTextLength("Query.model", "model"),
      maxTextLength("", "id"),
    ]);
  });

  it("the list, body, query string, response and date rows", () => {
    expect(table.get("lines of an invoice (`items`)")).toBe(spelled(maxListItems("", "items")));
    expect(table.get("suppliers of an inventory item")).toBe(spelled(maxListItems("", "suppliers")));
    expect(table.get("event names of a webhook endpoint")).toBe(spelled(maxListItems("", "events")));
    expect(table.get("any other list argument")).toBe(`${DEFAULT_LIST_ITEMS} items`);
    expect(table.get("payments of one invoice")).toMatch(
      new RegExp(`^${MAX_PAYMENTS_PER_INVOICE} \\(the ${MAX_PAYMENTS_PER_INVOICE + 1}st`),
    );
    expect(table.get("JSON body")).toMatch(
      new RegExp(`^${MiB(MAX_BODY_BYTES)} .*nested at most ${MAX_JSON_DEPTH} levels`),
    );
    expect(table.get("query string")).toMatch(new RegExp(`^${spelled(MAX_QUERY_STRING_BYTES)} bytes`));
    expect(table.get("a response")).toMatch(new RegExp(`^${MiB(RESPONSE_BUDGET_BYTES)} `));
    expect(table.get("a response kept for an `Idempotency-Key`")).toMatch(
      new RegExp(`^${MAX_IDEMPOTENT_RESPONSE_BYTES / 1024} KiB `),
    );
    expect(table.get("dates and date-times")).toMatch(new RegExp(`^years ${MIN_YEAR} to ${MAX_YEAR} `));
  });

  it("the rows by plan state PLAN_LIMITS", () => {
    /** `free 16 MB, plus 64 MB, …` as the docs write each plan's number. */
    const byPlan = (format: (n: number) => string, field: keyof PlanLimits) =>
      PLANS.map((plan) => `${plan} ${format(PLAN_LIMITS[plan][field] as number)}`).join(", ");
    const bytes = (n: number) =>
      n >= 1e12 ? `${n / 1e12} TB` : n >= 1e9 ? `${n / 1e9} GB` : `${n / 1e6} MB`;
    const rows: [row: string, field: keyof PlanLimits, format: (n: number) => string][] = [
      ["a workspace's stored records (the data quota, below)", "data_quota_bytes", bytes],
      ["a workspace's idempotency records, in all", "idempotency_bytes", bytes],
      ["a workspace's stored objects (the storage quota)", "storage_bytes", bytes],
      ["uploads of a workspace running at once (raw and JSON)", "concurrent_uploads", spelled],
      ["webhook endpoints of a workspace", "webhook_endpoints", spelled],
      [
        "general AI tokens of a workspace per UTC day (`/v1/responses` with `ai.responses`)",
        "ai_tokens_daily",
        spelled,
      ],
    ];
    for (const [row, field, format] of rows) {
      expect(table.get(row), `no row "${row}" in docs/api/limits.md`).toBeDefined();
      expect(table.get(row)).toMatch(new RegExp(`^${byPlan(format, field)}\\b`));
    }
    expect(table.get("a workspace's stored records (the data quota, below)")).toContain(
      `a sandbox ${bytes(PLAN_LIMITS.free.data_quota_bytes / SANDBOX_DATA_SHARE)}`,
    );
  });
});
