import { builder } from "../builder.ts";
import { EVENT_RETENTION_DAYS } from "../events.ts";
import { listPage } from "../lib/list-page.ts";
import { found } from "../lib/records.ts";
import { rest } from "../lib/rest.ts";
import { listType, objectKind, pageArgs } from "./shared.ts";

const EventData = builder.objectRef<{ object: object }>("EventData").implement({
  description: "What the event is about.",
  fields: (t) => ({
    object: t.expose("object", {
      type: "JSONObject",
      description: "The resource as the API returned it when the event happened.",
    }),
  }),
});

const eventData = (event: { data: unknown }) => ({ object: event.data as object });

/** The outbox (docs/api/webhooks.md): what happened in the workspace, exactly as webhooks deliver it. */
export const Event = builder.prismaObject("Event", {
  description:
    "Something that happened in the workspace; the body of every webhook delivery. Visible with webhooks.read or webhooks.write.",
  authScopes: { readable: "webhooks" },
  fields: (t) => ({
    id: t.exposeID("id", { description: "`evt_…`; sent as webhook-id." }),
    object: objectKind(t, "event"),
    type: t.exposeString("type", { description: "What happened, e.g. invoice.paid; sent as Kontor-Event." }),
    created_at: t.expose("createdAt", { type: "DateTime", description: "When it happened." }),
    workspace_id: t.exposeString("workspaceId", { description: "The workspace it happened in (`ws_…`)." }),
    // `measure`: a page of events weighs each one's data as stored (schema/lib/list-page.ts).
    data: t.field({
      type: EventData,
      description: "The resource the event is about.",
      resolve: eventData,
      extensions: { measure: eventData },
    }),
  }),
});

const EventList = listType("Event", Event);

builder.queryFields((t) => ({
  events: t.field({
    type: EventList,
    description: `Events of the last ${EVENT_RETENTION_DAYS} days, newest first. Needs webhooks.read.`,
    extensions: rest("GET /events", "List events"),
    authScopes: { scope: "webhooks.read" },
    args: {
      type: t.arg.string({ description: "Only events of this type, e.g. invoice.paid." }),
      ...pageArgs,
    },
    resolve: (_root, args, ctx, info) =>
      listPage(args, ctx, info, ({ cursor, ...page }) =>
        ctx.db.event.findMany({
          where: {
            workspaceId: ctx.credential.workspaceId,
            ...(args.type && { type: args.type }),
            ...cursor,
          },
          ...page,
        }),
      ),
  }),
  event: t.prismaField({
    type: Event,
    nullable: true,
    description: `One event by id, kept ${EVENT_RETENTION_DAYS} days; an unknown or expired id is a not_found error. Needs webhooks.read.`,
    extensions: rest("GET /events/:id", "Retrieve an event"),
    authScopes: { scope: "webhooks.read" },
    args: { id: t.arg.id({ required: true, description: "The event's id (`evt_…`)." }) },
    resolve: async (query, _root, args, ctx) =>
      found(
        "event",
        args.id,
        await ctx.db.event.findFirst({
          ...query,
          where: { id: args.id, workspaceId: ctx.credential.workspaceId },
        }),
      ),
  }),
}));
