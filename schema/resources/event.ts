import { builder } from "../builder.ts";
import { EVENT_RETENTION_DAYS } from "../events.ts";
import { listPage } from "../lib/cursor.ts";
import { found } from "../lib/records.ts";
import { rest } from "../lib/rest.ts";
import { listType, pageArgs } from "./shared.ts";

const EventData = builder.objectRef<{ object: object }>("EventData").implement({
  description: "What the event is about.",
  fields: (t) => ({
    object: t.expose("object", { type: "JSONObject", description: "The resource as the API returned it when the event happened." }),
  }),
});

/** The outbox (decisions.md §6): what happened in the workspace, exactly as webhooks deliver it. */
export const Event = builder.prismaObject("Event", {
  description: "Something that happened in the workspace; the body of every webhook delivery.",
  authScopes: { readable: "webhooks" },
  fields: (t) => ({
    id: t.exposeID("id", { description: "Sent as webhook-id." }),
    object: t.string({ resolve: () => "event" }),
    type: t.exposeString("type"),
    created_at: t.expose("createdAt", { type: "DateTime" }),
    workspace_id: t.exposeString("workspaceId"),
    data: t.field({ type: EventData, resolve: (event) => ({ object: event.data as object }) }),
  }),
});

const EventList = listType("Event", Event);

builder.queryFields((t) => ({
  events: t.field({
    type: EventList,
    description: `Events of the last ${EVENT_RETENTION_DAYS} days, newest first.`,
    extensions: rest("GET /events", "List events"),
    authScopes: { scope: "webhooks.read" },
    args: { type: t.arg.string({ description: "An event type, e.g. invoice.paid." }), ...pageArgs },
    resolve: (_root, args, ctx) =>
      listPage(args, ({ cursor, ...page }) =>
        ctx.db.event.findMany({
          where: { workspaceId: ctx.credential.workspaceId, ...(args.type && { type: args.type }), ...cursor },
          ...page,
        }),
      ),
  }),
  event: t.prismaField({
    type: Event,
    nullable: true,
    extensions: rest("GET /events/:id", "Retrieve an event"),
    authScopes: { scope: "webhooks.read" },
    args: { id: t.arg.id({ required: true }) },
    resolve: async (query, _root, args, ctx) =>
      found("event", args.id, await ctx.db.event.findFirst({ ...query, where: { id: args.id, workspaceId: ctx.credential.workspaceId } })),
  }),
}));
