import { AgentAuth } from "./agents/index.js";
import { APIPromise, BaseClient, type HttpMethod, type RequestOptions } from "./lib/core.js";
import { KontorError } from "./lib/errors.js";
import { type ListEnvelope, Page, PagePromise } from "./lib/pagination.js";
import { documentText, isMutation } from "./lib/print.js";
import { Stream } from "./lib/streaming.js";
import type { DocumentTypeDecoration, TypedDocumentNode } from "./lib/typed-document.js";
import { AgentRegistrations, AgentSettingsResource, TrustedProviders } from "./resources/agent-resources.js";
import { Chat, Models, Responses } from "./resources/ai.js";
import { AuditEvents } from "./resources/audit-events.js";
import { Clients } from "./resources/clients.js";
import { Inventory } from "./resources/inventory.js";
import { Invoices } from "./resources/invoices.js";
import { Leads } from "./resources/leads.js";
import { Projects, Tasks } from "./resources/projects.js";
import { RequestLogs } from "./resources/request-logs.js";
import { Buckets, Objects, Storage } from "./resources/storage.js";
import { SummaryResource } from "./resources/summary.js";
import { Events, WebhookDeliveries, WebhookEndpoints } from "./resources/webhook-resources.js";
import { WorkspaceResource } from "./resources/workspace.js";
import type { ListItem, Result, Route } from "./types.js";
import { signWebhook, verifyWebhook } from "./webhooks/index.js";

export interface ClientOptions {
  /** An API key (`ktr_live_…`) or an agent access token (`ktr_agt_…`). Default: `KONTOR_API_KEY`. */
  apiKey?: string | undefined;
  /** The API's `{base_url}`, e.g. `https://kontor.example.com/v1`. Default: `KONTOR_BASE_URL`, else `http://localhost:4000/v1`. */
  baseUrl?: string | undefined;
  /** The GraphQL endpoint. Default: `baseUrl` with its final `/v1` replaced by `/graphql`. */
  graphqlUrl?: string | undefined;
  /** Retries of a failed attempt (connection errors, 409 `idempotency_in_progress`, 429, 5xx). Default 2. */
  maxRetries?: number | undefined;
  /** Milliseconds one attempt may take. Default 60 000. */
  timeout?: number | undefined;
  /** The longest `Retry-After` (seconds) the SDK waits out by itself; a longer one is thrown. Default 60. */
  maxRetryAfter?: number | undefined;
  /** A `fetch` implementation (default: the global one). */
  fetch?: typeof fetch | undefined;
  /** Headers sent with every request. */
  defaultHeaders?: Record<string, string> | undefined;
}

export const DEFAULT_BASE_URL = "http://localhost:4000/v1";

/** An environment variable, where there is an environment (Node); never in a browser. */
function env(name: string): string | undefined {
  const processLike = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  const value = processLike?.env?.[name];
  return value === undefined || value.trim() === "" ? undefined : value.trim();
}

/** A GraphQL document: a typed document (generated, or any `TypedDocumentNode`), or query text. */
export type GraphQLDocument<TResult, TVariables> =
  | TypedDocumentNode<TResult, TVariables>
  | (DocumentTypeDecoration<TResult, TVariables> & string)
  | string;

export interface GraphQLRequestOptions extends RequestOptions {
  /** Which operation of a document holding several to run. */
  operationName?: string;
}

/** Variables are required when the document has a required one, optional otherwise. */
// biome-ignore lint/complexity/noBannedTypes: `{} extends T` asks whether T has no required key.
export type GraphQLArgs<TVariables> = {} extends TVariables
  ? [variables?: TVariables, options?: GraphQLRequestOptions]
  : [variables: TVariables, options?: GraphQLRequestOptions];

function fillPath(template: string, values: ReadonlyArray<string>): string {
  let index = 0;
  return template.replace(/\{(\w+)\}/g, (_match, name: string) => {
    const value = values[index++];
    if (typeof value !== "string" || value === "")
      throw new KontorError(`Missing path parameter '${name}' for ${template}.`);
    return encodeURIComponent(value);
  });
}

