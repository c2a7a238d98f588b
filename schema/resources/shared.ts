import type { ObjectRef } from "@pothos/core";
import { builder } from "../builder.ts";
import { LeadStage, Plan, Priority } from "../generated/prisma/enums.ts";
import type { ListEnvelope } from "../lib/cursor.ts";
import { DEFAULT_LIMIT, MAX_LIMIT } from "../lib/cursor.ts";

export const PlanEnum = builder.enumType(Plan, { name: "Plan" });
export const LeadStageEnum = builder.enumType(LeadStage, { name: "LeadStage" });
export const PriorityEnum = builder.enumType(Priority, { name: "Priority" });

/** `{object: "list", data, has_more, next_cursor}`: the envelope of every list (decisions.md §2). */
export function listType<T extends { id: string }>(name: string, item: ObjectRef<any, T>) {
  return builder.objectRef<ListEnvelope<T>>(`${name}List`).implement({
    description: `A page of ${name} objects, newest first.`,
    fields: (t) => ({
      object: t.exposeString("object"),
      data: t.expose("data", { type: [item] }),
      has_more: t.exposeBoolean("has_more"),
      next_cursor: t.exposeString("next_cursor", { nullable: true }),
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
    id: t.exposeID("id"),
    object: t.exposeString("object"),
    deleted: t.exposeBoolean("deleted"),
  }),
});

export const pageArgs = builder.args((t) => ({
  limit: t.int({ required: false, description: `1–${MAX_LIMIT}, default ${DEFAULT_LIMIT}.` }),
  cursor: t.string({ required: false, description: "The next_cursor of the previous page." }),
}));

export const searchArg = builder.args((t) => ({
  search: t.string({ required: false, description: "Case-insensitive substring of the name-like fields." }),
}));
