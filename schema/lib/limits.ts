/**
 * Every size Kontor accepts or returns, in one place (docs/api/limits.md). REST and GraphQL read the
 * same numbers: strings and lists of every argument are checked against them before a resolver
 * runs (schema/lib/input-limits.ts), and GraphQL's cost rule prices responses with them.
 */

/** Characters (Unicode code points) of a string without a rule of its own. */
export const DEFAULT_TEXT_LENGTH = 200;
/** Items of a list argument without a rule of its own. */
export const DEFAULT_LIST_ITEMS = 100;

/** Longest string by the name of the argument or input field. */
export const TEXT_BY_NAME: Readonly<Record<string, number>> = {
  currency: 3,
  notes: 10_000,
  description: 10_000,
  email: 320,
  payer_email: 320,
  assignee_email: 320,
  phone: 64,
  sku: 100,
  supplier_sku: 100,
  category: 100,
  tax_id: 64,
  postal_code: 32,
  url: 2_048,
  issuer: 2_048,
  jwks_url: 2_048,
  cursor: 200,
  search: 200,
  file_name: 255,
  content_type: 255,
  // 25 MiB of bytes in base64: the body limit, so the body's own limit is the one that bites.
  content_base64: 4 * Math.ceil((25 * 1024 * 1024) / 3),
};

/** A bucket's name: 3 to this many of a-z, 0-9 and `-` (schema/resources/bucket.ts). */
export const BUCKET_NAME_LENGTH = 63;

/** Where one owner's field differs from the rule of its name (`Owner.field`; arguments: `Mutation.field.arg`). */
export const TEXT_BY_FIELD: Readonly<Record<string, number>> = {
  "Mutation.createBucket.name": BUCKET_NAME_LENGTH,
  "Bucket.name": BUCKET_NAME_LENGTH,
  "InvoiceItemInput.description": 500,
  "InvoiceItem.description": 500,
  "Mutation.recordPayment.notes": 500,
  "Payment.notes": 500,
  // Output only: priced at 4 bytes a character, so what a receiver or client sent (it may hold
  // control characters that JSON escapes in 6 bytes) counts 1.5 times its kept length.
  "Lead.full_name": 401,
  "WebhookDelivery.response_body": 3_072,
  "RequestLog.user_agent": 768,
  "AuditEvent.user_agent": 768,
};

/** Identifiers (`id`, `client_id`, …): far longer than any Kontor id, short enough to refuse garbage early. */
export const ID_LENGTH = 100;
/** An AI model id (GET /v1/models/{model}): the rule of a text without one of its own. */
export const MODEL_ID_LENGTH = DEFAULT_TEXT_LENGTH;

/** Most items of a list, by name. */
const ITEMS_BY_NAME: Record<string, number> = {
  items: 250,
  suppliers: 20,
  events: 32,
};

/** Payments one invoice takes (each one is listed in the invoice). */
export const MAX_PAYMENTS_PER_INVOICE = 100;
/** Tasks shown under a project in GraphQL (GET /projects/{id}/tasks pages through all of them). */
export const PROJECT_TASKS_SHOWN = 100;
/** Deliveries shown under a webhook endpoint in GraphQL (GET /webhook-deliveries?endpoint_id= pages through all). */
export const ENDPOINT_DELIVERIES_SHOWN = 20;

/** The most items a list field of a response holds, where that is not a page (`Type.field`). */
const OUTPUT_ITEMS: Record<string, number> = {
  "Invoice.items": ITEMS_BY_NAME.items!,
  "Invoice.payments": MAX_PAYMENTS_PER_INVOICE,
  "InventoryItem.suppliers": ITEMS_BY_NAME.suppliers!,
  "WebhookEndpoint.events": ITEMS_BY_NAME.events!,
  "WebhookEndpointWithSecret.events": ITEMS_BY_NAME.events!,
  "WebhookEndpoint.deliveries": ENDPOINT_DELIVERIES_SHOWN,
  "Project.tasks": PROJECT_TASKS_SHOWN,
  "RequestLogStats.daily": 90,
  "RequestLogStats.top_endpoints": 10,
};

/** The query string of a request, in bytes (414 beyond it): room for a GraphQL query sent by GET. */
export const MAX_QUERY_STRING_BYTES = 8_192;
/** How deeply a JSON body may nest objects and arrays. */
export const MAX_JSON_DEPTH = 32;
/**
 * The most a response may carry: a list stops early to stay within it (schema/lib/list-page.ts), and
 * GraphQL refuses before running a document whose other parts could carry more.
 */
