import { builder } from "../builder.ts";
import type { Context } from "../context.ts";
import { emit } from "../events.ts";
import type { LeadStage } from "../generated/prisma/enums.ts";
import { listPage, searchWhere } from "../lib/cursor.ts";
import { invalidState, validationFailed } from "../lib/errors.ts";
import { newId } from "../lib/ids.ts";
import { splitFullName } from "../lib/names.ts";
import { defined, found, owned } from "../lib/records.ts";
import { currency, notNull, optionalEmail, optionalText, requiredText } from "../lib/validate.ts";
import { Client } from "./client.ts";
import { rest } from "../lib/rest.ts";
import { Deleted, LeadStageEnum, listType, pageArgs, PriorityEnum, searchArg } from "./shared.ts";

export const Lead = builder.prismaObject("Lead", {
  description: "A prospective client moving through the sales stages.",
  authScopes: { readable: "leads" },
  fields: (t) => ({
    object: t.string({ resolve: () => "lead" }),
    id: t.exposeID("id"),
    first_name: t.exposeString("firstName"),
    last_name: t.exposeString("lastName", { nullable: true }),
    full_name: t.string({ resolve: (lead) => [lead.firstName, lead.lastName].filter(Boolean).join(" ") }),
    company_name: t.exposeString("companyName", { nullable: true }),
    email: t.exposeString("email", { nullable: true }),
    phone: t.exposeString("phone", { nullable: true }),
    source: t.exposeString("source", { nullable: true }),
    notes: t.exposeString("notes", { nullable: true }),
    stage: t.expose("stage", { type: LeadStageEnum }),
    priority: t.expose("priority", { type: PriorityEnum }),
    estimated_value: t.expose("estimatedValue", { type: "Money", nullable: true }),
    currency: t.exposeString("currency"),
    expected_close_date: t.expose("expectedCloseDate", { type: "Date", nullable: true }),
    next_follow_up_at: t.expose("nextFollowUpAt", { type: "DateTime", nullable: true }),
    last_contacted_at: t.expose("lastContactedAt", { type: "DateTime", nullable: true }),
    stage_changed_at: t.expose("stageChangedAt", { type: "DateTime", nullable: true }),
    client_id: t.exposeString("clientId", { nullable: true, description: "Set when the lead was converted." }),
    client: t.relation("client", {
      type: Client,
      nullable: true,
      extensions: { rest: false },
      description: "The client this lead was converted into (needs clients.read).",
    }),
    created_at: t.expose("createdAt", { type: "DateTime" }),
    updated_at: t.expose("updatedAt", { type: "DateTime" }),
  }),
});

const LeadList = listType("Lead", Lead);

const leadFields = builder.args((t) => ({
  first_name: t.string({ description: "Required unless full_name is given." }),
  last_name: t.string(),
  full_name: t.string({ description: "Split at the first space into first and last name when first_name is absent." }),
  company_name: t.string(),
  email: t.string(),
  phone: t.string(),
  source: t.string(),
  notes: t.string(),
  stage: t.field({ type: LeadStageEnum, description: "Default new." }),
  priority: t.field({ type: PriorityEnum, description: "Default medium." }),
  estimated_value: t.field({ type: "Money" }),
  currency: t.string({ description: "ISO 4217, default USD." }),
  expected_close_date: t.field({ type: "Date" }),
  next_follow_up_at: t.field({ type: "DateTime" }),
  last_contacted_at: t.field({ type: "DateTime" }),
}));

type LeadArgs = {
  first_name?: string | null;
  last_name?: string | null;
  full_name?: string | null;
  company_name?: string | null;
  email?: string | null;
  phone?: string | null;
  source?: string | null;
  notes?: string | null;
  stage?: LeadStage | null;
  priority?: "low" | "medium" | "high" | "urgent" | null;
  estimated_value?: string | null;
  currency?: string | null;
  expected_close_date?: Date | null;
  next_follow_up_at?: Date | null;
  last_contacted_at?: Date | null;
};

/** first_name wins; otherwise full_name is split. Neither given leaves the name alone (PATCH). */
function names(args: LeadArgs) {
  if (args.first_name !== undefined) {
    return { firstName: requiredText("first_name", args.first_name), lastName: optionalText(args.last_name) };
  }
  if (args.full_name !== undefined) {
    const { first, last } = splitFullName(requiredText("full_name", args.full_name));
    return { firstName: first, lastName: args.last_name === undefined ? last : optionalText(args.last_name) };
  }
  return { lastName: optionalText(args.last_name) };
}

function leadData(args: LeadArgs) {
  return defined({
    ...names(args),
    companyName: optionalText(args.company_name),
    email: optionalEmail("email", args.email),
    phone: optionalText(args.phone),
    source: optionalText(args.source),
    notes: optionalText(args.notes),
    stage: notNull("stage", args.stage),
    priority: notNull("priority", args.priority),
    estimatedValue: args.estimated_value,
    currency: currency("currency", args.currency),
    expectedCloseDate: args.expected_close_date,
    nextFollowUpAt: args.next_follow_up_at,
    lastContactedAt: args.last_contacted_at,
  });
}

