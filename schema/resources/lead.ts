import { builder } from "../builder.ts";
import type { Context } from "../context.ts";
import { emit } from "../events.ts";
import type { LeadStage } from "../generated/prisma/enums.ts";
import { searchWhere } from "../lib/cursor.ts";
import { invalidState, validationFailed } from "../lib/errors.ts";
import { newId } from "../lib/ids.ts";
import { listPage } from "../lib/list-page.ts";
import { lockOwned } from "../lib/locks.ts";
import { splitFullName } from "../lib/names.ts";
import { defined, found, owned } from "../lib/records.ts";
import { rest } from "../lib/rest.ts";
import { currency, notNull, optionalEmail, optionalText, requiredText } from "../lib/validate.ts";
import { Client } from "./client.ts";
import { Deleted, LeadStageEnum, listType, objectKind, PriorityEnum, pageArgs, searchArg } from "./shared.ts";

const fullName = (lead: { firstName: string; lastName: string | null }) =>
  [lead.firstName, lead.lastName].filter(Boolean).join(" ");

export const Lead = builder.prismaObject("Lead", {
  description:
    "A prospective client moving through the sales stages. Visible with leads.read or leads.write.",
  authScopes: { readable: "leads" },
  fields: (t) => ({
    object: objectKind(t, "lead"),
    id: t.exposeID("id", { description: "`lead_…`." }),
    first_name: t.exposeString("firstName", { description: "The contact's first name." }),
    last_name: t.exposeString("lastName", {
      nullable: true,
      description: "The contact's last name; null when not given.",
    }),
    full_name: t.string({
      description: "first_name and last_name joined by a space.",
      resolve: fullName,
      // A page of leads weighs each one's full name as it is (schema/lib/list-page.ts).
      extensions: { measure: fullName },
    }),
    company_name: t.exposeString("companyName", {
      nullable: true,
      description: "The company the contact works for.",
    }),
    email: t.exposeString("email", {
      nullable: true,
      description: "The contact's e-mail address, in lower case.",
    }),
    phone: t.exposeString("phone", {
      nullable: true,
      description: "The contact's phone number, as entered.",
    }),
    source: t.exposeString("source", {
      nullable: true,
      description: 'Where the lead came from (free text, e.g. "website").',
    }),
    notes: t.exposeString("notes", { nullable: true, description: "Free-text notes." }),
    stage: t.expose("stage", { type: LeadStageEnum, description: "The sales stage." }),
    priority: t.expose("priority", { type: PriorityEnum, description: "How urgent the lead is." }),
    estimated_value: t.expose("estimatedValue", {
      type: "Money",
      nullable: true,
      description: "The expected deal size, in `currency`; null when unknown.",
    }),
    currency: t.exposeString("currency", { description: "ISO 4217 code of estimated_value, e.g. USD." }),
    expected_close_date: t.expose("expectedCloseDate", {
      type: "Date",
      nullable: true,
      description: "When the deal is expected to close; null when not set.",
    }),
    next_follow_up_at: t.expose("nextFollowUpAt", {
      type: "DateTime",
      nullable: true,
      description: "When to contact the lead next; null when not set.",
    }),
    last_contacted_at: t.expose("lastContactedAt", {
      type: "DateTime",
      nullable: true,
      description: "When the lead was last contacted; null when not set.",
    }),
    stage_changed_at: t.expose("stageChangedAt", {
      type: "DateTime",
      nullable: true,
      description: "When the stage last changed; null if it never has.",
    }),
    client_id: t.exposeString("clientId", {
      nullable: true,
      description: "The client (`cli_…`) this lead was converted into; null until it is converted.",
    }),
    client: t.relation("client", {
      type: Client,
      nullable: true,
      extensions: { rest: false },
      description: "The client this lead was converted into (needs clients.read).",
    }),
    created_at: t.expose("createdAt", { type: "DateTime", description: "When the lead was created." }),
    updated_at: t.expose("updatedAt", { type: "DateTime", description: "When the lead was last changed." }),
  }),
});

const LeadList = listType("Lead", Lead);

