import { randomBytes } from "node:crypto";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { S3ByteStore } from "../../../server/storage/s3-store.ts";
import { rest } from "../../support/http.ts";
import { expectError } from "../../support/invoicing.ts";
import type { Tenant } from "../../support/server.ts";
import {
  ALL_BYTES,
  b64,
  NEVER_BUCKET,
  NOT_UTF8,
  OBJECT_ID,
  objectsE2e,
  objectsHelpers,
  type Reply,
  sha256,
} from "./support.ts";

/**
 * Storage objects end to end: uploads over JSON and raw, their validation, and where the bytes are
 * kept. The same body runs on each stack with the local byte store, and once more on PostgreSQL with
 * the bytes in S3 (s3rver on loopback): objectsE2e in ./support.ts. The other parts:
 * object-reads.test.ts, object-access.test.ts.
 */

objectsE2e("objects: uploads", (server, _stack, s3) => {
  const {
    store,
    storedKeys,
    storeKeyOf,
    fetchChecked,
    content,
    rawUpload,
    rawText,
    upload,
    uploadBytes,
    newBucket,
    stored,
    holdings,
  } = objectsHelpers(server, s3);

  describe("JSON upload", () => {
    let tenant: Tenant;
    let bucket: string;
    beforeAll(async () => {
      tenant = await server().tenant();
      bucket = await newBucket(tenant.key);
    });

    it("answers 201 with the object, stores the bytes under the workspace's key and serves them back", async () => {
      const res = await uploadBytes(
        tenant.key,
        bucket,
        "hello.txt",
        Buffer.from("hello, world\n"),
        "text/plain; charset=utf-8",
      );
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      expect(res.body).toEqual({
        object: "file",
        id: expect.stringMatching(OBJECT_ID),
        bucket_id: bucket,
        file_name: "hello.txt",
        content_type: "text/plain; charset=utf-8",
        size_bytes: 13,
        sha256: sha256(Buffer.from("hello, world\n")),
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/),
      });
      expect(Object.keys(res.body)).toEqual([
        "object",
        "id",
        "bucket_id",
        "file_name",
        "content_type",
        "size_bytes",
        "sha256",
        "created_at",
      ]);
      const key = await storeKeyOf(res.body.id);
      expect(key).toBe(`${tenant.workspaceId.toLowerCase()}/${res.body.id.toLowerCase()}`);
      expect(await store().exists(key)).toBe(true);
      expect((await rest(server().api, tenant.key).get(`/objects/${res.body.id}`)).body).toEqual(res.body);
      const got = await content(tenant.key, res.body.id);
      expect(got.status).toBe(200);
      expect(got.bytes.toString("utf8")).toBe("hello, world\n");
    });

    it.each([
      ["all 256 byte values", ALL_BYTES],
      ["0xff 0xfe 0x00", NOT_UTF8],
      ["1 byte", Buffer.from([0x80])],
      ["2 bytes", Buffer.from([0xc3, 0x28])],
    ])("round-trips %s byte for byte through base64", async (_label, bytes) => {
      const made = await stored(tenant.key, bucket, "blob.bin", bytes);
      expect(made.size_bytes).toBe(bytes.length);
      expect(made.sha256).toBe(sha256(bytes));
      const got = await content(tenant.key, made.id);
      expect(got.status).toBe(200);
      expect(got.headers.get("content-length")).toBe(String(bytes.length));
      expect(got.bytes.equals(bytes)).toBe(true);
    });

    it("takes a file of several MB within the 25 MiB body limit", async () => {
      const bytes = randomBytes(6 * 1024 * 1024);
      const made = await stored(tenant.key, bucket, "big.bin", bytes);
      expect(made).toMatchObject({ size_bytes: bytes.length, sha256: sha256(bytes) });
      expect((await content(tenant.key, made.id)).bytes.equals(bytes)).toBe(true);
    });

    it("stores a zero-byte file", async () => {
      const made = await stored(tenant.key, bucket, "empty.txt", Buffer.alloc(0), "text/plain");
      expect(made).toMatchObject({ size_bytes: 0, sha256: sha256(Buffer.alloc(0)) });
      const got = await content(tenant.key, made.id);
      expect(got.status).toBe(200);
      expect(got.headers.get("content-length")).toBe("0");
      expect(got.bytes.length).toBe(0);
      expect(got.headers.get("etag")).toBe(`"${sha256(Buffer.alloc(0))}"`);
    });

    it("trims the file name, lower-cases type and subtype and keeps parameters as sent; 255 characters are allowed", async () => {
      const made = await stored(
        tenant.key,
        bucket,
        "  padded name.txt  ",
        Buffer.from("x"),
        "Text/HTML;Charset=UTF-8",
      );
      expect(made.file_name).toBe("padded name.txt");
      expect(made.content_type).toBe("text/html; Charset=UTF-8");
      const long = `${"n".repeat(251)}.txt`;
      expect((await stored(tenant.key, bucket, long, Buffer.from("x"))).file_name).toBe(long);
    });

    describe("validation: 400 validation_failed naming the parameter, nothing stored", () => {
      const good = {
        file_name: "ok.txt",
        content_type: "text/plain",
        content_base64: b64(Buffer.from("ok")),
      };

      async function refused(body: Record<string, unknown>, param: string) {
        const before = await holdings(tenant, bucket);
        const res = await upload(tenant.key, bucket, body);
        expectError(res, 400, "validation_failed", param);
        expect(res.body.error.type).toBe("invalid_request_error");
        expect(await holdings(tenant, bucket)).toEqual(before);
      }

      it.each([
        ["a space", "QUJD RA=="],
        ["a line break", "QUJD\nRA=="],
        ["CRLF line breaks", "QUJD\r\nRA=="],
        ["the URL alphabet", "-_-_"],
        ["URL alphabet mixed in", "ab-/"],
        ["missing padding", "QUI"],
        ["missing padding (one =)", "QQ="],
        ["non-canonical padding bits", "QR=="],
        ["non-canonical padding bits (one =)", "QUJ="],
        ["too much padding", "QUI=="],
        ["only padding", "===="],
        ["garbage", "not base64!"],
        ["a data URL", "data:text/plain;base64,QUJD"],
      ])("content_base64 with %s", async (_label, value) => {
        await refused({ ...good, content_base64: value }, "content_base64");
      });

      it.each([
        ["text"],
        ["a/b/c"],
        ["text/plain;;"],
        [""],
        ["text/"],
        ["/plain"],
        ["text/plain; charset"],
        ["text plain/x"],
      ])("content_type %j", async (value) => {
        await refused({ ...good, content_type: value }, "content_type");
      });

      it.each([[""], ["   "], ["a/b.txt"], ["a\\b.txt"], ["../etc/passwd"], ["n".repeat(256)]])(
        "file_name %j",
        async (value) => {
          await refused({ ...good, file_name: value }, "file_name");
        },
      );

      it.each([["file_name"], ["content_type"], ["content_base64"]])("a missing %s", async (field) => {
        const { [field as keyof typeof good]: _, ...rest } = good;
        await refused(rest, field);
      });

      it("an unknown field", async () => {
        await refused({ ...good, folder: "x" }, "folder");
      });

      it("the good body passes (the cases above fail for their own reason)", async () => {
        expect((await upload(tenant.key, bucket, good)).status).toBe(201);
      });
    });

    it("an unknown bucket is 404 not_found with param bucket_id", async () => {
      const res = await uploadBytes(tenant.key, NEVER_BUCKET, "a.txt", Buffer.from("a"));
      expectError(res, 404, "not_found", "bucket_id");
    });
  });

  describe("raw upload", () => {
    let tenant: Tenant;
    let bucket: string;
    beforeAll(async () => {
      tenant = await server().tenant();
      bucket = await newBucket(tenant.key);
    });

    it("takes a few MB of random bytes as application/pdf and serves them back byte for byte", async () => {
      const bytes = randomBytes(3 * 1024 * 1024 + 17);
      const res = await rawUpload(tenant.key, bucket, bytes, {
        contentType: "application/pdf",
        query: { file_name: "scan.pdf" },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      expect(res.body).toEqual({
        object: "file",
        id: expect.stringMatching(OBJECT_ID),
        bucket_id: bucket,
        file_name: "scan.pdf",
        content_type: "application/pdf",
        size_bytes: bytes.length,
        sha256: sha256(bytes),
        created_at: expect.any(String),
      });
      expect((await rest(server().api, tenant.key).get(`/objects/${res.body.id}`)).body).toEqual(res.body);
      expect(await store().exists(await storeKeyOf(res.body.id))).toBe(true);
      const got = await content(tenant.key, res.body.id);
      expect(got.status).toBe(200);
      expect(got.headers.get("content-type")).toBe("application/pdf");
      expect(got.bytes.length).toBe(bytes.length);
      expect(got.bytes.equals(bytes)).toBe(true);
    });

    it("content_type in the query overrides the Content-Type header", async () => {
      const json = Buffer.from('{"a":1}');
      const res = await rawUpload(tenant.key, bucket, json, {
        contentType: "application/octet-stream",
        query: { file_name: "data.json", content_type: "application/json" },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      expect(res.body).toMatchObject({
        file_name: "data.json",
        content_type: "application/json",
        size_bytes: json.length,
        sha256: sha256(json),
      });
      const got = await content(tenant.key, res.body.id);
      expect(got.headers.get("content-type")).toBe("application/json");
      expect(got.bytes.equals(json)).toBe(true);
    });

    it("any non-JSON type makes a raw upload, parameters and all", async () => {
      const csv = Buffer.from("a,b\n1,2\n");
      const res = await rawUpload(tenant.key, bucket, csv, {
        contentType: "Text/CSV; charset=utf-8",
        query: { file_name: "table.csv" },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      expect(res.body).toMatchObject({
        file_name: "table.csv",
        content_type: "text/csv; charset=utf-8",
        size_bytes: csv.length,
        sha256: sha256(csv),
      });
      expect((await content(tenant.key, res.body.id)).headers.get("content-type")).toBe(
        "text/csv; charset=utf-8",
      );
    });

    it("takes an empty body as a zero-byte file", async () => {
      const res = await rawUpload(tenant.key, bucket, new Uint8Array(0), {
        contentType: "text/plain",
        query: { file_name: "nothing.txt" },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      expect(res.body).toMatchObject({ size_bytes: 0, sha256: sha256(Buffer.alloc(0)) });
      const got = await content(tenant.key, res.body.id);
      expect(got.status).toBe(200);
      expect(got.bytes.length).toBe(0);
    });

    it("streams a chunked body sent without Content-Length", async () => {
      const parts = [Buffer.from("first part, "), randomBytes(100_000), NOT_UTF8, randomBytes(70_001)];
      const whole = Buffer.concat(parts);
      let next = 0;
      const stream = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (next < parts.length) controller.enqueue(parts[next++]!);
          else controller.close();
        },
      });
      const res = await rawUpload(tenant.key, bucket, stream, {
        contentType: "application/octet-stream",
        query: { file_name: "chunked.bin" },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      expect(res.body).toMatchObject({
        file_name: "chunked.bin",
        size_bytes: whole.length,
        sha256: sha256(whole),
      });
      expect((await content(tenant.key, res.body.id)).bytes.equals(whole)).toBe(true);
    });

    describe("refusals store nothing", () => {
      async function refused(send: () => Promise<Reply>, status: number, code: string, param?: string) {
        const before = await holdings(tenant, bucket);
        const res = await send();
        expectError(res, status, code, param);
        expect(await holdings(tenant, bucket)).toEqual(before);
        return res;
      }

      /** `refused` for a raw upload of `body` with `options`, as 400 validation_failed naming `param`. */
      const invalidRaw = (body: Uint8Array, options: Parameters<typeof rawUpload>[3], param: string) =>
        refused(() => rawUpload(tenant.key, bucket, body, options), 400, "validation_failed", param);

      it("a JSON Content-Type is the JSON form: file_name in the query is 400 validation_failed param file_name", async () => {
        const json = Buffer.from(
          JSON.stringify({
            file_name: "a.json",
            content_type: "application/json",
            content_base64: b64(Buffer.from("{}")),
          }),
        );
        await invalidRaw(
          json,
          { contentType: "application/json", query: { file_name: "body.json" } },
          "file_name",
        );
      });

      it("a body without any Content-Type: 415 unsupported_media_type", async () => {
        await refused(
          () => rawUpload(tenant.key, bucket, NOT_UTF8, { query: { file_name: "plain.bin" } }),
          415,
          "unsupported_media_type",
        );
      });

      it("a query parameter sent twice: 400 validation_failed naming it", async () => {
        const url = `${server().api}/buckets/${bucket}/objects?file_name=a.pdf&file_name=b.pdf`;
        await refused(
          () =>
            fetchChecked("POST", url, {
              headers: { authorization: `Bearer ${tenant.key}`, "content-type": "application/pdf" },
              body: Buffer.from("%PDF"),
            }),
          400,
          "validation_failed",
          "file_name",
        );
      });

      it("a non-JSON type without file_name: 400 param file_name", async () => {
        await invalidRaw(Buffer.from("%PDF"), { contentType: "application/pdf" }, "file_name");
      });

      it.each([[""], ["  "], ["dir/a.pdf"], ["dir\\a.pdf"], ["n".repeat(256)]])(
        "file_name %j: 400 param file_name",
        async (name) => {
          await invalidRaw(
            Buffer.from("%PDF"),
            { contentType: "application/pdf", query: { file_name: name } },
            "file_name",
          );
        },
      );

      it("an unknown query parameter: 400 validation_failed naming it", async () => {
        const res = await invalidRaw(
          Buffer.from("%PDF"),
          { contentType: "application/pdf", query: { file_name: "a.pdf", folder: "x" } },
          "folder",
        );
        expect(res.body.error.message).toContain("folder");
      });

      it.each([["text"], ["a/b/c"], ["text/plain;;"]])(
        "a Content-Type header %j: 400 param Content-Type",
        async (type) => {
          await invalidRaw(
            Buffer.from("x"),
            { contentType: type, query: { file_name: "a.txt" } },
            "Content-Type",
          );
        },
      );

      it("a content_type query parameter that is no MIME type: 400 param content_type", async () => {
        await invalidRaw(
          Buffer.from("x"),
          { contentType: "text/plain", query: { file_name: "a.txt", content_type: "a/b/c" } },
          "content_type",
        );
      });

      it("an unknown bucket: 404 param bucket_id", async () => {
        const before = await storedKeys(tenant.workspaceId);
        const res = await rawText(tenant.key, NEVER_BUCKET, "x", "a.txt");
        expectError(res, 404, "not_found", "bucket_id");
        expect(await storedKeys(tenant.workspaceId)).toEqual(before);
      });
    });
  });

  if (s3) {
    describe("S3 byte store", () => {
      it("keeps the bytes in S3 and none on the local disk", async () => {
        const tenant = await server().tenant();
        const bucket = await newBucket(tenant.key);
        const made = await stored(tenant.key, bucket, "in-s3.bin", ALL_BYTES);
        const key = await storeKeyOf(made.id);
        expect(await new S3ByteStore({ client: s3().client, bucket: s3().bucket }).exists(key)).toBe(true);
        const local = await readdir(join(server().config.dataDir, "objects"), { recursive: true }).catch(
          () => [],
        );
        expect(local).toEqual([]);
      });
    });
  }
});
