import { builder } from "../builder.ts";
import type { Context } from "../context.ts";
import { emit } from "../events.ts";
import type { Client as ClientRow } from "../generated/prisma/client.ts";
import { searchWhere } from "../lib/cursor.ts";
import { invalidState } from "../lib/errors.ts";
import { newId } from "../lib/ids.ts";
import { listPage } from "../lib/list-page.ts";
import { lockOwned } from "../lib/locks.ts";
import { defined, found, owned } from "../lib/records.ts";
import { rest } from "../lib/rest.ts";
import { currency, optionalEmail, optionalText, requiredText } from "../lib/validate.ts";
import { Deleted, listType, objectKind, pageArgs, searchArg } from "./shared.ts";

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

const addressOf = (client: ClientRow) =>
  Object.fromEntries(
    Object.entries(ADDRESS_COLUMNS).map(([key, column]) => [key, client[column]]),
  ) as unknown as AddressShape;

const Address = builder.objectRef<AddressShape>("Address").implement({
  description: "A postal address; every part is optional (null when not given).",
  fields: (t) => ({
    line1: t.exposeString("line1", { nullable: true, description: "Street and number." }),
    line2: t.exposeString("line2", {
      nullable: true,
      description: "Apartment, suite, building or the like.",
    }),
    city: t.exposeString("city", { nullable: true, description: "City or town." }),
    region: t.exposeString("region", { nullable: true, description: "State, province or county." }),
    postal_code: t.exposeString("postal_code", { nullable: true, description: "Postal or ZIP code." }),
    country: t.exposeString("country", { nullable: true, description: "Country, as entered (free text)." }),
  }),
});

const AddressInput = builder.inputType("AddressInput", {
  description:
    "A postal address. In an update, only the parts sent change; null or an empty string clears a part.",
  fields: (t) => ({
    line1: t.string({ description: "Street and number." }),
    line2: t.string({ description: "Apartment, suite, building or the like." }),
    city: t.string({ description: "City or town." }),
    region: t.string({ description: "State, province or county." }),
    postal_code: t.string({ description: "Postal or ZIP code." }),
    country: t.string({ description: "Country (free text)." }),
  }),
});

export const Client = builder.prismaObject("Client", {
  description: "A customer of the workspace, billed by invoices. Visible with clients.read or clients.write.",
  authScopes: { readable: "clients" },
  fields: (t) => ({
    object: objectKind(t, "client"),
    id: t.exposeID("id", { description: "`cli_…`." }),
    name: t.exposeString("name", { description: "The client's name: a person or a business." }),
    email: t.exposeString("email", { nullable: true, description: "E-mail address, in lower case." }),
    phone: t.exposeString("phone", { nullable: true, description: "Phone number, as entered." }),
    company_name: t.exposeString("companyName", {
      nullable: true,
      description: "The company, when the client is a person in one.",
    }),
    tax_id: t.exposeString("taxId", { nullable: true, description: "Tax or VAT number, as entered." }),
    address: t.field({
      type: Address,
      description: "Postal address; always present, its parts null when not given.",
      resolve: addressOf,
      // A page of clients weighs each one's address as stored (schema/lib/list-page.ts).
      extensions: { measure: addressOf },
    }),
    currency: t.exposeString("currency", {
      description: "ISO 4217 code; the default currency of the client's new invoices and quotes.",
    }),
    notes: t.exposeString("notes", { nullable: true, description: "Free-text notes." }),
    created_at: t.expose("createdAt", { type: "DateTime", description: "When the client was created." }),
    updated_at: t.expose("updatedAt", { type: "DateTime", description: "When the client was last changed." }),
  }),
});

const ClientList = listType("Client", Client);

const clientFields = (required: boolean) =>
  builder.args((t) => ({
    name: t.string({ required, description: "The client's name; cannot be empty or cleared." }),
    email: t.string({ description: "An e-mail address, stored in lower case; null clears it." }),
    phone: t.string({ description: "A phone number, stored as given; null clears it." }),
    company_name: t.string({ description: "The company; null clears it." }),
    tax_id: t.string({ description: "Tax or VAT number; null clears it." }),
    address: t.field({
      type: AddressInput,
      description: "Postal address: the parts sent change; null clears the whole address.",
    }),
    currency: t.string({ description: "ISO 4217 code in capitals, default USD." }),
    notes: t.string({ description: "Free-text notes; null clears them." }),
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
    description: "The workspace's clients, newest first. Needs clients.read.",
    extensions: rest("GET /clients", "List clients"),
    authScopes: { scope: "clients.read" },
    args: { ...searchArg, ...pageArgs },
    resolve: (_root, args, ctx, info) =>
      listPage(args, ctx, info, ({ cursor, ...page }) =>
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
    description:
      "One client by id; an unknown id, or one of another workspace, is a not_found error. Needs clients.read.",
    extensions: rest("GET /clients/:id", "Retrieve a client"),
    authScopes: { scope: "clients.read" },
    args: { id: t.arg.id({ required: true, description: "The client's id (`cli_…`)." }) },
    resolve: async (query, _root, args, ctx) =>
      found("client", args.id, await ctx.db.client.findFirst({ ...query, where: where(ctx, args.id) })),
  }),
}));

builder.mutationFields((t) => ({
  createClient: t.prismaField({
    type: "Client",
    description: "Creates a client (emits client.created). Needs clients.write.",
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
    description:
      "Updates the fields sent; an absent field stays as it is and null clears an optional one (emits client.updated). Needs clients.write.",
    extensions: rest("PATCH /clients/:id", "Update a client"),
    authScopes: { scope: "clients.write" },
    args: {
      id: t.arg.id({ required: true, description: "The client's id (`cli_…`)." }),
      ...clientFields(false),
    },
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
    description:
      "Deletes a client that has no invoices or quotes (otherwise invalid_state). Needs clients.write.",
    extensions: rest("DELETE /clients/:id", "Delete a client"),
    authScopes: { scope: "clients.write" },
    args: { id: t.arg.id({ required: true, description: "The client's id (`cli_…`)." }) },
    resolve: async (_root, { id }, ctx) => {
      await ctx.db.$transaction(async (tx) => {
        // Locked: a concurrent delete waits here and then finds no client (404), and no invoice can be
        // written for the client between the count and the delete.
        await lockOwned(tx, "client", id, ctx.credential.workspaceId);
        const invoices = await tx.invoice.count({ where: { clientId: id } });
        if (invoices > 0) throw invalidState(`Client '${id}' has invoices or quotes and cannot be deleted.`);
        await tx.client.delete({ where: { id } });
      });
      return { id, object: "client", deleted: true as const };
    },
  }),
}));
