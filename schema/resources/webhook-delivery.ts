import { builder } from "../builder.ts";
import type { Context } from "../context.ts";
import { WebhookDeliveryStatus } from "../generated/prisma/enums.ts";
import { listPage } from "../lib/cursor.ts";
import { TEST_EVENT_TYPE } from "../events.ts";
import { newId } from "../lib/ids.ts";
import { found } from "../lib/records.ts";
import { rest } from "../lib/rest.ts";
import { listType, pageArgs } from "./shared.ts";

export const WebhookDeliveryStatusEnum = builder.enumType(WebhookDeliveryStatus, {
  name: "WebhookDeliveryStatus",
  description: "pending: not attempted yet (or held while its endpoint is paused); retrying: failed, another attempt is due; succeeded; failed: no attempt left.",
});

export const WebhookDelivery = builder.prismaObject("WebhookDelivery", {
  description: "One event sent to one endpoint: its attempts and the last answer.",
  authScopes: { readable: "webhooks" },
  fields: (t) => ({
    object: t.string({ resolve: () => "webhook_delivery" }),
    id: t.exposeID("id", { description: "Sent as the Kontor-Delivery header." }),
    endpoint_id: t.exposeString("endpointId"),
    event_id: t.exposeString("eventId", { description: "Sent as webhook-id: the same on every attempt and replay, for de-duplication." }),
    event_type: t.exposeString("eventType"),
    status: t.expose("status", { type: WebhookDeliveryStatusEnum }),
    attempts: t.exposeInt("attempts", { description: "Attempts started so far." }),
    response_status: t.exposeInt("responseStatus", { nullable: true, description: "The HTTP status of the last attempt; null when none arrived." }),
    response_body: t.exposeString("responseBody", { nullable: true, description: "The first 2 KiB of the last response body." }),
    last_error: t.exposeString("lastError", {
      nullable: true,
      description: "Why the last attempt got no answer: timeout, connection_refused, dns_failure, address_not_allowed, tls_error, connection_reset, invalid_url, network_error.",
    }),
    duration_ms: t.exposeInt("durationMs", { nullable: true, description: "How long the last attempt took to be answered." }),
    next_attempt_at: t.expose("nextAttemptAt", { type: "DateTime", nullable: true }),
    delivered_at: t.expose("deliveredAt", { type: "DateTime", nullable: true }),
    created_at: t.expose("createdAt", { type: "DateTime" }),
    updated_at: t.expose("updatedAt", { type: "DateTime" }),
    endpoint: t.relation("endpoint", { extensions: { rest: false } }),
    event: t.relation("event", { extensions: { rest: false } }),
  }),
});

const WebhookDeliveryList = listType("WebhookDelivery", WebhookDelivery);

const where = (ctx: Context, id: string) => ({ id, workspaceId: ctx.credential.workspaceId });

builder.queryFields((t) => ({
  webhookDeliveries: t.field({
    type: WebhookDeliveryList,
    description: "Deliveries, newest first.",
    extensions: rest("GET /webhook-deliveries", "List webhook deliveries"),
    authScopes: { scope: "webhooks.read" },
    args: {
      endpoint_id: t.arg.id(),
      event_type: t.arg.string(),
      status: t.arg({ type: WebhookDeliveryStatusEnum }),
      ...pageArgs,
    },
    resolve: (_root, args, ctx) =>
      listPage(args, ({ cursor, ...page }) =>
        ctx.db.webhookDelivery.findMany({
          where: {
            workspaceId: ctx.credential.workspaceId,
            ...(args.endpoint_id && { endpointId: args.endpoint_id }),
            ...(args.event_type && { eventType: args.event_type }),
            ...(args.status && { status: args.status }),
            ...cursor,
          },
          ...page,
        }),
      ),
  }),
  webhookDelivery: t.prismaField({
    type: "WebhookDelivery",
    nullable: true,
    extensions: rest("GET /webhook-deliveries/:id", "Retrieve a webhook delivery"),
    authScopes: { scope: "webhooks.read" },
    args: { id: t.arg.id({ required: true }) },
    resolve: async (query, _root, args, ctx) =>
      found("webhook_delivery", args.id, await ctx.db.webhookDelivery.findFirst({ ...query, where: where(ctx, args.id) })),
  }),
}));

builder.mutationFields((t) => ({
  replayWebhookDelivery: t.prismaField({
    type: "WebhookDelivery",
    description: "Sends the delivery's event to its endpoint again, as a new delivery (the same event id, so receivers can de-duplicate).",
    extensions: rest("POST /webhook-deliveries/:id/replay", "Replay a webhook delivery", 201),
    authScopes: { scope: "webhooks.write" },
    args: { id: t.arg.id({ required: true }) },
    resolve: async (query, _root, { id }, ctx) => {
      const original = found(
        "webhook_delivery",
        id,
        await ctx.db.webhookDelivery.findFirst({ where: where(ctx, id), include: { endpoint: { select: { isActive: true } } } }),
      );
      const delivery = await ctx.db.webhookDelivery.create({
        ...query,
        data: {
          id: newId("webhookDelivery"),
          workspaceId: ctx.credential.workspaceId,
          endpointId: original.endpointId,
          eventId: original.eventId,
          eventType: original.eventType,
          // A paused endpoint holds the replay like any other delivery (test events excepted).
          nextAttemptAt: original.endpoint.isActive || original.eventType === TEST_EVENT_TYPE ? new Date() : null,
        },
      });
      ctx.webhooks.wake("deliveries");
      return delivery;
    },
  }),
}));
