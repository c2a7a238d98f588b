/**
 * How a user's code type-checks against `@kontor/sdk`: every call below compiles, and every line
 * after a `@ts-expect-error` must not (test/sdk-types/usage.test.ts compiles this file with tsc as
 * a consumer project would, and checks each of those lines fails on its own). Never run.
 */
import Kontor, {
  APIError,
  type Deleted,
  type FileObject,
  IdempotencyError,
  type Invoice,
  type Lead,
  type Page,
  PermissionError,
  RateLimitError,
  ValidationError,
  type WebhookEndpointWithSecret,
  type WithResponse,
} from "@kontor/sdk";
import {
  CreateLeadDocument,
  LeadDocument,
  type LeadQuery,
  type LeadStage,
  LeadsDocument,
  WorkspaceDocument,
} from "@kontor/sdk/graphql";

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function assertType<T extends true>(): T | undefined {
  return undefined;
}

export async function usage(kontor: Kontor): Promise<void> {
  // Construction.
  new Kontor({
    apiKey: "ktr_live_…",
    baseUrl: "https://kontor.example.com/v1",
    maxRetries: 3,
    timeout: 30_000,
    fetch,
  });
  new Kontor();
  // @ts-expect-error the API key is a string
  new Kontor({ apiKey: 42 });

  // Resources: bodies and answers typed from the generated schema types.
  const lead = await kontor.leads.create({
    full_name: "Ada Lovelace",
    stage: "qualified",
    estimated_value: 1200.5,
  });
  assertType<Equal<typeof lead, Lead>>();
  assertType<Equal<typeof lead.stage, LeadStage>>();
  assertType<Equal<typeof lead.estimated_value, number | null>>();
  assertType<Equal<typeof lead.expected_close_date, string | null>>();
  // @ts-expect-error a stage outside the enum
  await kontor.leads.create({ full_name: "Ada", stage: "closed" });
  // @ts-expect-error Money is a JSON number, not a string
  await kontor.leads.create({ full_name: "Ada", estimated_value: "1200" });
  // @ts-expect-error an unknown field
  await kontor.leads.create({ full_name: "Ada", nickname: "A" });
  // @ts-expect-error REST bodies are flat: the GraphQL-only relation `client` is not there
  void lead.client;
  // @ts-expect-error retrieve needs the id
  await kontor.leads.retrieve();
  await kontor.leads.update(lead.id, { stage: "won", company_name: null });
  const deleted: Deleted = await kontor.leads.del(lead.id);
  assertType<Equal<typeof deleted.deleted, boolean>>();
  const converted = await kontor.leads.convert(lead.id);
  void converted.client_id;

  const invoice: Invoice = await kontor.invoices.create({
    client_id: "cli_1",
    items: [{ description: "Work", quantity: 2, unit_price: 50 }],
  });
  await kontor.invoices.create({
    client_id: "cli_1",
    // @ts-expect-error items are an array (the REST facade refuses a single item)
    items: { description: "Work", quantity: 2, unit_price: 50 },
  });
  assertType<Equal<(typeof invoice.items)[number]["amount"], number>>();
  const payment = await kontor.invoices.payments.create(invoice.id, { amount: 10, payment_method: "card" });
  assertType<Equal<typeof payment.invoice.balance_due, number>>();
  // @ts-expect-error payment_method is required
  await kontor.invoices.payments.create(invoice.id, { amount: 10 });
  await kontor.invoices.send(invoice.id);
  await kontor.invoices.void(invoice.id);
  await kontor.inventory.items.list({ status: "low_stock" });
  await kontor.projects.tasks.create("prj_1", { title: "Cut gears", priority: "high" });
  await kontor.tasks.update("task_1", { status: "done" });
  const endpoint: WebhookEndpointWithSecret = await kontor.webhookEndpoints.create({
    url: "https://example.com/hook",
    events: ["*"],
  });
  assertType<Equal<typeof endpoint.secret, string>>();
  await kontor.webhookEndpoints.rotateSecret(endpoint.id);
  await kontor.requestLogs.stats({ days: 7 });
  await kontor.storage.retrieve();
  await kontor.agentRegistrations.revoke("areg_1");

  // Lists: a page, or every item.
  const page: Page<Lead> = await kontor.leads.list({ stage: "won", limit: 10 });
  assertType<Equal<typeof page.has_more, boolean>>();
  assertType<Equal<typeof page.next_cursor, string | null>>();
  const next = await page.nextPage();
  assertType<Equal<typeof next, Page<Lead> | null>>();
  for await (const each of kontor.leads.list({ stage: "won" })) assertType<Equal<typeof each, Lead>>();
  // @ts-expect-error list filters are typed
  kontor.leads.list({ stage: 1 });

  // Request options and the raw response.
  await kontor.leads.create(
    { full_name: "x" },
    { idempotencyKey: "order-42", timeout: 1_000, maxRetries: 0 },
  );
  // @ts-expect-error an unknown request option
  await kontor.leads.create({ full_name: "x" }, { retries: 3 });
  const raw: WithResponse<Lead> = await kontor.leads.retrieve(lead.id).withResponse();
  void raw.response.headers.get("x-request-id");
  void raw.rateLimit?.remaining;

  // Storage: JSON base64, raw bytes, downloads.
  const uploaded: FileObject = await kontor.buckets.objects.upload("bkt_1", {
    file_name: "a.txt",
    file: new Blob(["hi"]),
  });
  await kontor.buckets.objects.upload("bkt_1", {
    file_name: "a.txt",
    content_type: "text/plain",
    content_base64: "aGk=",
  });
  await kontor.buckets.objects.upload("bkt_1", { file_name: "a.bin", file: new Uint8Array([1, 2]) });
  // @ts-expect-error an upload needs its bytes (file) or content_base64
  await kontor.buckets.objects.upload("bkt_1", { file_name: "a.txt" });
  const content: Response = await kontor.objects.content(uploaded.id, { range: "bytes=0-9" });
  void content;
  const bytes: Uint8Array = await kontor.objects.download(uploaded.id);
  void bytes;

  // AI: JSON or a stream, by `stream`.
  const completion = await kontor.chat.completions.create({
    model: "gpt-4o-mini",
    messages: [{ role: "user", content: "Hi" }],
  });
  void completion.choices[0]?.message.content;
  const chunks = await kontor.chat.completions.create({ model: "gpt-4o-mini", messages: [], stream: true });
  for await (const chunk of chunks) void chunk.choices[0]?.delta.content;

  // GraphQL with typed documents.
  const result = await kontor.graphql(LeadDocument, { id: lead.id });
  assertType<Equal<typeof result, LeadQuery>>();
  void result.lead?.client?.name;
  const { leads } = await kontor.graphql(LeadsDocument, { stage: "won" });
  void leads.data[0]?.full_name;
  await kontor.graphql(WorkspaceDocument);
  await kontor.graphql(CreateLeadDocument, { full_name: "Grace" }, { idempotencyKey: "k" });
  // @ts-expect-error the document has a required variable
  await kontor.graphql(LeadDocument);
  // @ts-expect-error variables are typed
  await kontor.graphql(LeadDocument, { id: 1 });
  // @ts-expect-error results are typed
  void result.lead?.nope;

  // Errors.
  try {
    await kontor.workspace.retrieve();
  } catch (error) {
    if (error instanceof PermissionError) assertType<Equal<typeof error.requiredScope, string | undefined>>();
    if (error instanceof RateLimitError) assertType<Equal<typeof error.retryAfter, number | null>>();
    if (error instanceof ValidationError) assertType<Equal<typeof error.param, string | undefined>>();
    if (error instanceof IdempotencyError) assertType<Equal<typeof error.code, string | undefined>>();
    if (error instanceof APIError) {
      assertType<Equal<typeof error.status, number | undefined>>();
      assertType<Equal<typeof error.requestId, string | null>>();
      assertType<Equal<typeof error.headers, Headers>>();
    }
  }
}
