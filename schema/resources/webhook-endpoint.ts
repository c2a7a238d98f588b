import { builder } from "../builder.ts";
import type { Context } from "../context.ts";
import { ALL_EVENTS, EVENT_TYPES, represent, TEST_EVENT_TYPE } from "../events.ts";
import type { WebhookEndpoint as EndpointRow, Prisma } from "../generated/prisma/client.ts";
import { recordAudit } from "../lib/audit.ts";
import { ApiError, validationFailed } from "../lib/errors.ts";
import { newId } from "../lib/ids.ts";
import { ENDPOINT_DELIVERIES_SHOWN } from "../lib/limits.ts";
import { listPage } from "../lib/list-page.ts";
import { lockOwned, lockRow, lockWorkspace } from "../lib/locks.ts";
import { PLAN_LIMITS } from "../lib/plans.ts";
import { defined, found, owned } from "../lib/records.ts";
import { rest } from "../lib/rest.ts";
import { notNull, optionalText } from "../lib/validate.ts";
import { holdDeliveries } from "../lib/webhook-hold.ts";
import { newSigningSecret } from "../lib/webhook-secret.ts";
import { Deleted, listType, objectKind, pageArgs } from "./shared.ts";

export const WebhookEndpointStatusEnum = builder.enumType("WebhookEndpointStatus", {
  description: "Whether an endpoint is sent its deliveries; follows is_active.",
  values: {
    active: { description: "Deliveries are sent." },
    paused: { description: "Deliveries wait (held, not lost) until the endpoint is resumed." },
  },
});

type EndpointWithSecret = EndpointRow & { secret: string };

// biome-ignore lint/suspicious/noExplicitAny: the same fields go on two refs (endpoint and endpoint with secret).
const endpointFields = (t: any) => ({
  object: objectKind(t, "webhook_endpoint"),
  id: t.exposeID("id", { description: "`we_…`." }),
  url: t.exposeString("url", { description: "Where deliveries are POSTed (http or https)." }),
  events: t.exposeStringList("events", { description: 'Event types delivered here, or ["*"] for all.' }),
  description: t.exposeString("description", {
    nullable: true,
    description: "Free text for people, e.g. what the receiver is.",
  }),
  is_active: t.exposeBoolean("isActive", { description: "false pauses the endpoint; true resumes it." }),
  status: t.field({
    type: WebhookEndpointStatusEnum,
    description: "active or paused, following is_active.",
    resolve: (endpoint: EndpointRow) => (endpoint.isActive ? "active" : "paused"),
  }),
  disabled_reason: t.exposeString("disabledReason", {
    nullable: true,
    description:
      "Why Kontor paused the endpoint: `gone` when it answered 410. Null when active or paused by the user.",
  }),
  created_at: t.expose("createdAt", { type: "DateTime", description: "When the endpoint was created." }),
  updated_at: t.expose("updatedAt", { type: "DateTime", description: "When the endpoint was last changed." }),
});

export const WebhookEndpoint = builder.prismaObject("WebhookEndpoint", {
  description:
    "A URL that receives the workspace's events, signed with the endpoint's secret. Visible with webhooks.read or webhooks.write.",
  authScopes: { readable: "webhooks" },
  fields: (t) => ({
    ...endpointFields(t),
    deliveries: t.relation("deliveries", {
      // The endpoint's deliveries are all in its workspace: naming it lets (workspace_id, endpoint_id, id)
      // serve the newest first, where endpoint_id alone would walk every delivery's id to find them.
      query: (_args, ctx) => ({
        where: { workspaceId: ctx.credential.workspaceId },
        orderBy: { id: "desc" },
        take: ENDPOINT_DELIVERIES_SHOWN,
      }),
      extensions: { rest: false },
      description: `The endpoint's ${ENDPOINT_DELIVERIES_SHOWN} latest deliveries (GET /webhook-deliveries?endpoint_id= pages through all).`,
    }),
  }),
});