export const RESPONSE_BUDGET_BYTES = 32 * 1024 * 1024;
/** The largest response an Idempotency-Key keeps for replay; a larger one is not replayable. */
export const MAX_IDEMPOTENT_RESPONSE_BYTES = 256 * 1024;
/** What one process's in-memory idempotency records (no Redis) hold at most in all; the oldest go first. */
export const MAX_IDEMPOTENCY_MEMORY_BYTES = 64 * 1024 * 1024;

/** Calendar years a date or date-time may have. */
export const MIN_YEAR = 1;
export const MAX_YEAR = 9999;

const isIdName = (name: string) => name === "id" || name.endsWith("_id");

/** The longest string `name` of `owner` (a type, or `Mutation.field` for arguments) may hold. */
export function maxTextLength(owner: string, name: string): number {
  return (
    TEXT_BY_FIELD[`${owner}.${name}`] ??
    TEXT_BY_NAME[name] ??
    (isIdName(name) ? ID_LENGTH : DEFAULT_TEXT_LENGTH)
  );
}

/** Kontor's own ids (`lead_` + 26 characters) are ASCII and at most this long when returned. */
const OUTPUT_ID_BYTES = 40;

/** The most bytes of JSON a returned string `name` of `owner` takes, quotes included. */
export function maxOutputTextBytes(owner: string, name: string): number {
  if (isIdName(name)) return 2 + OUTPUT_ID_BYTES;
  return 2 + 4 * maxTextLength(owner, name);
}

/** The most items list `name` may have. */
export function maxListItems(_owner: string, name: string): number {
  return ITEMS_BY_NAME[name] ?? DEFAULT_LIST_ITEMS;
}

/** The most items list field `name` of a response holds; a list without a rule counts as a full page. */
export function maxOutputItems(owner: string, name: string): number {
  return OUTPUT_ITEMS[`${owner}.${name}`] ?? DEFAULT_LIST_ITEMS;
}

/** What a text may not contain: NUL and other C0 controls except tab, line feed and carriage return. */
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f]/;
/** A UTF-16 surrogate that is not half of a pair: not a character, and not storable. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Why `text` is not Unicode Kontor can store as sent (a lone surrogate, `"\ud800"` in JSON), or null. */
export function unicodeProblem(text: string): string | null {
  return LONE_SURROGATE.test(text) ? "must be valid Unicode (it contains a lone surrogate)" : null;
}

/** Why `text` is refused, or null when it is fine. */
export function textProblem(text: string, maxLength: number): string | null {
  if (CONTROL.test(text)) {
    return text.includes("\u0000")
      ? "must not contain NUL characters"
      : "must not contain control characters other than tab and line breaks";
  }
  const unicode = unicodeProblem(text);
  if (unicode) return unicode;
  // Code points: a character outside the BMP counts once, as a reader would count it.
  if (text.length > maxLength && countCodePoints(text, maxLength) > maxLength) {
    return `must be at most ${maxLength} characters`;
  }
  return null;
}

function countCodePoints(text: string, stopAfter: number): number {
  let count = 0;
  for (const _ of text) if (++count > stopAfter) break;
  return count;
}

/**
 * The first string of a parsed JSON value, keys included, that unicodeProblem refuses, with where it
 * is as `param` names it (`items[2].name`); null when there is none. The body readers outside
 * GraphQL (the agent endpoints, the dashboard's account API) run it over their whole body, so no
 * field of theirs escapes it; REST and GraphQL check each argument (schema/lib/input-limits.ts).
 */
export function findUnicodeProblem(value: unknown, root = ""): { param: string; problem: string } | null {
  // Where a node is, as a chain to its parent: paths are spelled only for the one refused.
  interface At {
    parent: At | null;
    key: string | number;
  }
  const spell = (at: At | null): string => {
    const keys: (string | number)[] = [];
    for (let step = at; step; step = step.parent) keys.push(step.key);
    return keys
      .reverse()
      .reduce<string>(
        (out, key) => (typeof key === "number" ? `${out}[${key}]` : out ? `${out}.${key}` : key),
        root,
      );
  };
  const stack: [unknown, At | null][] = [[value, null]];
  while (stack.length > 0) {
    const [node, at] = stack.pop()!;
    if (typeof node === "string") {
      const problem = unicodeProblem(node);
      if (problem) return { param: spell(at).slice(0, 200), problem };
    } else if (Array.isArray(node)) {
      for (const [index, child] of node.entries()) stack.push([child, { parent: at, key: index }]);
    } else if (typeof node === "object" && node !== null) {
      for (const [key, child] of Object.entries(node)) {
        const problem = unicodeProblem(key);
        if (problem)
          return {
            param: spell({ parent: at, key }).slice(0, 200),
            problem: "is a field name that is not valid Unicode (it contains a lone surrogate)",
          };
        stack.push([child, { parent: at, key }]);
      }
    }
  }
  return null;
}