/**
 * The Kontor API client: resource namespaces over REST (`kontor.leads.create(...)`) and
 * `kontor.graphql(document, variables)` over GraphQL, with one credential.
 *
 * @example
 * ```ts
 * import Kontor from "@kontor/sdk";
 * const kontor = new Kontor({ apiKey: process.env.KONTOR_API_KEY, baseUrl: "https://kontor.example.com/v1" });
 * const lead = await kontor.leads.create({ full_name: "Ada Lovelace", email: "ada@example.com" });
 * for await (const invoice of kontor.invoices.list({ status: "sent" })) console.log(invoice.invoice_number);
 * ```
 */
export class Kontor extends BaseClient {
  /** `Kontor.webhooks.verify(rawBody, headers, secret, { toleranceSeconds })`: a delivery's signatures and timestamp, then its typed event. */
  static readonly webhooks = { verify: verifyWebhook, sign: signWebhook } as const;
  /** The agent flow (discover, register, wait for the claim, exchange, refresh): `new Kontor.AgentAuth({ baseUrl })`. */
  static readonly AgentAuth = AgentAuth;

  /** `/v1/workspace`. */
  readonly workspace: WorkspaceResource = new WorkspaceResource(this);
  /** `/v1/summary`: how the business is doing. */
  readonly summary: SummaryResource = new SummaryResource(this);
  readonly leads: Leads = new Leads(this);
  readonly clients: Clients = new Clients(this);
  /** `inventory.items`. */
  readonly inventory: Inventory = new Inventory(this);
  /** Invoices and quotes; `invoices.payments` records payments. */
  readonly invoices: Invoices = new Invoices(this);
  /** Projects; `projects.tasks` lists and creates a project's tasks. */
  readonly projects: Projects = new Projects(this);
  /** Tasks by id. */
  readonly tasks: Tasks = new Tasks(this);
  readonly requestLogs: RequestLogs = new RequestLogs(this);
  readonly webhookEndpoints: WebhookEndpoints = new WebhookEndpoints(this);
  readonly webhookDeliveries: WebhookDeliveries = new WebhookDeliveries(this);
  readonly events: Events = new Events(this);
  /** Buckets; `buckets.objects` lists and uploads a bucket's objects. */
  readonly buckets: Buckets = new Buckets(this);
  /** Objects by id: metadata, delete, and their bytes (`content`, `download`). */
  readonly objects: Objects = new Objects(this);
  /** The workspace's storage usage. */
  readonly storage: Storage = new Storage(this);
  readonly agentSettings: AgentSettingsResource = new AgentSettingsResource(this);
  readonly trustedProviders: TrustedProviders = new TrustedProviders(this);
  readonly agentRegistrations: AgentRegistrations = new AgentRegistrations(this);
  /** The audit log (needs `audit.read`). */
  readonly auditEvents: AuditEvents = new AuditEvents(this);
  readonly models: Models = new Models(this);
  /** `chat.completions`, OpenAI-compatible. */
  readonly chat: Chat = new Chat(this);
  readonly responses: Responses = new Responses(this);

  /** The GraphQL endpoint (`{host_url}/graphql`). */
  readonly graphqlUrl: string;

  constructor(options: ClientOptions = {}) {
    const apiKey = options.apiKey ?? env("KONTOR_API_KEY");
    if (!apiKey) {
      throw new KontorError(
        "No API key: pass `apiKey` to `new Kontor({ apiKey })` or set the KONTOR_API_KEY environment variable.",
      );
    }
    const baseUrl = (options.baseUrl ?? env("KONTOR_BASE_URL") ?? DEFAULT_BASE_URL).replace(/\/+$/, "");
    const fetchImpl = options.fetch ?? (globalThis as { fetch?: typeof fetch }).fetch;
    if (typeof fetchImpl !== "function")
      throw new KontorError(
        "No fetch: pass `fetch` to `new Kontor({ fetch })` (Node 20+ and browsers have one).",
      );
    super({
      apiKey,
      baseUrl,
      maxRetries: options.maxRetries ?? 2,
      timeout: options.timeout ?? 60_000,
      maxRetryAfter: options.maxRetryAfter ?? 60,
      fetch: fetchImpl,
      defaultHeaders: options.defaultHeaders ?? {},
    });
    this.graphqlUrl =
      options.graphqlUrl ??
      (/\/v1$/.test(baseUrl) ? `${baseUrl.slice(0, -3)}/graphql` : `${baseUrl}/graphql`);
  }

