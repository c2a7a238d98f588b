import { describe, expect, it } from "vitest";
import { ISO, ids } from "../../support/assertions.ts";
import { graphql } from "../../support/graphql.ts";
import { e2e } from "../../support/suite.ts";
import { useWorkspace } from "../../support/workspace.ts";
import { CLIENT_ID, EMPTY_ADDRESS, MISSING, scratchOf } from "./support.ts";

const CLIENT_FIELDS = `object id name email phone company_name tax_id
  address { line1 line2 city region postal_code country } currency notes created_at updated_at`;

e2e("clients: over GraphQL", (server) => {
  const { tenant, api } = useWorkspace(server);
  const scratch = scratchOf(server);

  describe("over GraphQL", () => {
    it("creates, reads, updates and deletes with the same vocabulary REST uses", async () => {
      const gql = graphql(server().url, tenant.key);
      const made = await gql(
        `mutation ($address: AddressInput) {
          createClient(name: "Initech", email: "Bill@Initech.Example", company_name: "Initech LLC", address: $address, notes: "TPS") { ${CLIENT_FIELDS} }
        }`,
        { address: { line1: "4120 Freidrich Ln", city: "Austin", region: "TX", country: "US" } },
      );
      expect(made.errors).toBeUndefined();
      const created = made.data.createClient;
      expect(created).toEqual({
        object: "client",
        id: expect.stringMatching(CLIENT_ID),
        name: "Initech",
        email: "bill@initech.example",
        phone: null,
        company_name: "Initech LLC",
        tax_id: null,
        address: {
          ...EMPTY_ADDRESS,
          line1: "4120 Freidrich Ln",
          city: "Austin",
          region: "TX",
          country: "US",
        },
        currency: "USD",
        notes: "TPS",
        created_at: expect.stringMatching(ISO),
        updated_at: expect.stringMatching(ISO),
      });
      expect((await api.get(`/clients/${created.id}`)).body).toEqual(created);

      const read = await gql(`query ($id: ID!) { client(id: $id) { ${CLIENT_FIELDS} } }`, { id: created.id });
      expect(read.errors).toBeUndefined();
      expect(read.data.client).toEqual(created);

      const partial = await gql(
        `mutation ($id: ID!) { updateClient(id: $id, address: { postal_code: "78701" }, notes: null) { address { line1 city postal_code } notes name } }`,
        { id: created.id },
      );
      expect(partial.errors).toBeUndefined();
      expect(partial.data.updateClient).toEqual({
        address: { line1: "4120 Freidrich Ln", city: "Austin", postal_code: "78701" },
        notes: null,
        name: "Initech",
      });

      const cleared = await gql(
        `mutation ($id: ID!) { updateClient(id: $id, address: null) { address { line1 city region country postal_code line2 } } }`,
        {
          id: created.id,
        },
      );
      expect(cleared.data.updateClient.address).toEqual(EMPTY_ADDRESS);
      expect((await api.get(`/clients/${created.id}`)).body.address).toEqual(EMPTY_ADDRESS);

      const deleted = await gql(`mutation ($id: ID!) { deleteClient(id: $id) { id object deleted } }`, {
        id: created.id,
      });
      expect(deleted.errors).toBeUndefined();
      expect(deleted.data.deleteClient).toEqual({ id: created.id, object: "client", deleted: true });

      const gone = await gql(`query ($id: ID!) { client(id: $id) { id } }`, { id: created.id });
      expect(gone.data).toEqual({ client: null });
      expect(gone.errors?.[0]?.extensions).toMatchObject({
        code: "not_found",
        request_id: expect.stringMatching(/^req_/),
      });
      expect((await api.get(`/clients/${created.id}`)).status).toBe(404);
    });

    it("lists with limit, cursor and search", async () => {
      const own = await server().tenant();
      const gql = graphql(server().url, own.key);
      const made: string[] = [];
      for (const name of ["Umbrella", "Cyberdyne", "Umbrella Pharma"]) {
        const res = await gql(`mutation ($name: String!) { createClient(name: $name) { id } }`, { name });
        made.push(res.data.createClient.id);
      }
      const first = await gql(`{ clients(limit: 2) { object has_more next_cursor data { id } } }`);
      expect(first.errors).toBeUndefined();
      expect(first.data.clients).toMatchObject({ object: "list", has_more: true });
      expect(ids(first.data.clients)).toEqual([made[2], made[1]]);
      const second = await gql(
        `query ($c: String) { clients(limit: 2, cursor: $c) { has_more next_cursor data { id } } }`,
        {
          c: first.data.clients.next_cursor,
        },
      );
      expect(second.data.clients).toEqual({ has_more: false, next_cursor: null, data: [{ id: made[0] }] });
      const search = await gql(`{ clients(search: "UMBRELLA") { data { id name } } }`);
      expect(search.data.clients.data).toEqual([
        { id: made[2], name: "Umbrella Pharma" },
        { id: made[0], name: "Umbrella" },
      ]);
    });

    it("reports validation and not-found errors with code, param and request_id, and writes nothing", async () => {
      const { own, count } = await scratch();
      const gql = graphql(server().url, own.key);
      for (const [query, param] of [
        [`mutation { createClient(name: "") { id } }`, "name"],
        [`mutation { createClient(name: "A", email: "nope") { id } }`, "email"],
        [`mutation { createClient(name: "A", currency: "usd") { id } }`, "currency"],
        [`{ clients(limit: 0) { data { id } } }`, "limit"],
        [`{ clients(limit: 101) { data { id } } }`, "limit"],
        [`{ clients(cursor: "junk") { data { id } } }`, "cursor"],
      ] as const) {
        const res = await gql(query);
        expect(res.data, query).toBeNull();
        expect(res.errors?.[0]?.extensions, query).toMatchObject({
          code: "validation_failed",
          type: "invalid_request_error",
          param,
          request_id: expect.stringMatching(/^req_/),
        });
      }
      const wrongType = await gql(`mutation ($name: String!) { createClient(name: $name) { id } }`, {
        name: 5,
      });
      expect(wrongType.errors?.[0]?.extensions).toMatchObject({
        code: "validation_failed",
        type: "invalid_request_error",
      });

      for (const query of [
        `mutation { updateClient(id: "${MISSING}", name: "x") { id } }`,
        `mutation { deleteClient(id: "${MISSING}") { id } }`,
      ]) {
        const res = await gql(query);
        expect(res.data).toBeNull();
        expect(res.errors?.[0]?.extensions).toMatchObject({
          code: "not_found",
          type: "invalid_request_error",
        });
      }
      expect(await count()).toBe(0);
    });
  });
});