const leadFields = builder.args((t) => ({
  first_name: t.string({
    description:
      "The contact's first name. On creation, required unless full_name is given; it cannot be cleared.",
  }),
  last_name: t.string({ description: "The contact's last name; null clears it." }),
  full_name: t.string({
    description:
      "Instead of first_name: split at the first space into first and last name. Ignored when first_name is given.",
  }),
  company_name: t.string({ description: "The company the contact works for; null clears it." }),
  email: t.string({ description: "An e-mail address, stored in lower case; null clears it." }),
  phone: t.string({ description: "A phone number, stored as given; null clears it." }),
  source: t.string({ description: "Where the lead came from (free text); null clears it." }),
  notes: t.string({ description: "Free-text notes; null clears them." }),
  stage: t.field({
    type: LeadStageEnum,
    description: "The sales stage, default new; a change sets stage_changed_at and emits lead.stage_changed.",
  }),
  priority: t.field({ type: PriorityEnum, description: "How urgent the lead is; default medium." }),
  estimated_value: t.field({
    type: "Money",
    description: "The expected deal size, in `currency`; null clears it.",
  }),
  currency: t.string({ description: "ISO 4217 code in capitals, default USD." }),
  expected_close_date: t.field({
    type: "Date",
    description: "When the deal is expected to close (YYYY-MM-DD); null clears it.",
  }),
  next_follow_up_at: t.field({
    type: "DateTime",
    description: "When to contact the lead next, with a time zone; null clears it.",
  }),
  last_contacted_at: t.field({
    type: "DateTime",
    description: "When the lead was last contacted, with a time zone; null clears it.",
  }),
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
    description: "The workspace's leads, newest first. Needs leads.read.",
    extensions: rest("GET /leads", "List leads"),
    authScopes: { scope: "leads.read" },
    args: {
      stage: t.arg({ type: LeadStageEnum, description: "Only leads in this stage." }),
      ...searchArg,
      ...pageArgs,
    },
    resolve: (_root, args, ctx, info) =>
      listPage(args, ctx, info, ({ cursor, ...page }) =>
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
    description:
      "One lead by id; an unknown id, or one of another workspace, is a not_found error. Needs leads.read.",
    extensions: rest("GET /leads/:id", "Retrieve a lead"),
    authScopes: { scope: "leads.read" },
    args: { id: t.arg.id({ required: true, description: "The lead's id (`lead_…`)." }) },
    resolve: async (query, _root, args, ctx) =>
      found("lead", args.id, await ctx.db.lead.findFirst({ ...query, where: where(ctx, args.id) })),
  }),
}));

builder.mutationFields((t) => ({
  createLead: t.prismaField({
    type: "Lead",
    description: "Creates a lead (emits lead.created). Needs leads.write.",
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
          data: {
            ...data,
            firstName: firstName!,
            id: newId("lead"),
            workspaceId: ctx.credential.workspaceId,
          },
        });
        await emit(tx, ctx, "lead.created", "Lead", lead);
        return lead;
      });
    },
  }),
  updateLead: t.prismaField({
    type: "Lead",
    description:
      "Updates the fields sent; an absent field stays as it is and null clears an optional one. A stage change sets stage_changed_at and emits lead.stage_changed. Needs leads.write.",
    extensions: rest("PATCH /leads/:id", "Update a lead"),
    authScopes: { scope: "leads.write" },
    args: { id: t.arg.id({ required: true, description: "The lead's id (`lead_…`)." }), ...leadFields },
    resolve: (query, _root, { id, ...args }, ctx) =>
      owned("lead", id, () =>
        ctx.db.$transaction(async (tx) => {
          const data = leadData(args);
          // Locked: of concurrent stage changes, each sees the stage the one before it left (one event per change).
          await lockOwned(tx, "lead", id, ctx.credential.workspaceId);
          const current = await tx.lead.findUniqueOrThrow({ where: { id }, select: { stage: true } });
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
    description: "Deletes a lead for good. Needs leads.write.",
    extensions: rest("DELETE /leads/:id", "Delete a lead"),
    authScopes: { scope: "leads.write" },
    args: { id: t.arg.id({ required: true, description: "The lead's id (`lead_…`)." }) },
    resolve: async (_root, { id }, ctx) => {
      await owned("lead", id, () => ctx.db.lead.delete({ where: where(ctx, id) }));
      return { id, object: "lead", deleted: true as const };
    },
  }),
  convertLead: t.prismaField({
    type: "Lead",
    description:
      "Creates a client from the lead (name, e-mail, phone, company, currency, notes), links it as client_id and moves the lead to won. A lead converts once: again is invalid_state. Needs leads.write and clients.write.",
    extensions: rest("POST /leads/:id/convert", "Convert a lead into a client"),
    authScopes: { scope: ["leads.write", "clients.write"] },
    args: { id: t.arg.id({ required: true, description: "The lead's id (`lead_…`)." }) },
    resolve: (query, _root, { id }, ctx) =>
      ctx.db.$transaction(async (tx) => {
        // Locked before it is read: of concurrent conversions one converts, the others find client_id set.
        await lockOwned(tx, "lead", id, ctx.credential.workspaceId);
        const lead = await tx.lead.findUniqueOrThrow({ where: { id } });
        if (lead.clientId)
          throw invalidState(`Lead '${id}' was already converted into client '${lead.clientId}'.`);
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
