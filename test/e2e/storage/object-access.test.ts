import { randomBytes } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { expectHidden, ids } from "../../support/assertions.ts";
import { graphql } from "../../support/graphql.ts";
import { type ApiResponse, rest } from "../../support/http.ts";
import { expectError } from "../../support/invoicing.ts";
import type { Tenant } from "../../support/server.ts";
import {
  ALL_BYTES,
  b64,
  NEVER_BUCKET,
  NEVER_OBJECT,
  NOT_UTF8,
  newKey,
  objectsE2e,
  objectsHelpers,
  sha256,
} from "./support.ts";

/**
 * Storage objects end to end: scopes, tenancy, events, idempotency and GraphQL. The same body runs on
 * each stack with the local byte store, and once more on PostgreSQL with the bytes in S3 (s3rver on
 * loopback): objectsE2e in ./support.ts. The other parts: object-uploads.test.ts,
 * object-reads.test.ts.
 */

objectsE2e("objects: scopes, tenancy, events, idempotency and GraphQL", (server, _stack, _s3) => {
  const {
    store,
    storedKeys,
    storeKeyOf,
    content,
    rawUpload,
    rawText,
    upload,
    uploadBytes,
    newBucket,
    stored,
    holdings,
  } = objectsHelpers(server, _s3);

  describe("scopes", () => {
    let owner: Tenant;
    let bucket: string;
    let object: any;
    let reader: string;
    let writer: string;
    let neither: string;
    const expectScope = (res: ApiResponse, scope: string) => {
      expectError(res, 403, "insufficient_scope");
      expect(res.body.error).toMatchObject({ type: "permission_error", required_scope: scope });
    };

    beforeAll(async () => {
      owner = await server().tenant();
      bucket = await newBucket(owner.key);
      object = await stored(owner.key, bucket, "scoped.bin", NOT_UTF8);
      reader = (await server().key(owner.workspaceId, ["storage.read"])).key;
      writer = (await server().key(owner.workspaceId, ["storage.write"])).key;
      neither = (await server().key(owner.workspaceId, ["leads.read", "leads.write", "webhooks.read"])).key;
    });

    it("storage.read lists, retrieves, downloads and reads usage", async () => {
      const api = rest(server().api, reader);
      expect(ids((await api.get(`/buckets/${bucket}/objects`)).body)).toEqual([object.id]);
      expect((await api.get(`/objects/${object.id}`)).body).toEqual(object);
      expect((await content(reader, object.id)).bytes.equals(NOT_UTF8)).toBe(true);
      expect((await content(reader, object.id, { method: "HEAD" })).status).toBe(200);
      expect((await api.get("/storage")).status).toBe(200);
    });

    it("storage.read cannot upload (JSON or raw) or delete: 403 required_scope storage.write, nothing changes", async () => {
      const before = await holdings(owner, bucket);
      expectScope(await uploadBytes(reader, bucket, "no.txt", Buffer.from("no")), "storage.write");
      expectScope(await rawText(reader, bucket, "no", "no.txt"), "storage.write");
      expectScope(
        await rawUpload(reader, bucket, Buffer.from("%PDF"), { contentType: "application/pdf" }),
        "storage.write",
      );
      expectScope(await rest(server().api, reader).delete(`/objects/${object.id}`), "storage.write");
      expect(await holdings(owner, bucket)).toEqual(before);
    });

    it("storage.write uploads and deletes but cannot download, list or retrieve: required_scope storage.read", async () => {
      const api = rest(server().api, writer);
      const json = await uploadBytes(writer, bucket, "by-writer.txt", Buffer.from("w"), "text/plain");
      expect(json.status, JSON.stringify(json.body)).toBe(201);
      const rawMade = await rawText(writer, bucket, "raw", "raw-writer.txt");
      expect(rawMade.status, JSON.stringify(rawMade.body)).toBe(201);
      expectScope(await content(writer, object.id), "storage.read");
      expectScope(await api.get(`/buckets/${bucket}/objects`), "storage.read");
      expectScope(await api.get(`/objects/${object.id}`), "storage.read");
      expectScope(await api.get("/storage"), "storage.read");
      expect((await api.delete(`/objects/${json.body.id}`)).body).toEqual({
        id: json.body.id,
        object: "file",
        deleted: true,
      });
      expect((await api.delete(`/objects/${rawMade.body.id}`)).status).toBe(200);
    });

    it("a key without storage scopes gets 403 on every storage route", async () => {
      const api = rest(server().api, neither);
      expectScope(await api.get("/storage"), "storage.read");
      expectScope(await api.get(`/buckets/${bucket}/objects`), "storage.read");
      expectScope(await api.get(`/objects/${object.id}`), "storage.read");
      expectScope(await content(neither, object.id), "storage.read");
      expectScope(await uploadBytes(neither, bucket, "x.txt", Buffer.from("x")), "storage.write");
      expectScope(await rawText(neither, bucket, "x", "x.txt"), "storage.write");
      expectScope(await api.delete(`/objects/${object.id}`), "storage.write");
      expect((await rest(server().api, owner.key).get(`/objects/${object.id}`)).body).toEqual(object);
    });
  });

  describe("tenancy", () => {
    let owner: Tenant;
    let intruder: Tenant;
    let bucket: string;
    let object: any;

    beforeAll(async () => {
      owner = await server().tenant();
      intruder = await server().tenant();
      bucket = await newBucket(owner.key);
      object = await stored(owner.key, bucket, "private.bin", ALL_BYTES);
    });

    it("another workspace's bucket and object ids are 404 on every route, like ids that never existed, and nothing changes", async () => {
      const before = await holdings(owner, bucket);
      const key = intruder.key;
      const api = rest(server().api, key);
      const pairs: [ApiResponse, ApiResponse, string, string][] = [
        [
          await api.get(`/buckets/${bucket}/objects`),
          await api.get(`/buckets/${NEVER_BUCKET}/objects`),
          bucket,
          NEVER_BUCKET,
        ],
        [
          await uploadBytes(key, bucket, "x.txt", Buffer.from("x")),
          await uploadBytes(key, NEVER_BUCKET, "x.txt", Buffer.from("x")),
          bucket,
          NEVER_BUCKET,
        ],
        [
          await rawText(key, bucket, "x", "x.txt"),
          await rawText(key, NEVER_BUCKET, "x", "x.txt"),
          bucket,
          NEVER_BUCKET,
        ],
        [
          await api.get(`/objects/${object.id}`),
          await api.get(`/objects/${NEVER_OBJECT}`),
          object.id,
          NEVER_OBJECT,
        ],
        [
          await api.delete(`/objects/${object.id}`),
          await api.delete(`/objects/${NEVER_OBJECT}`),
          object.id,
          NEVER_OBJECT,
        ],
        [await content(key, object.id), await content(key, NEVER_OBJECT), object.id, NEVER_OBJECT],
        [
          await content(key, object.id, { headers: { range: "bytes=0-1" } }),
          await content(key, NEVER_OBJECT, { headers: { range: "bytes=0-1" } }),
          object.id,
          NEVER_OBJECT,
        ],
      ];
      for (const [res, never, id, neverId] of pairs) expectHidden(res, never, id, neverId);
      expect((await content(key, object.id, { method: "HEAD" })).status).toBe(404);
      expect(
        (await content(key, object.id, { headers: { "if-none-match": `"${object.sha256}"` } })).status,
      ).toBe(404);

      expect(await holdings(owner, bucket)).toEqual(before);
      expect(await storedKeys(intruder.workspaceId)).toEqual([]);
      expect((await rest(server().api, intruder.key).get("/storage")).body).toMatchObject({
        used_bytes: 0,
        object_count: 0,
      });
      expect((await content(owner.key, object.id)).bytes.equals(ALL_BYTES)).toBe(true);
    });

    it("GraphQL hides them too", async () => {
      const gql = graphql(server().url, intruder.key);
      const file = await gql(`query($id: ID!) { file(id: $id) { id } }`, { id: object.id });
      expect(file.errors?.[0]?.extensions).toMatchObject({ code: "not_found" });
      const files = await gql(`query($b: ID!) { files(bucket_id: $b) { data { id } } }`, { b: bucket });
      expect(files.errors?.[0]?.extensions).toMatchObject({ code: "not_found", param: "bucket_id" });
      const del = await gql(`mutation($id: ID!) { deleteFile(id: $id) { deleted } }`, { id: object.id });
      expect(del.errors?.[0]?.extensions).toMatchObject({ code: "not_found" });
      expect((await rest(server().api, owner.key).get(`/objects/${object.id}`)).body).toEqual(object);
    });
  });

  describe("events", () => {
    it("file.uploaded and file.deleted carry the object as the API showed it", async () => {
      const tenant = await server().tenant();
      const api = rest(server().api, tenant.key);
      const bucket = await newBucket(tenant.key);
      const viaJson = await stored(tenant.key, bucket, "evented.txt", Buffer.from("evented"), "text/plain");
      const viaRaw = (
        await rawUpload(tenant.key, bucket, NOT_UTF8, {
          contentType: "image/png",
          query: { file_name: "evented.png" },
        })
      ).body;
      const deleted = await api.delete(`/objects/${viaJson.id}`);
      expect(deleted.status).toBe(200);

      const uploaded = await api.get("/events?type=file.uploaded");
      expect(uploaded.status, JSON.stringify(uploaded.body)).toBe(200);
      expect(uploaded.body.data.map((e: any) => e.type)).toEqual(["file.uploaded", "file.uploaded"]);
      expect(uploaded.body.data.map((e: any) => e.data.object)).toEqual([viaRaw, viaJson]);

      const gone = await api.get("/events?type=file.deleted");
      expect(gone.body.data).toHaveLength(1);
      expect(gone.body.data[0]).toMatchObject({
        object: "event",
        type: "file.deleted",
        data: { object: viaJson },
      });
      expect(gone.body.data[0].data.object).toEqual(viaJson);
      expect((await api.get(`/events/${gone.body.data[0].id}`)).body).toEqual(gone.body.data[0]);
    });

    it("a refused upload writes no event", async () => {
      const tenant = await server().tenant();
      const api = rest(server().api, tenant.key);
      const bucket = await newBucket(tenant.key);
      await upload(tenant.key, bucket, { file_name: "x", content_type: "text", content_base64: "" });
      await rawUpload(tenant.key, bucket, Buffer.from("x"), { contentType: "application/pdf" });
      expect((await api.get("/events?type=file.uploaded")).body.data).toEqual([]);
    });
  });

  describe("idempotency", () => {
    let tenant: Tenant;
    let api: ReturnType<typeof rest>;
    let bucket: string;
    const objectCount = async () => (await api.get(`/buckets/${bucket}/objects?limit=100`)).body.data.length;
    beforeAll(async () => {
      tenant = await server().tenant();
      api = rest(server().api, tenant.key);
      bucket = await newBucket(tenant.key);
    });

    it("a JSON upload replayed with the same key returns the same object and stores nothing more", async () => {
      const key = newKey();
      const body = {
        file_name: "once.bin",
        content_type: "application/octet-stream",
        content_base64: b64(ALL_BYTES),
      };
      const first = await upload(tenant.key, bucket, body, { "Idempotency-Key": key });
      expect(first.status).toBe(201);
      expect(first.headers.get("idempotent-replay")).toBeNull();
      const count = await objectCount();
      const keys = await storedKeys(tenant.workspaceId);
      const again = await upload(tenant.key, bucket, body, { "Idempotency-Key": key });
      expect(again.status).toBe(201);
      expect(again.headers.get("idempotent-replay")).toBe("true");
      expect(again.body).toEqual(first.body);
      expect(await objectCount()).toBe(count);
      expect(await storedKeys(tenant.workspaceId)).toEqual(keys);
      expect(ids((await api.get(`/buckets/${bucket}/objects?search=once.bin`)).body)).toEqual([
        first.body.id,
      ]);
    });

    it("a raw upload replayed returns the same object; the repeat's bytes are discarded", async () => {
      const key = newKey();
      const bytes = randomBytes(200_000);
      const send = () =>
        rawUpload(tenant.key, bucket, bytes, {
          contentType: "application/pdf",
          query: { file_name: "raw-once.pdf" },
          headers: { "Idempotency-Key": key },
        });
      const first = await send();
      expect(first.status, JSON.stringify(first.body)).toBe(201);
      const count = await objectCount();
      const keys = await storedKeys(tenant.workspaceId);
      const again = await send();
      expect(again.status).toBe(201);
      expect(again.headers.get("idempotent-replay")).toBe("true");
      expect(again.body).toEqual(first.body);
      expect(await objectCount()).toBe(count);
      expect(await storedKeys(tenant.workspaceId)).toEqual(keys);
      expect(keys).toContain(await storeKeyOf(first.body.id));
      expect(ids((await api.get(`/buckets/${bucket}/objects?search=raw-once`)).body)).toEqual([
        first.body.id,
      ]);
      expect((await content(tenant.key, first.body.id)).bytes.equals(bytes)).toBe(true);
    });

    it("a chunked raw upload replays too", async () => {
      const key = newKey();
      const bytes = randomBytes(50_000);
      const stream = () =>
        new ReadableStream<Uint8Array>({
          start(controller) {
            controller.enqueue(bytes.subarray(0, 20_000));
            controller.enqueue(bytes.subarray(20_000));
            controller.close();
          },
        });
      const send = () =>
        rawUpload(tenant.key, bucket, stream(), {
          contentType: "application/octet-stream",
          query: { file_name: "chunked-once.bin" },
          headers: { "Idempotency-Key": key },
        });
      const first = await send();
      expect(first.status, JSON.stringify(first.body)).toBe(201);
      const keys = await storedKeys(tenant.workspaceId);
      const again = await send();
      expect(again.headers.get("idempotent-replay")).toBe("true");
      expect(again.body).toEqual(first.body);
      expect(await storedKeys(tenant.workspaceId)).toEqual(keys);
    });

    it("the same key with different bytes is 409 idempotency_conflict and stores nothing (JSON and raw)", async () => {
      const jsonKey = newKey();
      const made = await upload(
        tenant.key,
        bucket,
        { file_name: "c.txt", content_type: "text/plain", content_base64: b64(Buffer.from("one")) },
        { "Idempotency-Key": jsonKey },
      );
      expect(made.status).toBe(201);
      const rawKey = newKey();
      const rawMade = await rawText(tenant.key, bucket, "one", "c.txt", { "Idempotency-Key": rawKey });
      expect(rawMade.status).toBe(201);
      const before = await holdings(tenant, bucket);

      const jsonConflict = await upload(
        tenant.key,
        bucket,
        { file_name: "c.txt", content_type: "text/plain", content_base64: b64(Buffer.from("two")) },
        { "Idempotency-Key": jsonKey },
      );
      expectError(jsonConflict, 409, "idempotency_conflict");
      const rawConflict = await rawText(tenant.key, bucket, "two", "c.txt", { "Idempotency-Key": rawKey });
      expectError(rawConflict, 409, "idempotency_conflict");
      // Same bytes under another name is another request too.
      const renamed = await rawText(tenant.key, bucket, "one", "d.txt", { "Idempotency-Key": rawKey });
      expectError(renamed, 409, "idempotency_conflict");
      expect(await holdings(tenant, bucket)).toEqual(before);
    });

    it("a raw repeat with the same bytes but another Content-Type is a different request: 409, nothing stored", async () => {
      const key = newKey();
      const send = (contentType: string) =>
        rawUpload(tenant.key, bucket, Buffer.from("same bytes"), {
          contentType,
          query: { file_name: "typed.bin" },
          headers: { "Idempotency-Key": key },
        });
      const first = await send("text/plain");
      expect(first.status, JSON.stringify(first.body)).toBe(201);
      expect(first.body.content_type).toBe("text/plain");
      const before = await holdings(tenant, bucket);
      const other = await send("image/png");
      expectError(other, 409, "idempotency_conflict");
      expect(await holdings(tenant, bucket)).toEqual(before);
    });
  });

  describe("GraphQL", () => {
    const FIELDS = "object id bucket_id file_name content_type size_bytes sha256 created_at";
    const USAGE = "object plan used_bytes limit_bytes used_percent limit_label bucket_count object_count";

    it("uploadFile, files, file, storageUsage and deleteFile agree with REST", async () => {
      const tenant = await server().tenant();
      const api = rest(server().api, tenant.key);
      const gql = graphql(server().url, tenant.key);
      const bucket = await newBucket(tenant.key);

      const up = await gql(
        `mutation($b: ID!, $n: String!, $t: String!, $c: String!) { uploadFile(bucket_id: $b, file_name: $n, content_type: $t, content_base64: $c) { ${FIELDS} } }`,
        { b: bucket, n: "graph.bin", t: "application/octet-stream", c: b64(ALL_BYTES) },
      );
      expect(up.errors).toBeUndefined();
      const made = up.data.uploadFile;
      expect(made).toMatchObject({
        object: "file",
        bucket_id: bucket,
        file_name: "graph.bin",
        size_bytes: 256,
        sha256: sha256(ALL_BYTES),
      });
      expect(typeof made.size_bytes).toBe("number");
      expect((await api.get(`/objects/${made.id}`)).body).toEqual(made);
      expect((await content(tenant.key, made.id)).bytes.equals(ALL_BYTES)).toBe(true);
      const viaRest = await stored(
        tenant.key,
        bucket,
        "rest.txt",
        Buffer.from("rest"),
        "text/plain; charset=utf-8",
      );

      const files = await gql(
        `query($b: ID!) { files(bucket_id: $b) { object data { ${FIELDS} } has_more next_cursor } }`,
        { b: bucket },
      );
      expect(files.errors).toBeUndefined();
      expect(files.data.files).toEqual((await api.get(`/buckets/${bucket}/objects`)).body);
      expect(ids(files.data.files)).toEqual([viaRest.id, made.id]);
      const filtered = await gql(
        `query($b: ID!) { files(bucket_id: $b, search: "REST", content_type: "text/plain") { data { id } } }`,
        { b: bucket },
      );
      expect(filtered.data.files.data).toEqual([{ id: viaRest.id }]);
      const paged = await gql(
        `query($b: ID!) { files(bucket_id: $b, limit: 1) { data { id } has_more next_cursor } }`,
        { b: bucket },
      );
      expect(paged.data.files).toMatchObject({ data: [{ id: viaRest.id }], has_more: true });
      const page2 = await gql(
        `query($b: ID!, $c: String) { files(bucket_id: $b, limit: 1, cursor: $c) { data { id } has_more } }`,
        {
          b: bucket,
          c: paged.data.files.next_cursor,
        },
      );
      expect(page2.data.files).toEqual({ data: [{ id: made.id }], has_more: false });

      const one = await gql(`query($id: ID!) { file(id: $id) { ${FIELDS} bucket { id } } }`, {
        id: viaRest.id,
      });
      expect(one.errors).toBeUndefined();
      const { bucket: owning, ...shown } = one.data.file;
      expect(shown).toEqual(viaRest);
      expect(owning).toEqual({ id: bucket });

      const usage = await gql(`{ storageUsage { ${USAGE} } }`);
      expect(usage.errors).toBeUndefined();
      expect(usage.data.storageUsage).toEqual((await api.get("/storage")).body);
      expect(usage.data.storageUsage).toMatchObject({ used_bytes: 260, object_count: 2, bucket_count: 1 });

      const key = await storeKeyOf(made.id);
      const del = await gql(`mutation($id: ID!) { deleteFile(id: $id) { id object deleted } }`, {
        id: made.id,
      });
      expect(del.errors).toBeUndefined();
      expect(del.data.deleteFile).toEqual({ id: made.id, object: "file", deleted: true });
      expect(await store().exists(key)).toBe(false);
      expectError(await api.get(`/objects/${made.id}`), 404, "not_found", "id");
      const missing = await gql(`query($id: ID!) { file(id: $id) { id } }`, { id: made.id });
      expect(missing.errors?.[0]?.extensions).toMatchObject({ code: "not_found" });
      expect((await gql(`{ storageUsage { used_bytes object_count } }`)).data.storageUsage).toEqual({
        used_bytes: 4,
        object_count: 1,
      });
    });

    it("uploadFile validates like REST", async () => {
      const tenant = await server().tenant();
      const gql = graphql(server().url, tenant.key);
      const bucket = await newBucket(tenant.key);
      const send = (args: Record<string, string>) =>
        gql(
          `mutation($b: ID!, $n: String!, $t: String!, $c: String!) { uploadFile(bucket_id: $b, file_name: $n, content_type: $t, content_base64: $c) { id } }`,
          {
            b: bucket,
            n: "ok.txt",
            t: "text/plain",
            c: "QUJD",
            ...args,
          },
        );
      expect((await send({ c: "QR==" })).errors?.[0]?.extensions).toMatchObject({
        code: "validation_failed",
        param: "content_base64",
      });
      expect((await send({ t: "a/b/c" })).errors?.[0]?.extensions).toMatchObject({
        code: "validation_failed",
        param: "content_type",
      });
      expect((await send({ n: "a/b" })).errors?.[0]?.extensions).toMatchObject({
        code: "validation_failed",
        param: "file_name",
      });
      expect((await send({ b: NEVER_BUCKET })).errors?.[0]?.extensions).toMatchObject({
        code: "not_found",
        param: "bucket_id",
      });
      expect(await storedKeys(tenant.workspaceId)).toEqual([]);
      expect((await send({})).errors).toBeUndefined();
    });

    it("a credential without storage.read gets insufficient_scope; without storage.write it cannot upload or delete", async () => {
      const owner = await server().tenant();
      const bucket = await newBucket(owner.key);
      const object = await stored(owner.key, bucket, "s.txt", Buffer.from("s"), "text/plain");
      const writeOnly = graphql(server().url, (await server().key(owner.workspaceId, ["storage.write"])).key);
      for (const query of [
        `{ storageUsage { used_bytes } }`,
        `{ files(bucket_id: "${bucket}") { data { id } } }`,
        `{ file(id: "${object.id}") { id } }`,
      ]) {
        const res = await writeOnly(query);
        expect(res.errors?.[0]?.extensions, query).toMatchObject({
          code: "insufficient_scope",
          required_scope: "storage.read",
        });
      }
      const readOnly = graphql(server().url, (await server().key(owner.workspaceId, ["storage.read"])).key);
      const up = await readOnly(
        `mutation { uploadFile(bucket_id: "${bucket}", file_name: "n.txt", content_type: "text/plain", content_base64: "") { id } }`,
      );
      expect(up.errors?.[0]?.extensions).toMatchObject({
        code: "insufficient_scope",
        required_scope: "storage.write",
      });
      const del = await readOnly(`mutation { deleteFile(id: "${object.id}") { deleted } }`);
      expect(del.errors?.[0]?.extensions).toMatchObject({
        code: "insufficient_scope",
        required_scope: "storage.write",
      });
      expect((await readOnly(`{ file(id: "${object.id}") { id } }`)).data.file).toEqual({ id: object.id });
    });
  });
});
