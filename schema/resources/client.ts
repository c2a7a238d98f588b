import { builder } from "../builder.ts";
import type { Client as ClientRow } from "../generated/prisma/client.ts";
import { listPage, searchWhere } from "../lib/cursor.ts";
import { newId } from "../lib/ids.ts";
import { defined, found, owned } from "../lib/records.ts";
import { currency, optionalEmail, optionalText, requiredText } from "../lib/validate.ts";
import type { Context } from "../context.ts";
import { emit } from "../events.ts";
import { invalidState } from "../lib/errors.ts";
import { rest } from "../lib/rest.ts";
import { Deleted, listType, pageArgs, searchArg } from "./shared.ts";

interface AddressShape {
  line1: string | null;
  line2: string | null;
  city: string | null;
  region: string | null;
  postal_code: string | null;
  country: string | null;
}

const ADDRESS_COLUMNS = {
  line1: "addressLine1",
  line2: "addressLine2",
  city: "addressCity",
  region: "addressRegion",
  postal_code: "addressPostalCode",
  country: "addressCountry",
} as const satisfies Record<keyof AddressShape, keyof ClientRow>;

const Address = builder.objectRef<AddressShape>("Address").implement({
  fields: (t) => ({
    line1: t.exposeString("line1", { nullable: true }),
    line2: t.exposeString("line2", { nullable: true }),
    city: t.exposeString("city", { nullable: true }),
    region: t.exposeString("region", { nullable: true }),
    postal_code: t.exposeString("postal_code", { nullable: true }),
    country: t.exposeString("country", { nullable: true }),
  }),
});

const AddressInput = builder.inputType("AddressInput", {
  fields: (t) => ({
    line1: t.string(),
    line2: t.string(),
    city: t.string(),
    region: t.string(),
    postal_code: t.string(),
    country: t.string(),
  }),
});

export const Client = builder.prismaObject("Client", {
  description: "A customer of the workspace.",
  authScopes: { readable: "clients" },
  fields: (t) => ({
    object: t.string({ resolve: () => "client" }),
    id: t.exposeID("id"),
    name: t.exposeString("name"),
    email: t.exposeString("email", { nullable: true }),
    phone: t.exposeString("phone", { nullable: true }),
    company_name: t.exposeString("companyName", { nullable: true }),
    tax_id: t.exposeString("taxId", { nullable: true }),
    address: t.field({
      type: Address,
      resolve: (client) =>
        Object.fromEntries(Object.entries(ADDRESS_COLUMNS).map(([key, column]) => [key, client[column]])) as unknown as AddressShape,
    }),
    currency: t.exposeString("currency"),
    notes: t.exposeString("notes", { nullable: true }),
    created_at: t.expose("createdAt", { type: "DateTime" }),
    updated_at: t.expose("updatedAt", { type: "DateTime" }),
  }),
});

const ClientList = listType("Client", Client);

const clientFields = (required: boolean) =>
  builder.args((t) => ({
    name: t.string({ required }),
    email: t.string(),
    phone: t.string(),
    company_name: t.string(),
    tax_id: t.string(),
    address: t.field({ type: AddressInput }),
    currency: t.string({ description: "ISO 4217, default USD." }),
    notes: t.string(),
  }));

type ClientArgs = {
  name?: string | null;
  email?: string | null;
  phone?: string | null;
  company_name?: string | null;
  tax_id?: string | null;
  address?: Partial<Record<keyof AddressShape, string | null>> | null;
  currency?: string | null;
  notes?: string | null;
};

/** Maps API arguments to columns; absent arguments stay absent so PATCH leaves them alone. */
function clientData(args: ClientArgs) {
  const address = args.address === null ? {} : args.address;
  return defined({
    name: args.name === undefined ? undefined : requiredText("name", args.name),
    email: optionalEmail("email", args.email),
    phone: optionalText(args.phone),
    companyName: optionalText(args.company_name),
    taxId: optionalText(args.tax_id),
    currency: currency("currency", args.currency),
    notes: optionalText(args.notes),
    ...(address &&
      Object.fromEntries(
        Object.entries(ADDRESS_COLUMNS).map(([key, column]) => [
          column,
          args.address === null ? null : optionalText(address[key as keyof AddressShape]),
        ]),
      )),
  });
}

const where = (ctx: Context, id: string) => ({ id, workspaceId: ctx.credential.workspaceId });

builder.queryFields((t) => ({
  clients: t.field({
    type: ClientList,
    description: "Clients, newest first.",
    extensions: rest("GET /clients", "List clients"),
    authScopes: { scope: "clients.read" },
    args: { ...searchArg, ...pageArgs },
    resolve: (_root, args, ctx) =>
      listPage(args, ({ cursor, ...page }) =>
        ctx.db.client.findMany({
          where: {
            workspaceId: ctx.credential.workspaceId,
            ...cursor,
            ...searchWhere(args.search, ["name", "companyName", "email"]),
          },
          ...page,
        }),
      ),
  }),
  client: t.prismaField({
    type: "Client",
    nullable: true,
    extensions: rest("GET /clients/:id", "Retrieve a client"),
    authScopes: { scope: "clients.read" },
    args: { id: t.arg.id({ required: true }) },
    resolve: async (query, _root, args, ctx) =>
      found("client", args.id, await ctx.db.client.findFirst({ ...query, where: where(ctx, args.id) })),
  }),
}));

builder.mutationFields((t) => ({
  createClient: t.prismaField({
    type: "Client",
    extensions: rest("POST /clients", "Create a client", 201),
    authScopes: { scope: "clients.write" },
    args: clientFields(true),
    resolve: (query, _root, args, ctx) => {
      const data = { name: requiredText("name", args.name), ...clientData(args) };
      return ctx.db.$transaction(async (tx) => {
        const client = await tx.client.create({
          ...query,
          data: { ...data, id: newId("client"), workspaceId: ctx.credential.workspaceId },
        });
        await emit(tx, ctx, "client.created", "Client", client);
        return client;
      });
    },
  }),
  updateClient: t.prismaField({
    type: "Client",
    description: "Updates the fields sent; null clears an optional field.",
    extensions: rest("PATCH /clients/:id", "Update a client"),
    authScopes: { scope: "clients.write" },
    args: { id: t.arg.id({ required: true }), ...clientFields(false) },
    resolve: (query, _root, { id, ...args }, ctx) => {
      const data = clientData(args);
      return owned("client", id, () =>
        ctx.db.$transaction(async (tx) => {
          const client = await tx.client.update({ ...query, where: where(ctx, id), data });
          await emit(tx, ctx, "client.updated", "Client", client);
          return client;
        }),
      );
    },
  }),
  deleteClient: t.field({
    type: Deleted,
    extensions: rest("DELETE /clients/:id", "Delete a client"),
    authScopes: { scope: "clients.write" },
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_root, { id }, ctx) => {
      await ctx.db.$transaction(async (tx) => {
        const client = found("client", id, await tx.client.findFirst({ where: where(ctx, id), select: { _count: { select: { invoices: true } } } }));
        if (client._count.invoices > 0) throw invalidState(`Client '${id}' has invoices or quotes and cannot be deleted.`);
        await tx.client.delete({ where: { id } });
      });
      return { id, object: "client", deleted: true as const };
    },
  }),
}));