  /**
   * Runs a GraphQL operation and returns its `data`, typed by the document
   * (`import { LeadDocument } from "@kontor/sdk/graphql"`). An answer with errors throws the error
   * class of the first one (`PermissionError` for `insufficient_scope`, …), carrying every error in
   * `graphqlErrors` and any partial `data`.
   *
   * @example
   * ```ts
   * import { LeadsDocument } from "@kontor/sdk/graphql";
   * const { leads } = await kontor.graphql(LeadsDocument, { stage: "won", limit: 10 });
   * // or query text: await kontor.graphql<{ workspace: { name: string } }>("{ workspace { name } }")
   * ```
   */
  graphql<TResult = Record<string, unknown>, TVariables = Record<string, unknown>>(
    document: GraphQLDocument<TResult, TVariables>,
    ...[variables, options]: GraphQLArgs<TVariables>
  ): APIPromise<TResult> {
    const { operationName, ...requestOptions } = options ?? {};
    const body: Record<string, unknown> = { query: documentText(document) };
    if (variables !== undefined) body.variables = variables;
    if (operationName) body.operationName = operationName;
    const answer = this.request<{ data: TResult }>({
      method: "POST",
      path: this.graphqlUrl,
      body,
      parseAs: "graphql",
      // Only mutations write: they alone need an Idempotency-Key (queries are retried freely).
      idempotent: isMutation(document, operationName),
      options: requestOptions,
    });
    return new APIPromise(answer.withResponse().then((result) => ({ ...result, data: result.data.data })));
  }

  /** @internal Calls a schema route by its key (`"GET /leads/{id}"`): path values in order, then its query (GET) or body. */
  _route<R extends Route>(
    route: R,
    path: ReadonlyArray<string>,
    params: object | undefined,
    options: RequestOptions | undefined,
  ): APIPromise<Result<R>> {
    const [method, template] = route.split(" ") as [HttpMethod, string];
    return this.request<Result<R>>({
      method,
      path: fillPath(template, path),
      ...(method === "GET" ? { query: params as Record<string, unknown> | undefined } : { body: params }),
      options,
    });
  }

  /** @internal A list route as pages: `await` for the first, `for await` for every item. */
  _list<R extends Route>(
    route: R,
    path: ReadonlyArray<string>,
    params: object | undefined,
    options: RequestOptions | undefined,
  ): PagePromise<ListItem<R>> {
    const [method, template] = route.split(" ") as [HttpMethod, string];
    const url = fillPath(template, path);
    const fetchPage = (query: Record<string, unknown>): PagePromise<ListItem<R>> => {
      const answer = this.request<ListEnvelope<ListItem<R>>>({
        method,
        path: url,
        query,
        options,
      }).withResponse();
      return new PagePromise(
        answer.then((result) => ({
          ...result,
          data: new Page(result.data, (cursor) => fetchPage({ ...query, cursor })),
        })),
      );
    };
    return fetchPage({ ...(params as Record<string, unknown> | undefined) });
  }

  /** @internal An OpenAI-compatible POST: JSON, or a `Stream` of events with `stream: true`. */
  _openaiPost<T, Event>(
    path: string,
    params: Record<string, unknown>,
    options: RequestOptions | undefined,
  ): APIPromise<T | Stream<Event>> {
    if (params.stream !== true) return this.request<T>({ method: "POST", path, body: params, options });
    const answer = this.request<Response>({
      method: "POST",
      path,
      body: params,
      parseAs: "response",
      options,
    }).withResponse();
    return new APIPromise(answer.then((result) => ({ ...result, data: new Stream<Event>(result.response) })));
  }
}