export const WebhookEndpointWithSecret = builder.prismaObject("WebhookEndpoint", {
  variant: "WebhookEndpointWithSecret",
  description:
    "A webhook endpoint with its signing secret: returned only when the secret is created or rotated.",
  authScopes: { readable: "webhooks" },
  fields: (t) => ({
    ...endpointFields(t),
    secret: t.string({
      description: "`whsec_…`: keep it; it is never shown again.",
      resolve: (endpoint) => (endpoint as EndpointWithSecret).secret,
    }),
  }),
});

const WebhookEndpointList = listType("WebhookEndpoint", WebhookEndpoint);

/** `["*"]`, or event types of the catalog, without repeats. */
function eventsArg(events: string[]): string[] {
  if (events.length === 0)
    throw validationFailed("events", `events needs at least one event type, or ["${ALL_EVENTS}"] for all.`);
  const unique = [...new Set(events)];
  if (unique.includes(ALL_EVENTS)) {
    if (unique.length > 1)
      throw validationFailed("events", `"${ALL_EVENTS}" already means every event: send it alone.`);
    return unique;
  }
  const known = new Set<string>(EVENT_TYPES);
  events.forEach((type, index) => {
    if (type === TEST_EVENT_TYPE) {
      throw validationFailed(
        `events[${index}]`,
        `${TEST_EVENT_TYPE} is sent by POST /webhook-endpoints/{id}/test to that endpoint only; it cannot be subscribed to.`,
      );
    }
    if (!known.has(type))
      throw validationFailed(
        `events[${index}]`,
        `'${type}' is not an event type. Known types: ${EVENT_TYPES.join(", ")}, or "${ALL_EVENTS}".`,
      );
  });
  return unique;
}

/** Trimmed; "" and null clear it. Its bound is the API's one for long text (schema/lib/limits.ts), checked before any resolver runs. */
function description(value: string | null | undefined) {
  return optionalText(value);
}

const where = (ctx: Context, id: string) => ({ id, workspaceId: ctx.credential.workspaceId });

/**
 * What the per-host delivery cap counts (docs/api/webhooks.md, fair delivery): the URL's host as
 * WHATWG URL parsing normalizes it (lower case, punycode, one spelling per IPv4 address), without
 * a trailing dot, and its port, the scheme's default filled in. `url` has passed checkUrl.
 */
export function targetHost(url: string): string {
  const parsed = new URL(url);
  const port = parsed.port || (parsed.protocol === "https:" ? "443" : "80");
  return `${parsed.hostname.replace(/\.$/, "")}:${port}`;
}

/**
 * docs/api/limits.md: a workspace has at most its plan's `webhook_endpoints`. Locks the workspace row
 * first, so concurrent creations take turns and no two of them both see room for one more; the plan
 * is read under that lock, not from a credential that may have been cached before an upgrade.
 */
async function checkEndpointCap(tx: Prisma.TransactionClient, workspaceId: string): Promise<void> {
  await lockWorkspace(tx, workspaceId);
  const { plan } = await tx.workspace.findUniqueOrThrow({
    where: { id: workspaceId },
    select: { plan: true },
  });
  const cap = PLAN_LIMITS[plan].webhook_endpoints;
  if ((await tx.webhookEndpoint.count({ where: { workspaceId } })) >= cap) {
    throw new ApiError(
      403,
      "permission_error",
      "plan_limit_reached",
      `The ${plan} plan allows ${cap} webhook endpoints; delete one first, or upgrade.`,
    );
  }
}

builder.queryFields((t) => ({
  webhookEndpoints: t.field({
    type: WebhookEndpointList,
    description:
      "The workspace's webhook endpoints, newest first (never with their secrets). Needs webhooks.read.",
    extensions: rest("GET /webhook-endpoints", "List webhook endpoints"),
    authScopes: { scope: "webhooks.read" },
    args: { ...pageArgs },
    resolve: (_root, args, ctx, info) =>
      listPage(args, ctx, info, ({ cursor, ...page }) =>
        ctx.db.webhookEndpoint.findMany({
          where: { workspaceId: ctx.credential.workspaceId, ...cursor },
          ...page,
        }),
      ),
  }),
  webhookEndpoint: t.prismaField({
    type: WebhookEndpoint,
    nullable: true,
    description:
      "One webhook endpoint by id, without its secret; an unknown id is a not_found error. Needs webhooks.read.",
    extensions: rest("GET /webhook-endpoints/:id", "Retrieve a webhook endpoint"),
    authScopes: { scope: "webhooks.read" },
    args: { id: t.arg.id({ required: true, description: "The endpoint's id (`we_…`)." }) },
    resolve: async (query, _root, args, ctx) =>
      found(
        "webhook_endpoint",
        args.id,
        await ctx.db.webhookEndpoint.findFirst({ ...query, where: where(ctx, args.id) }),
      ),
  }),
}));

