import { beforeAll, describe, expect, it } from "vitest";
import { newId } from "../../../schema/lib/ids.ts";
import { expectHidden, ids } from "../../support/assertions.ts";
import { graphql } from "../../support/graphql.ts";
import { call, rest } from "../../support/http.ts";
import { expectError } from "../../support/invoicing.ts";
import type { Tenant } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";

const NEVER_BUCKET = "bkt_01J00000000000000000000000";

e2e("buckets", (server) => {
  let tenant: Tenant;
  let api: ReturnType<typeof rest>;

  beforeAll(async () => {
    tenant = await server().tenant();
    api = rest(server().api, tenant.key);
  });

  /** An object row in a bucket, written directly: uploads are not built yet, the empty-bucket rule is. */
  async function objectIn(bucketId: string, workspaceId = tenant.workspaceId) {
    await server().running.db.prisma.storedObject.create({
      data: {
        id: newId("storedObject"),
        workspaceId,
        bucketId,
        fileName: "a.txt",
        contentType: "text/plain",
        sizeBytes: 1n,
        sha256: "0".repeat(64),
        storeKey: `test/${newId("storedObject")}`,
      },
    });
  }

  it("creates (201), retrieves, lists newest first and deletes a bucket", async () => {
    const made = await api.post("/buckets", { name: "invoices-2026" });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    expect(made.body).toEqual({
      object: "bucket",
      id: expect.stringMatching(/^bkt_[0-9A-Z]{26}$/),
      name: "invoices-2026",
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expect((await api.get(`/buckets/${made.body.id}`)).body).toEqual(made.body);
    const second = (await api.post("/buckets", { name: "photos" })).body;
    const list = await api.get("/buckets");
    expect(list.body).toMatchObject({ object: "list", has_more: false, next_cursor: null });
    expect(ids(list.body).slice(0, 2)).toEqual([second.id, made.body.id]);

    const deleted = await api.delete(`/buckets/${made.body.id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ id: made.body.id, object: "bucket", deleted: true });
    expectError(await api.get(`/buckets/${made.body.id}`), 404, "not_found", "id");
  });

  it.each([["ab"], ["a".repeat(64)], ["Photos"], ["my_bucket"], ["two words"], ["ünïcode"], [""]])(
    "refuses the name %j with 400 validation_failed",
    async (name) => {
      const before = (await api.get("/buckets?limit=100")).body.data.length;
      expectError(await api.post("/buckets", { name }), 400, "validation_failed", "name");
      expect((await api.get("/buckets?limit=100")).body.data.length).toBe(before);
    },
  );

  it("takes names of exactly 3 and 63 characters", async () => {
    expect((await api.post("/buckets", { name: "abc" })).status).toBe(201);
    expect((await api.post("/buckets", { name: `x${"-".repeat(61)}y` })).status).toBe(201);
  });

  it("a name taken in the workspace is 409 bucket_name_taken; another workspace may use it", async () => {
    expect((await api.post("/buckets", { name: "shared-name" })).status).toBe(201);
    const again = await api.post("/buckets", { name: "shared-name" });
    expectError(again, 409, "bucket_name_taken", "name");
    expect(again.body.error.type).toBe("invalid_request_error");
    const other = await server().tenant();
    expect((await rest(server().api, other.key).post("/buckets", { name: "shared-name" })).status).toBe(201);
  });

  it("a bucket that holds objects is not deleted: 400 invalid_state", async () => {
    const bucket = (await api.post("/buckets", { name: "not-empty" })).body;
    await objectIn(bucket.id);
    expectError(await api.delete(`/buckets/${bucket.id}`), 400, "invalid_state");
    expect((await api.get(`/buckets/${bucket.id}`)).status).toBe(200);
  });

  it("requires a name and refuses unknown fields", async () => {
    expectError(await api.post("/buckets", {}), 400, "validation_failed", "name");
    expectError(
      await api.post("/buckets", { name: "fine-name", region: "eu" }),
      400,
      "validation_failed",
      "region",
    );
  });

  describe("scopes and tenancy", () => {
    it("storage.read lists and reads, storage.write creates and deletes, each alone", async () => {
      const reader = rest(server().api, (await server().key(tenant.workspaceId, ["storage.read"])).key);
      const writer = rest(server().api, (await server().key(tenant.workspaceId, ["storage.write"])).key);
      expect((await reader.get("/buckets")).status).toBe(200);
      expectError(await reader.post("/buckets", { name: "reader-made" }), 403, "insufficient_scope");
      const made = await writer.post("/buckets", { name: "writer-made" });
      expect(made.status).toBe(201);
      expectError(await writer.get("/buckets"), 403, "insufficient_scope");
      expect((await writer.delete(`/buckets/${made.body.id}`)).status).toBe(200);
    });

    it("another workspace's bucket is 404 on every route, like an unknown id, and stays", async () => {
      const other = await server().tenant();
      const theirs = (await rest(server().api, other.key).post("/buckets", { name: "theirs" })).body;
      for (const method of ["GET", "DELETE"]) {
        const res = await call(method, `${server().api}/buckets/${theirs.id}`, { key: tenant.key });
        const never = await call(method, `${server().api}/buckets/${NEVER_BUCKET}`, { key: tenant.key });
        expectHidden(res, never, theirs.id, NEVER_BUCKET);
      }
      expect(ids((await api.get("/buckets?limit=100")).body)).not.toContain(theirs.id);
      expect((await rest(server().api, other.key).get(`/buckets/${theirs.id}`)).status).toBe(200);
    });
  });

  it("works over GraphQL with the same rules", async () => {
    const gql = graphql(server().url, tenant.key);
    const made = await gql(`mutation { createBucket(name: "via-graphql") { object id name } }`);
    expect(made.data.createBucket).toMatchObject({ object: "bucket", name: "via-graphql" });
    const taken = await gql(`mutation { createBucket(name: "via-graphql") { id } }`);
    expect(taken.errors?.[0]?.extensions).toMatchObject({ code: "bucket_name_taken", param: "name" });
    const listed = await gql(`{ buckets(limit: 100) { data { name } } }`);
    expect(listed.data.buckets.data.map((b: { name: string }) => b.name)).toContain("via-graphql");
    const removed = await gql(`mutation($id: ID!) { deleteBucket(id: $id) { deleted } }`, {
      id: made.data.createBucket.id,
    });
    expect(removed.data.deleteBucket).toEqual({ deleted: true });
  });
});
