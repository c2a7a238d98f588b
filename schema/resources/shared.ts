import type { GenericFieldRef, ObjectRef } from "@pothos/core";
import { builder } from "../builder.ts";
import { LeadStage, Plan, Priority } from "../generated/prisma/enums.ts";
import type { ListEnvelope } from "../lib/cursor.ts";
import { DEFAULT_LIMIT, MAX_LIMIT } from "../lib/cursor.ts";
import { PLAN_LIMITS, type PlanName } from "../lib/plans.ts";

/** What objectKind needs of a field builder: object and Prisma object types alike have it. */
interface KindFieldBuilder<Field> {
  string(options: { description: string; extensions: { literal: string }; resolve: () => string }): Field;
}

/**
 * The `object` field of an object type: always `kind`. `extensions.literal` lets the OpenAPI
 * document declare it as `enum: [kind]` rather than any string.
 */
export function objectKind<Field extends GenericFieldRef<string>>(
  t: KindFieldBuilder<Field>,
  kind: string,
): Field {
  return t.string({ description: `Always "${kind}".`, extensions: { literal: kind }, resolve: () => kind });
}

const planValue = (plan: PlanName) => {
  const limits = PLAN_LIMITS[plan];
  return {
    description: `${limits.requests_per_minute} requests and ${limits.ai_requests_per_minute} AI requests per minute, ${limits.storage_label} of storage.`,
  };
};

export const PlanEnum = builder.enumType(Plan, {
  name: "Plan",
  description:
    "The workspace's subscription plan: it sets the rate limits and the storage quota (Workspace.limits).",
  values: { free: planValue("free"), plus: planValue("plus"), pro: planValue("pro"), max: planValue("max") },
});

export const LeadStageEnum = builder.enumType(LeadStage, {
  name: "LeadStage",
  description: "Where a lead is in the sales process. An update may move a lead from any stage to any other.",
  values: {
    new: { description: "Not contacted yet (the default)." },
    contacted: { description: "First contact made." },
    qualified: { description: "Confirmed as a real opportunity." },
    proposal: { description: "An offer has been made." },
    won: { description: "Closed with a deal; converting a lead into a client also moves it here." },
    lost: { description: "Closed without a deal." },
  },
});

export const PriorityEnum = builder.enumType(Priority, {
  name: "Priority",
  description: "How urgent a lead or a task is.",
  values: {
    low: { description: "Can wait." },
    medium: { description: "Normal (the default)." },
    high: { description: "Before medium and low." },
    urgent: { description: "Before everything else." },
  },
});

/** `{object: "list", data, has_more, next_cursor}`: the envelope of every list (docs/api/conventions-and-errors.md). */
// biome-ignore lint/suspicious/noExplicitAny: the item ref's schema types are the builder's own.
export function listType<T extends { id: string }>(name: string, item: ObjectRef<any, T>) {
  return builder.objectRef<ListEnvelope<T>>(`${name}List`).implement({
    description: `A page of ${name} objects, newest first.`,
    fields: (t) => ({
      object: objectKind(t, "list"),
      data: t.expose("data", {
        type: [item],
        description: "This page's objects, newest first: at most `limit` of them.",
      }),
      has_more: t.exposeBoolean("has_more", { description: "Whether more objects follow this page." }),
      next_cursor: t.exposeString("next_cursor", {
        nullable: true,
        description: "Pass it as `cursor` to get the next page; null on the last page.",
      }),
    }),
  });
}

export interface DeletedShape {
  id: string;
  object: string;
  deleted: true;
}

export const Deleted = builder.objectRef<DeletedShape>("Deleted").implement({
  description: "The answer to a deletion.",
  fields: (t) => ({
    id: t.exposeID("id", { description: "The id of the deleted object." }),
    object: t.exposeString("object", {
      description: 'The kind of the deleted object, as its own `object` field said, e.g. "lead".',
    }),
    deleted: t.exposeBoolean("deleted", { description: "Always true." }),
  }),
});

export const pageArgs = builder.args((t) => ({
  limit: t.int({
    required: false,
    description: `How many objects a page holds: 1–${MAX_LIMIT}, default ${DEFAULT_LIMIT}.`,
  }),
  cursor: t.string({
    required: false,
    description: "The next_cursor of the previous page (opaque); omit it for the first page.",
  }),
}));

export const searchArg = builder.args((t) => ({
  search: t.string({
    required: false,
    description: "Only objects whose name, company name or e-mail contains this text, ignoring case.",
  }),
}));