builder.mutationFields((t) => ({
  createWebhookEndpoint: t.prismaField({
    type: WebhookEndpointWithSecret,
    description:
      "Registers an endpoint; it receives only events that happen after its creation. The answer carries its signing secret, which is never shown again. The plan caps how many a workspace has (limits.webhook_endpoints; one more is plan_limit_reached). Needs webhooks.write.",
    extensions: rest("POST /webhook-endpoints", "Create a webhook endpoint", 201, ["plan_limit_reached"]),
    authScopes: { scope: "webhooks.write" },
    args: {
      url: t.arg.string({
        required: true,
        description:
          "http or https, without credentials; https only, to public addresses, in production. Link-local and cloud-metadata addresses are refused everywhere.",
      }),
      events: t.arg.stringList({ required: true, description: `Event types, or ["${ALL_EVENTS}"] for all.` }),
      description: t.arg.string({ description: "Free text for people, e.g. what the receiver is." }),
    },
    resolve: async (query, _root, args, ctx) => {
      const events = eventsArg(args.events);
      const text = description(args.description);
      const url = await ctx.webhooks.checkUrl(args.url);
      const secret = newSigningSecret();
      const endpoint = await ctx.db.$transaction(async (tx) => {
        await checkEndpointCap(tx, ctx.credential.workspaceId);
        const created = await tx.webhookEndpoint.create({
          ...query,
          data: {
            id: newId("webhookEndpoint"),
            workspaceId: ctx.credential.workspaceId,
            url,
            targetHost: targetHost(url),
            events,
            description: text ?? null,
            secretSealed: ctx.webhooks.seal(secret),
          },
        });
        await recordAudit(tx, ctx, { action: "webhook_endpoint.created", targetId: created.id });
        return created;
      });
      return { ...endpoint, secret };
    },
  }),
  updateWebhookEndpoint: t.prismaField({
    type: WebhookEndpoint,
    description:
      "Updates the fields sent. is_active false pauses the endpoint (its deliveries wait); true resumes it and sends what waited. Needs webhooks.write.",
    extensions: rest("PATCH /webhook-endpoints/:id", "Update, pause or resume a webhook endpoint"),
    authScopes: { scope: "webhooks.write" },
    args: {
      id: t.arg.id({ required: true, description: "The endpoint's id (`we_…`)." }),
      url: t.arg.string({ description: "A new target, checked like on creation; cannot be null." }),
      events: t.arg.stringList({
        description: `Replaces the subscribed event types; ["${ALL_EVENTS}"] for all; cannot be null.`,
      }),
      description: t.arg.string({ description: "Free text for people; null clears it." }),
      is_active: t.arg.boolean({
        description:
          "false pauses the endpoint, true resumes it; either clears disabled_reason. Cannot be null.",
      }),
    },
    resolve: async (query, _root, { id, ...args }, ctx) => {
      const events = notNull("events", args.events);
      const isActive = notNull("is_active", args.is_active);
      const data = defined({
        url: notNull("url", args.url),
        events: events === undefined ? undefined : eventsArg(events),
        description: description(args.description),
        isActive,
        ...(isActive !== undefined && { disabledReason: null }),
      });
      if (data.url !== undefined) data.url = await ctx.webhooks.checkUrl(data.url);
      const host = data.url === undefined ? {} : { targetHost: targetHost(data.url) };
      const endpoint = await ctx.db.$transaction(async (tx) => {
        // Locked: of concurrent pauses and resumes each holds or releases the deliveries as the one before it left them.
        await lockOwned(tx, "webhook_endpoint", id, ctx.credential.workspaceId);
        const current = await tx.webhookEndpoint.findUniqueOrThrow({
          where: { id },
          select: { isActive: true },
        });
        const updated = await tx.webhookEndpoint.update({
          ...query,
          where: where(ctx, id),
          data: { ...data, ...host },
        });
        if (isActive !== undefined && isActive !== current.isActive) await holdDeliveries(tx, id, !isActive);
        return updated;
      });
      if (isActive) ctx.webhooks.wake("deliveries");
      return endpoint;
    },
  }),
  deleteWebhookEndpoint: t.field({
    type: Deleted,
    description:
      "Deletes the endpoint and its delivery history; nothing more is sent to it. Needs webhooks.write.",
    extensions: rest("DELETE /webhook-endpoints/:id", "Delete a webhook endpoint"),
    authScopes: { scope: "webhooks.write" },
    args: { id: t.arg.id({ required: true, description: "The endpoint's id (`we_…`)." }) },
    resolve: async (_root, { id }, ctx) => {
      await owned("webhook_endpoint", id, () =>
        ctx.db.$transaction(async (tx) => {
          await tx.webhookEndpoint.delete({ where: where(ctx, id) });
          await recordAudit(tx, ctx, { action: "webhook_endpoint.deleted", targetId: id });
        }),
      );
      return { id, object: "webhook_endpoint", deleted: true as const };
    },
  }),
  rotateWebhookEndpointSecret: t.prismaField({
    type: WebhookEndpointWithSecret,
    description:
      "Replaces the signing secret at once, with no overlap: every attempt from now on is signed with the new one, returned here once. Needs webhooks.write.",
    extensions: rest(
      "POST /webhook-endpoints/:id/rotate-secret",
      "Rotate a webhook endpoint's signing secret",
    ),
    authScopes: { scope: "webhooks.write" },
    args: { id: t.arg.id({ required: true, description: "The endpoint's id (`we_…`)." }) },
    resolve: async (query, _root, { id }, ctx) => {
      const secret = newSigningSecret();
      const endpoint = await owned("webhook_endpoint", id, () =>
        ctx.db.$transaction(async (tx) => {
          const rotated = await tx.webhookEndpoint.update({
            ...query,
            where: where(ctx, id),
            data: { secretSealed: ctx.webhooks.seal(secret) },
          });
          await recordAudit(tx, ctx, { action: "webhook_endpoint.secret_rotated", targetId: id });
          return rotated;
        }),
      );
      return { ...endpoint, secret };
    },
  }),
  testWebhookEndpoint: t.prismaField({
    type: "WebhookDelivery",
    description: `Sends a ${TEST_EVENT_TYPE} event (its data is the endpoint) to this endpoint only, even while it is paused, and returns the delivery. Needs webhooks.write.`,
    extensions: rest("POST /webhook-endpoints/:id/test", "Send a test event to a webhook endpoint", 201),
    authScopes: { scope: "webhooks.write" },
    args: { id: t.arg.id({ required: true, description: "The endpoint's id (`we_…`)." }) },
    resolve: async (query, _root, { id }, ctx) => {
      const delivery = await ctx.db.$transaction(async (tx) => {
        // A share lock: the endpoint cannot be deleted before the delivery to it commits.
        const shared = await lockRow(tx, "webhook_endpoint", id, ctx.credential.workspaceId, "share");
        const endpoint = found(
          "webhook_endpoint",
          id,
          shared ? await tx.webhookEndpoint.findUnique({ where: { id } }) : null,
        );
        const data = await represent(tx, ctx, "WebhookEndpoint", endpoint);
        const now = new Date();
        const event = await tx.event.create({
          // Already dispatched: it goes to this endpoint only, never to the others.
          data: {
            id: newId("event"),
            workspaceId: ctx.credential.workspaceId,
            type: TEST_EVENT_TYPE,
            data: data as Prisma.InputJsonObject,
            dispatchedAt: now,
          },
        });
        return tx.webhookDelivery.create({
          ...query,
          data: {
            id: newId("webhookDelivery"),
            workspaceId: ctx.credential.workspaceId,
            endpointId: id,
            eventId: event.id,
            eventType: TEST_EVENT_TYPE,
            nextAttemptAt: now,
          },
        });
      });
      ctx.webhooks.wake("deliveries");
      return delivery;
    },
  }),
}));