const where = (ctx: Context, id: string) => ({ id, workspaceId: ctx.credential.workspaceId });

builder.queryFields((t) => ({
  leads: t.field({
    type: LeadList,
    description: "Leads, newest first.",
    extensions: rest("GET /leads", "List leads"),
    authScopes: { scope: "leads.read" },
    args: { stage: t.arg({ type: LeadStageEnum }), ...searchArg, ...pageArgs },
    resolve: (_root, args, ctx) =>
      listPage(args, ({ cursor, ...page }) =>
        ctx.db.lead.findMany({
          where: {
            workspaceId: ctx.credential.workspaceId,
            ...(args.stage && { stage: args.stage }),
            ...cursor,
            ...searchWhere(args.search, ["firstName", "lastName", "companyName", "email"]),
          },
          ...page,
        }),
      ),
  }),
  lead: t.prismaField({
    type: "Lead",
    nullable: true,
    extensions: rest("GET /leads/:id", "Retrieve a lead"),
    authScopes: { scope: "leads.read" },
    args: { id: t.arg.id({ required: true }) },
    resolve: async (query, _root, args, ctx) =>
      found("lead", args.id, await ctx.db.lead.findFirst({ ...query, where: where(ctx, args.id) })),
  }),
}));

builder.mutationFields((t) => ({
  createLead: t.prismaField({
    type: "Lead",
    extensions: rest("POST /leads", "Create a lead", 201),
    authScopes: { scope: "leads.write" },
    args: leadFields,
    resolve: (query, _root, args, ctx) => {
      if (args.first_name == null && args.full_name == null) {
        throw validationFailed("first_name", "first_name (or full_name) is required.");
      }
      const { firstName, ...data } = leadData(args);
      return ctx.db.$transaction(async (tx) => {
        const lead = await tx.lead.create({
          ...query,
          data: { ...data, firstName: firstName!, id: newId("lead"), workspaceId: ctx.credential.workspaceId },
        });
        await emit(tx, ctx, "lead.created", "Lead", lead);
        return lead;
      });
    },
  }),
  updateLead: t.prismaField({
    type: "Lead",
    description: "Updates the fields sent; null clears an optional field. A stage change sets stage_changed_at.",
    extensions: rest("PATCH /leads/:id", "Update a lead"),
    authScopes: { scope: "leads.write" },
    args: { id: t.arg.id({ required: true }), ...leadFields },
    resolve: (query, _root, { id, ...args }, ctx) =>
      owned("lead", id, () =>
        ctx.db.$transaction(async (tx) => {
          const data = leadData(args);
          const current = found("lead", id, await tx.lead.findFirst({ where: where(ctx, id), select: { stage: true } }));
          const stageChanged = data.stage !== undefined && data.stage !== current.stage;
          const lead = await tx.lead.update({
            ...query,
            where: where(ctx, id),
            data: { ...data, ...(stageChanged && { stageChangedAt: new Date() }) },
          });
          if (stageChanged) await emit(tx, ctx, "lead.stage_changed", "Lead", lead);
          return lead;
        }),
      ),
  }),
  deleteLead: t.field({
    type: Deleted,
    extensions: rest("DELETE /leads/:id", "Delete a lead"),
    authScopes: { scope: "leads.write" },
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_root, { id }, ctx) => {
      await owned("lead", id, () => ctx.db.lead.delete({ where: where(ctx, id) }));
      return { id, object: "lead", deleted: true as const };
    },
  }),
  convertLead: t.prismaField({
    type: "Lead",
    description: "Creates a client from the lead, links it (client_id) and moves the lead to won.",
    extensions: rest("POST /leads/:id/convert", "Convert a lead into a client"),
    authScopes: { scope: ["leads.write", "clients.write"] },
    args: { id: t.arg.id({ required: true }) },
    resolve: (query, _root, { id }, ctx) =>
      ctx.db.$transaction(async (tx) => {
        const lead = found("lead", id, await tx.lead.findFirst({ where: where(ctx, id) }));
        if (lead.clientId) throw invalidState(`Lead '${id}' was already converted into client '${lead.clientId}'.`);
        const name = [lead.firstName, lead.lastName].filter(Boolean).join(" ");
        const client = await tx.client.create({
          data: {
            id: newId("client"),
            workspaceId: ctx.credential.workspaceId,
            name,
            email: lead.email,
            phone: lead.phone,
            companyName: lead.companyName,
            currency: lead.currency,
            notes: lead.notes,
          },
        });
        await emit(tx, ctx, "client.created", "Client", client);
        const stageChanged = lead.stage !== "won";
        const converted = await tx.lead.update({
          ...query,
          where: { id },
          data: { clientId: client.id, stage: "won", ...(stageChanged && { stageChangedAt: new Date() }) },
        });
        if (stageChanged) await emit(tx, ctx, "lead.stage_changed", "Lead", converted);
        return converted;
      }),
  }),
}));
