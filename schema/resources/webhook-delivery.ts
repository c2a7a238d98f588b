import { builder } from "../builder.ts";
import type { Context } from "../context.ts";
import { EVENT_RETENTION_DAYS, TEST_EVENT_TYPE } from "../events.ts";
import { WebhookDeliveryStatus } from "../generated/prisma/enums.ts";
import { notFound } from "../lib/errors.ts";
import { newId } from "../lib/ids.ts";
import { listPage } from "../lib/list-page.ts";
import { lockRow } from "../lib/locks.ts";
import { found } from "../lib/records.ts";
import { rest } from "../lib/rest.ts";
import { listType, objectKind, pageArgs } from "./shared.ts";

export const WebhookDeliveryStatusEnum = builder.enumType(WebhookDeliveryStatus, {
  name: "WebhookDeliveryStatus",
  description: "Where a delivery stands.",
  values: {
    pending: {
      description: "Not attempted yet, or held (next_attempt_at null) while its endpoint is paused.",
    },
    retrying: { description: "An attempt failed; another is due at next_attempt_at." },
    succeeded: { description: "The endpoint answered 2xx in time (delivered_at)." },
    failed: { description: "Every attempt failed, or the endpoint answered 410 Gone; nothing more is sent." },
  },
});

builder.prismaObject("WebhookDeliveryAttempt", {
  description: "One attempt of a webhook delivery and its answer.",
  authScopes: { readable: "webhooks" },
  fields: (t) => ({
    number: t.exposeInt("number", { description: "1 for the first attempt, then 2, 3, …" }),
    response_status: t.exposeInt("responseStatus", {
      nullable: true,
      description: "The HTTP status the endpoint answered; null when no answer arrived.",
    }),
    response_body: t.exposeString("responseBody", {
      nullable: true,
      description: "The first 2 KiB of the response body; null when no answer arrived.",
    }),
    error: t.exposeString("error", {
      nullable: true,
      description:
        "Why no answer came (timeout, connection_refused, …, as last_error); null when one came, whatever its status.",
    }),
    duration_ms: t.exposeInt("durationMs", {
      description: "How long it took, in milliseconds (until the answer's headers, or until it failed).",
    }),
    created_at: t.expose("createdAt", { type: "DateTime", description: "When its result was recorded." }),
  }),
});

export const WebhookDelivery = builder.prismaObject("WebhookDelivery", {
  description:
    "One event sent to one endpoint: its attempts and the last answer. Visible with webhooks.read or webhooks.write.",
  authScopes: { readable: "webhooks" },
  fields: (t) => ({
    object: objectKind(t, "webhook_delivery"),
    id: t.exposeID("id", { description: "`whd_…`; sent as the Kontor-Delivery header." }),
    endpoint_id: t.exposeString("endpointId", { description: "The endpoint it goes to (`we_…`)." }),
    event_id: t.exposeString("eventId", {
      description:
        "The event delivered (`evt_…`); sent as webhook-id: the same on every attempt and replay, for de-duplication.",
    }),
    event_type: t.exposeString("eventType", {
      description: "The event's type, e.g. invoice.paid; sent as Kontor-Event.",
    }),
    status: t.expose("status", {
      type: WebhookDeliveryStatusEnum,
      description: "Where the delivery stands.",
    }),
    attempts: t.exposeInt("attempts", { description: "Attempts started so far." }),
    response_status: t.exposeInt("responseStatus", {
      nullable: true,
      description: "The HTTP status of the last attempt; null when none arrived.",
    }),
    response_body: t.exposeString("responseBody", {
      nullable: true,
      description: "The first 2 KiB of the last response body; null when no answer arrived.",
    }),
    last_error: t.exposeString("lastError", {
      nullable: true,
      description:
        "Why the last attempt got no answer: timeout, connection_refused, dns_failure, address_not_allowed, tls_error, connection_reset, invalid_url, network_error. Null when it got one, or before the first attempt.",
    }),
    duration_ms: t.exposeInt("durationMs", {
      nullable: true,
      description:
        "How long the last attempt took, in milliseconds (until the answer's headers, or until it failed); null before the first attempt.",
    }),
    next_attempt_at: t.expose("nextAttemptAt", {
      type: "DateTime",
      nullable: true,
      description:
        "When the next attempt is due; null when none is (succeeded, failed, or held while the endpoint is paused).",
    }),
    delivered_at: t.expose("deliveredAt", {
      type: "DateTime",
      nullable: true,
      description: "When a 2xx answer arrived; null until then.",
    }),
    created_at: t.expose("createdAt", { type: "DateTime", description: "When the delivery was created." }),
    updated_at: t.expose("updatedAt", {
      type: "DateTime",
      description: "When the delivery was last changed (an attempt recorded).",
    }),
    endpoint: t.relation("endpoint", {
      extensions: { rest: false },
      description: "The endpoint it goes to.",
    }),
    event: t.relation("event", { extensions: { rest: false }, description: "The event it carries." }),
    attempt_history: t.relation("attemptHistory", {
      query: { orderBy: { number: "asc" } },
      extensions: { rest: false },
      description:
        "Every attempt recorded so far, oldest first (the last one is what response_status, last_error and duration_ms show). GraphQL only.",
    }),
  }),
});

const WebhookDeliveryList = listType("WebhookDelivery", WebhookDelivery);

const where = (ctx: Context, id: string) => ({ id, workspaceId: ctx.credential.workspaceId });

builder.queryFields((t) => ({
  webhookDeliveries: t.field({
    type: WebhookDeliveryList,
    description: `The workspace's webhook deliveries of the last ${EVENT_RETENTION_DAYS} days, newest first. Needs webhooks.read.`,
    extensions: rest("GET /webhook-deliveries", "List webhook deliveries"),
    authScopes: { scope: "webhooks.read" },
    args: {
      endpoint_id: t.arg.id({ description: "Only deliveries to this endpoint (`we_…`)." }),
      event_type: t.arg.string({ description: "Only deliveries of this event type, e.g. invoice.paid." }),
      event_id: t.arg.id({
        description: "Only deliveries of this event (`evt_…`): every endpoint's, replays included.",
      }),
      status: t.arg({ type: WebhookDeliveryStatusEnum, description: "Only deliveries in this status." }),
      ...pageArgs,
    },
    resolve: (_root, args, ctx, info) =>
      listPage(args, ctx, info, ({ cursor, ...page }) =>
        ctx.db.webhookDelivery.findMany({
          where: {
            workspaceId: ctx.credential.workspaceId,
            ...(args.endpoint_id && { endpointId: args.endpoint_id }),
            ...(args.event_type && { eventType: args.event_type }),
            ...(args.event_id && { eventId: args.event_id }),
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
    description: "One delivery by id; an unknown id is a not_found error. Needs webhooks.read.",
    extensions: rest("GET /webhook-deliveries/:id", "Retrieve a webhook delivery"),
    authScopes: { scope: "webhooks.read" },
    args: { id: t.arg.id({ required: true, description: "The delivery's id (`whd_…`)." }) },
    resolve: async (query, _root, args, ctx) =>
      found(
        "webhook_delivery",
        args.id,
        await ctx.db.webhookDelivery.findFirst({ ...query, where: where(ctx, args.id) }),
      ),
  }),
}));

builder.mutationFields((t) => ({
  replayWebhookDelivery: t.prismaField({
    type: "WebhookDelivery",
    description:
      "Sends the delivery's event to its endpoint again, as a new delivery (the same event id, so receivers can de-duplicate); held while the endpoint is paused. Needs webhooks.write.",
    extensions: rest("POST /webhook-deliveries/:id/replay", "Replay a webhook delivery", 201),
    authScopes: { scope: "webhooks.write" },
    args: { id: t.arg.id({ required: true, description: "The delivery to replay (`whd_…`)." }) },
    resolve: async (query, _root, { id }, ctx) => {
      const delivery = await ctx.db.$transaction(async (tx) => {
        const original = found(
          "webhook_delivery",
          id,
          await tx.webhookDelivery.findFirst({ where: where(ctx, id) }),
        );
        // A share lock on the endpoint: deleting it waits for the replay (or the replay finds it gone), and a
        // pause or resume, which locks it for update, either comes after the replay or is seen by it.
        const shared = await lockRow(
          tx,
          "webhook_endpoint",
          original.endpointId,
          ctx.credential.workspaceId,
          "share",
        );
        if (!shared) throw notFound("webhook_delivery", id);
        const endpoint = await tx.webhookEndpoint.findUniqueOrThrow({
          where: { id: original.endpointId },
          select: { isActive: true },
        });
        return tx.webhookDelivery.create({
          ...query,
          data: {
            id: newId("webhookDelivery"),
            workspaceId: ctx.credential.workspaceId,
            endpointId: original.endpointId,
            eventId: original.eventId,
            eventType: original.eventType,
            // A paused endpoint holds the replay like any other delivery (test events excepted).
            nextAttemptAt: endpoint.isActive || original.eventType === TEST_EVENT_TYPE ? new Date() : null,
          },
        });
      });
      ctx.webhooks.wake("deliveries");
      return delivery;
    },
  }),
}));
