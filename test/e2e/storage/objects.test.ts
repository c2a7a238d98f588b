import { createHash, randomBytes, randomUUID } from "node:crypto";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ByteStore } from "../../../server/storage/byte-store.ts";
import { LocalByteStore } from "../../../server/storage/local-store.ts";
import { S3ByteStore } from "../../../server/storage/s3-store.ts";
import { expectHidden, ids } from "../../support/assertions.ts";
import { graphql } from "../../support/graphql.ts";
import { call, rest, type ApiResponse } from "../../support/http.ts";
import { expectError } from "../../support/invoicing.ts";
import { checkAgainstOpenApi } from "../../support/openapi-check.ts";
import { startS3Server, type S3TestServer } from "../../support/s3-server.ts";
import { startTestServer, type Tenant, type TestServer } from "../../support/server.ts";
import { stacks, type Stack } from "../../support/stacks.ts";
import { e2e } from "../../support/suite.ts";

/**
 * Storage objects end to end: uploads (JSON and raw), lists, metadata, downloads, deletes, scopes,
 * tenancy, usage, events, idempotency and GraphQL. The same body runs on each stack with the local
 * byte store, and once more on PostgreSQL with the bytes in S3 (s3rver on loopback).
 */

const NEVER_BUCKET = "bkt_01J00000000000000000000000";
const NEVER_OBJECT = "obj_01J00000000000000000000000";
const OBJECT_ID = /^obj_[0-9A-Z]{26}$/;
const ALL_BYTES = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
const NOT_UTF8 = Buffer.from([0xff, 0xfe, 0x00]);

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64");
const newKey = () => `key-${randomUUID()}`;

interface Reply extends ApiResponse {
  /** The body exactly as received. */
  bytes: Buffer;
}

function objectsSuite(server: () => TestServer, _stack: Stack, s3?: () => S3TestServer) {
  /** The server's byte store, opened on the side: the local disk under DATA_DIR/objects, or the S3 bucket through s3rver's own client. */
  let sideStore: ByteStore | undefined;
  const store = (): ByteStore =>
    (sideStore ??= s3 ? new S3ByteStore({ client: s3().client, bucket: s3().bucket }) : new LocalByteStore(join(server().config.dataDir, "objects")));

  /** Every key the store holds for a workspace (its keys start with the lowercased workspace id). */
  async function storedKeys(workspaceId: string): Promise<string[]> {
    const keys: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await store().list(`${workspaceId.toLowerCase()}/`, { cursor });
      keys.push(...page.keys);
      cursor = page.cursor;
    } while (cursor);
    return keys.sort();
  }

  const storeKeyOf = async (id: string) =>
    (await server().running.db.prisma.storedObject.findUniqueOrThrow({ where: { id }, select: { storeKey: true } })).storeKey;

  async function fetchChecked(method: string, url: string, init: RequestInit & { duplex?: "half" }): Promise<Reply> {
    const response = await fetch(url, { ...init, method });
    const bytes = Buffer.from(await response.arrayBuffer());
    const text = bytes.toString("utf8");
    await checkAgainstOpenApi(method, url, { status: response.status, headers: response.headers, text });
    let body: any = text;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      // not JSON: keep the text
    }
    return { status: response.status, headers: response.headers, body, bytes };
  }

  /** GET (or HEAD, POST…) /v1/objects/{id}/content, keeping the bytes. */
  function content(key: string, id: string, options: { method?: string; headers?: Record<string, string> } = {}): Promise<Reply> {
    return fetchChecked(options.method ?? "GET", `${server().api}/objects/${id}/content`, {
      headers: { authorization: `Bearer ${key}`, ...options.headers },
    });
  }

  /** A raw upload: the body is the file; `query` goes in the query string as given. */
  function rawUpload(
    key: string,
    bucketId: string,
    body: Uint8Array | ReadableStream<Uint8Array> | string,
    options: { contentType?: string; query?: Record<string, string>; headers?: Record<string, string> } = {},
  ): Promise<Reply> {
    const search = new URLSearchParams(options.query ?? {}).toString();
    const headers: Record<string, string> = { authorization: `Bearer ${key}`, ...options.headers };
    if (options.contentType !== undefined) headers["content-type"] = options.contentType;
    return fetchChecked("POST", `${server().api}/buckets/${bucketId}/objects${search ? `?${search}` : ""}`, {
      headers,
      body: body as BodyInit,
      ...(body instanceof ReadableStream && { duplex: "half" as const }),
    });
  }

  /** A JSON upload through REST. */
  const upload = (key: string, bucketId: string, body: Record<string, unknown>, headers?: Record<string, string>) =>
    call("POST", `${server().api}/buckets/${bucketId}/objects`, { key, body, headers });

  const uploadBytes = (key: string, bucketId: string, fileName: string, bytes: Uint8Array, contentType = "application/octet-stream") =>
    upload(key, bucketId, { file_name: fileName, content_type: contentType, content_base64: b64(bytes) });

  async function newBucket(key: string, name = `b-${randomBytes(5).toString("hex")}`): Promise<string> {
    const made = await rest(server().api, key).post("/buckets", { name });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    return made.body.id;
  }

  /** An object uploaded over JSON, as the API returned it. */
  async function stored(key: string, bucketId: string, fileName: string, bytes: Uint8Array, contentType = "application/octet-stream") {
    const made = await uploadBytes(key, bucketId, fileName, bytes, contentType);
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    return made.body;
  }

  /** What a workspace holds: the bucket's list, its usage and its keys in the store (compared around requests that must store nothing). */
  async function holdings(tenant: Tenant, bucketId: string) {
    const api = rest(server().api, tenant.key);
    const list = await api.get(`/buckets/${bucketId}/objects?limit=100`);
    const usage = await api.get("/storage");
    return { list: list.body, usage: usage.body, keys: await storedKeys(tenant.workspaceId) };
  }

  describe("JSON upload", () => {
    let tenant: Tenant;
    let bucket: string;
    beforeAll(async () => {
      tenant = await server().tenant();
      bucket = await newBucket(tenant.key);
    });

    it("answers 201 with the object, stores the bytes under the workspace's key and serves them back", async () => {
      const res = await uploadBytes(tenant.key, bucket, "hello.txt", Buffer.from("hello, world\n"), "text/plain; charset=utf-8");
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
      expect(Object.keys(res.body)).toEqual(["object", "id", "bucket_id", "file_name", "content_type", "size_bytes", "sha256", "created_at"]);
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
      const made = await stored(tenant.key, bucket, "  padded name.txt  ", Buffer.from("x"), "Text/HTML;Charset=UTF-8");
      expect(made.file_name).toBe("padded name.txt");
      expect(made.content_type).toBe("text/html; Charset=UTF-8");
      const long = `${"n".repeat(251)}.txt`;
      expect((await stored(tenant.key, bucket, long, Buffer.from("x"))).file_name).toBe(long);
    });

    describe("validation: 400 validation_failed naming the parameter, nothing stored", () => {
      const good = { file_name: "ok.txt", content_type: "text/plain", content_base64: b64(Buffer.from("ok")) };

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

      it.each([["text"], ["a/b/c"], ["text/plain;;"], [""], ["text/"], ["/plain"], ["text/plain; charset"], ["text plain/x"]])(
        "content_type %j",
        async (value) => {
          await refused({ ...good, content_type: value }, "content_type");
        },
      );

      it.each([[""], ["   "], ["a/b.txt"], ["a\\b.txt"], ["../etc/passwd"], ["n".repeat(256)]])("file_name %j", async (value) => {
        await refused({ ...good, file_name: value }, "file_name");
      });

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
      const res = await rawUpload(tenant.key, bucket, bytes, { contentType: "application/pdf", query: { file_name: "scan.pdf" } });
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
      expect(res.body).toMatchObject({ file_name: "data.json", content_type: "application/json", size_bytes: json.length, sha256: sha256(json) });
      const got = await content(tenant.key, res.body.id);
      expect(got.headers.get("content-type")).toBe("application/json");
      expect(got.bytes.equals(json)).toBe(true);
    });

    it("any non-JSON type makes a raw upload, parameters and all", async () => {
      const csv = Buffer.from("a,b\n1,2\n");
      const res = await rawUpload(tenant.key, bucket, csv, { contentType: "Text/CSV; charset=utf-8", query: { file_name: "table.csv" } });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      expect(res.body).toMatchObject({ file_name: "table.csv", content_type: "text/csv; charset=utf-8", size_bytes: csv.length, sha256: sha256(csv) });
      expect((await content(tenant.key, res.body.id)).headers.get("content-type")).toBe("text/csv; charset=utf-8");
    });

    it("takes an empty body as a zero-byte file", async () => {
      const res = await rawUpload(tenant.key, bucket, new Uint8Array(0), { contentType: "text/plain", query: { file_name: "nothing.txt" } });
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
      const res = await rawUpload(tenant.key, bucket, stream, { contentType: "application/octet-stream", query: { file_name: "chunked.bin" } });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      expect(res.body).toMatchObject({ file_name: "chunked.bin", size_bytes: whole.length, sha256: sha256(whole) });
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

      it("a JSON Content-Type is the JSON form: file_name in the query is 400 validation_failed param file_name", async () => {
        const json = Buffer.from(JSON.stringify({ file_name: "a.json", content_type: "application/json", content_base64: b64(Buffer.from("{}")) }));
        await refused(() => rawUpload(tenant.key, bucket, json, { contentType: "application/json", query: { file_name: "body.json" } }), 400, "validation_failed", "file_name");
      });

      it("a body without any Content-Type: 415 unsupported_media_type", async () => {
        await refused(() => rawUpload(tenant.key, bucket, NOT_UTF8, { query: { file_name: "plain.bin" } }), 415, "unsupported_media_type");
      });

      it("a query parameter sent twice: 400 validation_failed naming it", async () => {
        const url = `${server().api}/buckets/${bucket}/objects?file_name=a.pdf&file_name=b.pdf`;
        await refused(
          () => fetchChecked("POST", url, { headers: { authorization: `Bearer ${tenant.key}`, "content-type": "application/pdf" }, body: Buffer.from("%PDF") }),
          400,
          "validation_failed",
          "file_name",
        );
      });

      it("a non-JSON type without file_name: 400 param file_name", async () => {
        await refused(() => rawUpload(tenant.key, bucket, Buffer.from("%PDF"), { contentType: "application/pdf" }), 400, "validation_failed", "file_name");
      });

      it.each([[""], ["  "], ["dir/a.pdf"], ["dir\\a.pdf"], ["n".repeat(256)]])("file_name %j: 400 param file_name", async (name) => {
        await refused(
          () => rawUpload(tenant.key, bucket, Buffer.from("%PDF"), { contentType: "application/pdf", query: { file_name: name } }),
          400,
          "validation_failed",
          "file_name",
        );
      });

      it("an unknown query parameter: 400 validation_failed naming it", async () => {
        const res = await refused(
          () => rawUpload(tenant.key, bucket, Buffer.from("%PDF"), { contentType: "application/pdf", query: { file_name: "a.pdf", folder: "x" } }),
          400,
          "validation_failed",
          "folder",
        );
        expect(res.body.error.message).toContain("folder");
      });

      it.each([["text"], ["a/b/c"], ["text/plain;;"]])("a Content-Type header %j: 400 param Content-Type", async (type) => {
        await refused(
          () => rawUpload(tenant.key, bucket, Buffer.from("x"), { contentType: type, query: { file_name: "a.txt" } }),
          400,
          "validation_failed",
          "Content-Type",
        );
      });

      it("a content_type query parameter that is no MIME type: 400 param content_type", async () => {
        await refused(
          () => rawUpload(tenant.key, bucket, Buffer.from("x"), { contentType: "text/plain", query: { file_name: "a.txt", content_type: "a/b/c" } }),
          400,
          "validation_failed",
          "content_type",
        );
      });

      it("an unknown bucket: 404 param bucket_id", async () => {
        const before = await storedKeys(tenant.workspaceId);
        const res = await rawUpload(tenant.key, NEVER_BUCKET, Buffer.from("x"), { contentType: "text/plain", query: { file_name: "a.txt" } });
        expectError(res, 404, "not_found", "bucket_id");
        expect(await storedKeys(tenant.workspaceId)).toEqual(before);
      });
    });
  });

  describe("list", () => {
    let tenant: Tenant;
    let api: ReturnType<typeof rest>;
    let bucket: string;
    /** Newest first. */
    let all: any[];
    const byName = (name: string) => all.find((o) => o.file_name === name)!;
    const listed = async (query: string) => {
      const res = await api.get(`/buckets/${bucket}/objects?${query}`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body;
    };

    beforeAll(async () => {
      tenant = await server().tenant();
      api = rest(server().api, tenant.key);
      bucket = await newBucket(tenant.key);
      const made = [];
      for (const [name, type] of [
        ["Report-Q1.PDF", "application/pdf"],
        ["report-q2.pdf", "application/pdf"],
        ["notes.txt", "text/plain; charset=utf-8"],
        ["photo.png", "image/png"],
        ["holiday.jpeg", "image/jpeg"],
        ["page.html", "text/html"],
      ] as const) {
        made.push(await stored(tenant.key, bucket, name, Buffer.from(name), type));
      }
      all = made.reverse();
      // Another bucket's objects are not listed.
      await stored(tenant.key, await newBucket(tenant.key), "elsewhere.txt", Buffer.from("x"), "text/plain");
    });

    it("lists a bucket's objects newest first, as GET /objects/{id} shows them", async () => {
      const list = await listed("");
      expect(list).toEqual({ object: "list", data: all, has_more: false, next_cursor: null });
      for (const object of all) expect((await api.get(`/objects/${object.id}`)).body).toEqual(object);
    });

    it("pages with limit and cursor", async () => {
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const page: any = await listed(`limit=4${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
        pages++;
        expect(page.data.length).toBe(pages === 1 ? 4 : 2);
        expect(page.has_more).toBe(pages === 1);
        seen.push(...ids(page));
        cursor = page.next_cursor;
        if (page.has_more) expect(cursor).toEqual(expect.any(String));
      } while (cursor);
      expect(pages).toBe(2);
      expect(seen).toEqual(ids({ data: all }));
      const one = await listed("limit=1");
      expect(one).toMatchObject({ has_more: true, data: [all[0]] });
    });

    it("search matches a case-insensitive substring of the file name", async () => {
      expect(ids(await listed("search=REPORT"))).toEqual([byName("report-q2.pdf").id, byName("Report-Q1.PDF").id]);
      expect(ids(await listed("search=q1.pdf"))).toEqual([byName("Report-Q1.PDF").id]);
      expect(ids(await listed("search=oto.P"))).toEqual([byName("photo.png").id]);
      expect((await listed("search=nothing-like-this")).data).toEqual([]);
    });

    it("content_type filters by exact MIME type, ignoring stored parameters and case", async () => {
      expect(ids(await listed("content_type=application/pdf"))).toEqual([byName("report-q2.pdf").id, byName("Report-Q1.PDF").id]);
      expect(ids(await listed(`content_type=${encodeURIComponent("text/plain")}`))).toEqual([byName("notes.txt").id]);
      expect(ids(await listed(`content_type=${encodeURIComponent("text/plain; charset=utf-8")}`))).toEqual([byName("notes.txt").id]);
      expect(ids(await listed("content_type=IMAGE/PNG"))).toEqual([byName("photo.png").id]);
      // "text/htm" is not a prefix match of "text/html".
      expect((await listed("content_type=text/htm")).data).toEqual([]);
      expect((await listed("content_type=video/mp4")).data).toEqual([]);
    });

    it("content_type type/* matches a whole family", async () => {
      expect(ids(await listed(`content_type=${encodeURIComponent("image/*")}`))).toEqual([byName("holiday.jpeg").id, byName("photo.png").id]);
      expect(ids(await listed(`content_type=${encodeURIComponent("text/*")}`))).toEqual([byName("page.html").id, byName("notes.txt").id]);
    });

    it("combines search and content_type", async () => {
      expect(ids(await listed(`search=o&content_type=${encodeURIComponent("image/*")}`))).toEqual([byName("holiday.jpeg").id, byName("photo.png").id]);
      expect(ids(await listed(`search=hol&content_type=${encodeURIComponent("image/png")}`))).toEqual([]);
    });

    it.each([["image"], ["a/b/c"], ["*/*"], ["image/*/x"], ["text/plain;;"]])("content_type=%j is 400 validation_failed param content_type", async (value) => {
      expectError(await api.get(`/buckets/${bucket}/objects?content_type=${encodeURIComponent(value)}`), 400, "validation_failed", "content_type");
    });

    it("an unknown bucket is 404 param bucket_id", async () => {
      expectError(await api.get(`/buckets/${NEVER_BUCKET}/objects`), 404, "not_found", "bucket_id");
    });
  });

  describe("retrieve and delete", () => {
    let tenant: Tenant;
    let api: ReturnType<typeof rest>;
    let bucket: string;
    beforeAll(async () => {
      tenant = await server().tenant();
      api = rest(server().api, tenant.key);
      bucket = await newBucket(tenant.key);
    });

    it("an unknown object is 404 not_found with param id on GET, DELETE and content", async () => {
      expectError(await api.get(`/objects/${NEVER_OBJECT}`), 404, "not_found", "id");
      expectError(await api.delete(`/objects/${NEVER_OBJECT}`), 404, "not_found", "id");
      expectError(await content(tenant.key, NEVER_OBJECT), 404, "not_found", "id");
    });

    it("deletes the object and its bytes; afterwards every route is 404", async () => {
      const made = await stored(tenant.key, bucket, "doomed.bin", ALL_BYTES);
      const kept = await stored(tenant.key, bucket, "kept.bin", NOT_UTF8);
      const key = await storeKeyOf(made.id);
      expect(await store().exists(key)).toBe(true);

      const deleted = await api.delete(`/objects/${made.id}`);
      expect(deleted.status).toBe(200);
      expect(deleted.body).toEqual({ id: made.id, object: "file", deleted: true });

      expectError(await api.get(`/objects/${made.id}`), 404, "not_found", "id");
      expectError(await content(tenant.key, made.id), 404, "not_found", "id");
      expect((await content(tenant.key, made.id, { method: "HEAD" })).status).toBe(404);
      expectError(await api.delete(`/objects/${made.id}`), 404, "not_found", "id");
      expect(await store().exists(key)).toBe(false);
      expect(await server().running.db.prisma.storedObject.count({ where: { id: made.id } })).toBe(0);

      // The other object is untouched.
      expect(ids((await api.get(`/buckets/${bucket}/objects`)).body)).toEqual([kept.id]);
      expect(await store().exists(await storeKeyOf(kept.id))).toBe(true);
      expect((await content(tenant.key, kept.id)).bytes.equals(NOT_UTF8)).toBe(true);
    });
  });

  describe("download", () => {
    let tenant: Tenant;
    let bucket: string;
    /** 100 bytes, 0…99. */
    let hundred: any;
    const HUNDRED = Buffer.from(Array.from({ length: 100 }, (_, i) => i));
    const get = (headers?: Record<string, string>, method?: string) => content(tenant.key, hundred.id, { headers, method });

    beforeAll(async () => {
      tenant = await server().tenant();
      bucket = await newBucket(tenant.key);
      hundred = await stored(tenant.key, bucket, "hundred.bin", HUNDRED, "application/octet-stream");
    });

    it("serves the bytes with exactly the documented headers, and an RFC 6266 disposition for a non-ASCII name", async () => {
      const pdf = Buffer.concat([Buffer.from("%PDF-1.7\n"), ALL_BYTES]);
      const made = await stored(tenant.key, bucket, "résumé 2026.pdf", pdf, "application/pdf");
      expect(made.file_name).toBe("résumé 2026.pdf");
      const res = await content(tenant.key, made.id);
      expect(res.status).toBe(200);
      expect(res.bytes.equals(pdf)).toBe(true);
      const h = res.headers;
      expect(h.get("content-type")).toBe("application/pdf");
      expect(h.get("content-length")).toBe(String(pdf.length));
      expect(h.get("etag")).toBe(`"${sha256(pdf)}"`);
      expect(h.get("content-disposition")).toBe(`attachment; filename="r_sum_ 2026.pdf"; filename*=UTF-8''r%C3%A9sum%C3%A9%202026.pdf`);
      expect(h.get("x-content-type-options")).toBe("nosniff");
      expect(h.get("accept-ranges")).toBe("bytes");
      expect(h.get("content-security-policy")).toBe("sandbox; default-src 'none'");
      expect(h.get("cache-control")).toBe("private, no-cache");
      expect(h.get("last-modified")).toBe(new Date(made.created_at).toUTCString());
      expect(h.get("content-range")).toBeNull();
      expect(h.get("x-request-id")).toMatch(/^req_/);
    });

    it("escapes quotes, backslashes, percent signs and parentheses in the disposition", async () => {
      const made = await stored(tenant.key, bucket, `say "hi" 100% (ok)'s.txt`, Buffer.from("x"), "text/plain");
      const res = await content(tenant.key, made.id);
      expect(res.headers.get("content-disposition")).toBe(
        `attachment; filename="say _hi_ 100_ (ok)'s.txt"; filename*=UTF-8''say%20%22hi%22%20100%25%20%28ok%29%27s.txt`,
      );
    });

    it("an HTML upload is served as text/html but still as an attachment, nosniff and sandboxed", async () => {
      const html = Buffer.from("<!doctype html><script>alert(document.cookie)</script>");
      const made = await stored(tenant.key, bucket, "page.html", html, "text/html; charset=utf-8");
      const res = await content(tenant.key, made.id);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
      expect(res.headers.get("content-disposition")).toBe(`attachment; filename="page.html"; filename*=UTF-8''page.html`);
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
      expect(res.headers.get("content-security-policy")).toMatch(/^sandbox(;|$)/);
      expect(res.bytes.equals(html)).toBe(true);
    });

    it("If-None-Match with the ETag is 304 without a body; another ETag gets the bytes", async () => {
      const etag = `"${sha256(HUNDRED)}"`;
      const same = await get({ "if-none-match": etag });
      expect(same.status).toBe(304);
      expect(same.bytes.length).toBe(0);
      expect(same.headers.get("etag")).toBe(etag);
      expect((await get({ "if-none-match": `W/${etag}` })).status).toBe(304);
      expect((await get({ "if-none-match": `"abc", ${etag}` })).status).toBe(304);
      const other = await get({ "if-none-match": `"${"0".repeat(64)}"` });
      expect(other.status).toBe(200);
      expect(other.bytes.equals(HUNDRED)).toBe(true);
    });

    it.each([
      ["bytes=0-9", 0, 9],
      ["bytes=10-", 10, 99],
      ["bytes=-5", 95, 99],
      ["bytes=90-1000", 90, 99],
      ["bytes=-1000", 0, 99],
      ["bytes=99-99", 99, 99],
      // s3rver 3.7 reads the end 0 of "bytes=0-0" as "no end" and sends the whole object (real S3 does not).
      ...(s3 ? [] : [["bytes=0-0", 0, 0] as [string, number, number]]),
    ] as [string, number, number][])("Range %s is 206 with its Content-Range and bytes", async (range, start, end) => {
      const res = await get({ range });
      expect(res.status).toBe(206);
      expect(res.headers.get("content-range")).toBe(`bytes ${start}-${end}/100`);
      expect(res.headers.get("content-length")).toBe(String(end - start + 1));
      expect(res.headers.get("content-type")).toBe("application/octet-stream");
      expect(res.headers.get("etag")).toBe(`"${sha256(HUNDRED)}"`);
      expect(res.bytes.equals(HUNDRED.subarray(start, end + 1))).toBe(true);
    });

    it.each([["bytes=100-"], ["bytes=150-200"], ["bytes=-0"]])("Range %s is 416 range_not_satisfiable with Content-Range bytes */100", async (range) => {
      const res = await get({ range });
      expectError(res, 416, "range_not_satisfiable");
      expect(res.headers.get("content-range")).toBe("bytes */100");
    });

    it.each([["bytes=0-1,5-6"], ["bytes=9-3"], ["items=0-5"], ["bytes=abc"], ["bytes=-"]])("Range %s (several ranges or malformed) gets the whole object", async (range) => {
      const res = await get({ range });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-range")).toBeNull();
      expect(res.bytes.equals(HUNDRED)).toBe(true);
    });

    it("If-Range: the right ETag keeps the range, another one gets the whole object", async () => {
      const right = await get({ range: "bytes=0-9", "if-range": `"${sha256(HUNDRED)}"` });
      expect(right.status).toBe(206);
      expect(right.bytes.equals(HUNDRED.subarray(0, 10))).toBe(true);
      const wrong = await get({ range: "bytes=0-9", "if-range": `"${"1".repeat(64)}"` });
      expect(wrong.status).toBe(200);
      expect(wrong.headers.get("content-range")).toBeNull();
      expect(wrong.bytes.equals(HUNDRED)).toBe(true);
    });

    it("HEAD answers the same headers as GET without a body", async () => {
      const whole = await get();
      const head = await get(undefined, "HEAD");
      expect(head.status).toBe(200);
      expect(head.bytes.length).toBe(0);
      const names = ["content-type", "content-length", "etag", "content-disposition", "x-content-type-options", "accept-ranges", "content-security-policy", "last-modified", "cache-control"];
      for (const name of names) expect([name, head.headers.get(name)]).toEqual([name, whole.headers.get(name)]);
      expect(head.headers.get("content-length")).toBe("100");
      const ranged = await get({ range: "bytes=10-19" }, "HEAD");
      expect(ranged.status).toBe(206);
      expect(ranged.headers.get("content-range")).toBe("bytes 10-19/100");
      expect(ranged.headers.get("content-length")).toBe("10");
      expect(ranged.bytes.length).toBe(0);
    });

    it("takes no query parameters: 400 validation_failed naming one", async () => {
      const url = `${server().api}/objects/${hundred.id}/content?download=1`;
      expectError(await fetchChecked("GET", url, { headers: { authorization: `Bearer ${tenant.key}` } }), 400, "validation_failed", "download");
    });

    it.each([["POST"], ["DELETE"], ["PUT"], ["PATCH"]])("%s on /content is 405 with Allow: GET, HEAD, and the object stays", async (method) => {
      const res = await get(undefined, method);
      expectError(res, 405, "method_not_allowed");
      expect(res.headers.get("allow")).toBe("GET, HEAD");
      expect((await rest(server().api, tenant.key).get(`/objects/${hundred.id}`)).status).toBe(200);
    });
  });

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
      expectScope(await rawUpload(reader, bucket, Buffer.from("no"), { contentType: "text/plain", query: { file_name: "no.txt" } }), "storage.write");
      expectScope(await rawUpload(reader, bucket, Buffer.from("%PDF"), { contentType: "application/pdf" }), "storage.write");
      expectScope(await rest(server().api, reader).delete(`/objects/${object.id}`), "storage.write");
      expect(await holdings(owner, bucket)).toEqual(before);
    });

    it("storage.write uploads and deletes but cannot download, list or retrieve: required_scope storage.read", async () => {
      const api = rest(server().api, writer);
      const json = await uploadBytes(writer, bucket, "by-writer.txt", Buffer.from("w"), "text/plain");
      expect(json.status, JSON.stringify(json.body)).toBe(201);
      const rawMade = await rawUpload(writer, bucket, Buffer.from("raw"), { contentType: "text/plain", query: { file_name: "raw-writer.txt" } });
      expect(rawMade.status, JSON.stringify(rawMade.body)).toBe(201);
      expectScope(await content(writer, object.id), "storage.read");
      expectScope(await api.get(`/buckets/${bucket}/objects`), "storage.read");
      expectScope(await api.get(`/objects/${object.id}`), "storage.read");
      expectScope(await api.get("/storage"), "storage.read");
      expect((await api.delete(`/objects/${json.body.id}`)).body).toEqual({ id: json.body.id, object: "file", deleted: true });
      expect((await api.delete(`/objects/${rawMade.body.id}`)).status).toBe(200);
    });

    it("a key without storage scopes gets 403 on every storage route", async () => {
      const api = rest(server().api, neither);
      expectScope(await api.get("/storage"), "storage.read");
      expectScope(await api.get(`/buckets/${bucket}/objects`), "storage.read");
      expectScope(await api.get(`/objects/${object.id}`), "storage.read");
      expectScope(await content(neither, object.id), "storage.read");
      expectScope(await uploadBytes(neither, bucket, "x.txt", Buffer.from("x")), "storage.write");
      expectScope(await rawUpload(neither, bucket, Buffer.from("x"), { contentType: "text/plain", query: { file_name: "x.txt" } }), "storage.write");
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
        [await api.get(`/buckets/${bucket}/objects`), await api.get(`/buckets/${NEVER_BUCKET}/objects`), bucket, NEVER_BUCKET],
        [await uploadBytes(key, bucket, "x.txt", Buffer.from("x")), await uploadBytes(key, NEVER_BUCKET, "x.txt", Buffer.from("x")), bucket, NEVER_BUCKET],
        [
          await rawUpload(key, bucket, Buffer.from("x"), { contentType: "text/plain", query: { file_name: "x.txt" } }),
          await rawUpload(key, NEVER_BUCKET, Buffer.from("x"), { contentType: "text/plain", query: { file_name: "x.txt" } }),
          bucket,
          NEVER_BUCKET,
        ],
        [await api.get(`/objects/${object.id}`), await api.get(`/objects/${NEVER_OBJECT}`), object.id, NEVER_OBJECT],
        [await api.delete(`/objects/${object.id}`), await api.delete(`/objects/${NEVER_OBJECT}`), object.id, NEVER_OBJECT],
        [await content(key, object.id), await content(key, NEVER_OBJECT), object.id, NEVER_OBJECT],
        [await content(key, object.id, { headers: { range: "bytes=0-1" } }), await content(key, NEVER_OBJECT, { headers: { range: "bytes=0-1" } }), object.id, NEVER_OBJECT],
      ];
      for (const [res, never, id, neverId] of pairs) expectHidden(res, never, id, neverId);
      expect((await content(key, object.id, { method: "HEAD" })).status).toBe(404);
      expect((await content(key, object.id, { headers: { "if-none-match": `"${object.sha256}"` } })).status).toBe(404);

      expect(await holdings(owner, bucket)).toEqual(before);
      expect(await storedKeys(intruder.workspaceId)).toEqual([]);
      expect((await rest(server().api, intruder.key).get("/storage")).body).toMatchObject({ used_bytes: 0, object_count: 0 });
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

  describe("usage (GET /storage)", () => {
    it("follows uploads and deletes; the pro plan's limit is 100 GB", async () => {
      const tenant = await server().tenant();
      const api = rest(server().api, tenant.key);
      const usage = async () => {
        const res = await api.get("/storage");
        expect(res.status).toBe(200);
        return res.body;
      };
      const expected = (used: number, buckets: number, objects: number) => ({
        object: "storage_usage",
        plan: "pro",
        used_bytes: used,
        limit_bytes: 100e9,
        used_percent: 0,
        limit_label: "100 GB",
        bucket_count: buckets,
        object_count: objects,
      });
      expect(await usage()).toEqual(expected(0, 0, 0));
      const bucket = await newBucket(tenant.key);
      expect(await usage()).toEqual(expected(0, 1, 0));
      const a = await stored(tenant.key, bucket, "a.bin", ALL_BYTES);
      const b = await rawUpload(tenant.key, bucket, randomBytes(1000), { contentType: "application/octet-stream", query: { file_name: "b.bin" } });
      expect(b.status).toBe(201);
      await stored(tenant.key, bucket, "empty.bin", Buffer.alloc(0));
      expect(await usage()).toEqual(expected(1256, 1, 3));
      await api.delete(`/objects/${a.id}`);
      expect(await usage()).toEqual(expected(1000, 1, 2));
      await api.delete(`/objects/${b.body.id}`);
      expect(await usage()).toEqual(expected(0, 1, 1));
      const row = await server().running.db.prisma.workspace.findUniqueOrThrow({ where: { id: tenant.workspaceId }, select: { storageBytes: true } });
      expect(row.storageBytes).toBe(0n);
    });

    it("the free plan's limit is 1 GB", async () => {
      const tenant = await server().tenant({ plan: "free" });
      const bucket = await newBucket(tenant.key);
      const made = await rawUpload(tenant.key, bucket, Buffer.alloc(5_000_000), { contentType: "application/octet-stream", query: { file_name: "a.bin" } });
      expect(made.status, JSON.stringify(made.body)).toBe(201);
      expect((await rest(server().api, tenant.key).get("/storage")).body).toEqual({
        object: "storage_usage",
        plan: "free",
        used_bytes: 5_000_000,
        limit_bytes: 1e9,
        used_percent: 0.5,
        limit_label: "1 GB",
        bucket_count: 1,
        object_count: 1,
      });
    });
  });

  describe("events", () => {
    it("file.uploaded and file.deleted carry the object as the API showed it", async () => {
      const tenant = await server().tenant();
      const api = rest(server().api, tenant.key);
      const bucket = await newBucket(tenant.key);
      const viaJson = await stored(tenant.key, bucket, "evented.txt", Buffer.from("evented"), "text/plain");
      const viaRaw = (await rawUpload(tenant.key, bucket, NOT_UTF8, { contentType: "image/png", query: { file_name: "evented.png" } })).body;
      const deleted = await api.delete(`/objects/${viaJson.id}`);
      expect(deleted.status).toBe(200);

      const uploaded = await api.get("/events?type=file.uploaded");
      expect(uploaded.status, JSON.stringify(uploaded.body)).toBe(200);
      expect(uploaded.body.data.map((e: any) => e.type)).toEqual(["file.uploaded", "file.uploaded"]);
      expect(uploaded.body.data.map((e: any) => e.data.object)).toEqual([viaRaw, viaJson]);

      const gone = await api.get("/events?type=file.deleted");
      expect(gone.body.data).toHaveLength(1);
      expect(gone.body.data[0]).toMatchObject({ object: "event", type: "file.deleted", data: { object: viaJson } });
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
      const body = { file_name: "once.bin", content_type: "application/octet-stream", content_base64: b64(ALL_BYTES) };
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
      expect(ids((await api.get(`/buckets/${bucket}/objects?search=once.bin`)).body)).toEqual([first.body.id]);
    });

    it("a raw upload replayed returns the same object; the repeat's bytes are discarded", async () => {
      const key = newKey();
      const bytes = randomBytes(200_000);
      const send = () =>
        rawUpload(tenant.key, bucket, bytes, { contentType: "application/pdf", query: { file_name: "raw-once.pdf" }, headers: { "Idempotency-Key": key } });
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
      expect(ids((await api.get(`/buckets/${bucket}/objects?search=raw-once`)).body)).toEqual([first.body.id]);
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
        rawUpload(tenant.key, bucket, stream(), { contentType: "application/octet-stream", query: { file_name: "chunked-once.bin" }, headers: { "Idempotency-Key": key } });
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
      const made = await upload(tenant.key, bucket, { file_name: "c.txt", content_type: "text/plain", content_base64: b64(Buffer.from("one")) }, { "Idempotency-Key": jsonKey });
      expect(made.status).toBe(201);
      const rawKey = newKey();
      const rawMade = await rawUpload(tenant.key, bucket, Buffer.from("one"), { contentType: "text/plain", query: { file_name: "c.txt" }, headers: { "Idempotency-Key": rawKey } });
      expect(rawMade.status).toBe(201);
      const before = await holdings(tenant, bucket);

      const jsonConflict = await upload(tenant.key, bucket, { file_name: "c.txt", content_type: "text/plain", content_base64: b64(Buffer.from("two")) }, { "Idempotency-Key": jsonKey });
      expectError(jsonConflict, 409, "idempotency_conflict");
      const rawConflict = await rawUpload(tenant.key, bucket, Buffer.from("two"), { contentType: "text/plain", query: { file_name: "c.txt" }, headers: { "Idempotency-Key": rawKey } });
      expectError(rawConflict, 409, "idempotency_conflict");
      // Same bytes under another name is another request too.
      const renamed = await rawUpload(tenant.key, bucket, Buffer.from("one"), { contentType: "text/plain", query: { file_name: "d.txt" }, headers: { "Idempotency-Key": rawKey } });
      expectError(renamed, 409, "idempotency_conflict");
      expect(await holdings(tenant, bucket)).toEqual(before);
    });

    it("a raw repeat with the same bytes but another Content-Type is a different request: 409, nothing stored", async () => {
      const key = newKey();
      const send = (contentType: string) =>
        rawUpload(tenant.key, bucket, Buffer.from("same bytes"), { contentType, query: { file_name: "typed.bin" }, headers: { "Idempotency-Key": key } });
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
      expect(made).toMatchObject({ object: "file", bucket_id: bucket, file_name: "graph.bin", size_bytes: 256, sha256: sha256(ALL_BYTES) });
      expect(typeof made.size_bytes).toBe("number");
      expect((await api.get(`/objects/${made.id}`)).body).toEqual(made);
      expect((await content(tenant.key, made.id)).bytes.equals(ALL_BYTES)).toBe(true);
      const viaRest = await stored(tenant.key, bucket, "rest.txt", Buffer.from("rest"), "text/plain; charset=utf-8");

      const files = await gql(`query($b: ID!) { files(bucket_id: $b) { object data { ${FIELDS} } has_more next_cursor } }`, { b: bucket });
      expect(files.errors).toBeUndefined();
      expect(files.data.files).toEqual((await api.get(`/buckets/${bucket}/objects`)).body);
      expect(ids(files.data.files)).toEqual([viaRest.id, made.id]);
      const filtered = await gql(`query($b: ID!) { files(bucket_id: $b, search: "REST", content_type: "text/plain") { data { id } } }`, { b: bucket });
      expect(filtered.data.files.data).toEqual([{ id: viaRest.id }]);
      const paged = await gql(`query($b: ID!) { files(bucket_id: $b, limit: 1) { data { id } has_more next_cursor } }`, { b: bucket });
      expect(paged.data.files).toMatchObject({ data: [{ id: viaRest.id }], has_more: true });
      const page2 = await gql(`query($b: ID!, $c: String) { files(bucket_id: $b, limit: 1, cursor: $c) { data { id } has_more } }`, {
        b: bucket,
        c: paged.data.files.next_cursor,
      });
      expect(page2.data.files).toEqual({ data: [{ id: made.id }], has_more: false });

      const one = await gql(`query($id: ID!) { file(id: $id) { ${FIELDS} bucket { id } } }`, { id: viaRest.id });
      expect(one.errors).toBeUndefined();
      const { bucket: owning, ...shown } = one.data.file;
      expect(shown).toEqual(viaRest);
      expect(owning).toEqual({ id: bucket });

      const usage = await gql(`{ storageUsage { ${USAGE} } }`);
      expect(usage.errors).toBeUndefined();
      expect(usage.data.storageUsage).toEqual((await api.get("/storage")).body);
      expect(usage.data.storageUsage).toMatchObject({ used_bytes: 260, object_count: 2, bucket_count: 1 });

      const key = await storeKeyOf(made.id);
      const del = await gql(`mutation($id: ID!) { deleteFile(id: $id) { id object deleted } }`, { id: made.id });
      expect(del.errors).toBeUndefined();
      expect(del.data.deleteFile).toEqual({ id: made.id, object: "file", deleted: true });
      expect(await store().exists(key)).toBe(false);
      expectError(await api.get(`/objects/${made.id}`), 404, "not_found", "id");
      const missing = await gql(`query($id: ID!) { file(id: $id) { id } }`, { id: made.id });
      expect(missing.errors?.[0]?.extensions).toMatchObject({ code: "not_found" });
      expect((await gql(`{ storageUsage { used_bytes object_count } }`)).data.storageUsage).toEqual({ used_bytes: 4, object_count: 1 });
    });

    it("uploadFile validates like REST", async () => {
      const tenant = await server().tenant();
      const gql = graphql(server().url, tenant.key);
      const bucket = await newBucket(tenant.key);
      const send = (args: Record<string, string>) =>
        gql(`mutation($b: ID!, $n: String!, $t: String!, $c: String!) { uploadFile(bucket_id: $b, file_name: $n, content_type: $t, content_base64: $c) { id } }`, {
          b: bucket,
          n: "ok.txt",
          t: "text/plain",
          c: "QUJD",
          ...args,
        });
      expect((await send({ c: "QR==" })).errors?.[0]?.extensions).toMatchObject({ code: "validation_failed", param: "content_base64" });
      expect((await send({ t: "a/b/c" })).errors?.[0]?.extensions).toMatchObject({ code: "validation_failed", param: "content_type" });
      expect((await send({ n: "a/b" })).errors?.[0]?.extensions).toMatchObject({ code: "validation_failed", param: "file_name" });
      expect((await send({ b: NEVER_BUCKET })).errors?.[0]?.extensions).toMatchObject({ code: "not_found", param: "bucket_id" });
      expect(await storedKeys(tenant.workspaceId)).toEqual([]);
      expect((await send({})).errors).toBeUndefined();
    });

    it("a credential without storage.read gets insufficient_scope; without storage.write it cannot upload or delete", async () => {
      const owner = await server().tenant();
      const bucket = await newBucket(owner.key);
      const object = await stored(owner.key, bucket, "s.txt", Buffer.from("s"), "text/plain");
      const writeOnly = graphql(server().url, (await server().key(owner.workspaceId, ["storage.write"])).key);
      for (const query of [`{ storageUsage { used_bytes } }`, `{ files(bucket_id: "${bucket}") { data { id } } }`, `{ file(id: "${object.id}") { id } }`]) {
        const res = await writeOnly(query);
        expect(res.errors?.[0]?.extensions, query).toMatchObject({ code: "insufficient_scope", required_scope: "storage.read" });
      }
      const readOnly = graphql(server().url, (await server().key(owner.workspaceId, ["storage.read"])).key);
      const up = await readOnly(`mutation { uploadFile(bucket_id: "${bucket}", file_name: "n.txt", content_type: "text/plain", content_base64: "") { id } }`);
      expect(up.errors?.[0]?.extensions).toMatchObject({ code: "insufficient_scope", required_scope: "storage.write" });
      const del = await readOnly(`mutation { deleteFile(id: "${object.id}") { deleted } }`);
      expect(del.errors?.[0]?.extensions).toMatchObject({ code: "insufficient_scope", required_scope: "storage.write" });
      expect((await readOnly(`{ file(id: "${object.id}") { id } }`)).data.file).toEqual({ id: object.id });
    });
  });

  describe("bucket delete", () => {
    it("a bucket holding an object is 400 invalid_state; once the object is deleted the bucket deletes", async () => {
      const tenant = await server().tenant();
      const api = rest(server().api, tenant.key);
      const bucket = await newBucket(tenant.key);
      const object = await stored(tenant.key, bucket, "anchor.bin", NOT_UTF8);
      expectError(await api.delete(`/buckets/${bucket}`), 400, "invalid_state");
      expect((await api.get(`/buckets/${bucket}`)).status).toBe(200);
      expect((await api.get(`/objects/${object.id}`)).body).toEqual(object);
      expect((await api.delete(`/objects/${object.id}`)).status).toBe(200);
      const deleted = await api.delete(`/buckets/${bucket}`);
      expect(deleted.status).toBe(200);
      expect(deleted.body).toEqual({ id: bucket, object: "bucket", deleted: true });
      expectError(await api.get(`/buckets/${bucket}/objects`), 404, "not_found", "bucket_id");
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
        const local = await readdir(join(server().config.dataDir, "objects"), { recursive: true }).catch(() => []);
        expect(local).toEqual([]);
      });
    });
  }
}

e2e("objects", (server, stack) => objectsSuite(server, stack));

if (stacks().includes("postgres")) {
  describe("objects [postgres + S3]", () => {
    let s3: S3TestServer | undefined;
    let server: TestServer | undefined;
    beforeAll(async () => {
      s3 = await startS3Server();
      server = await startTestServer("postgres", {
        STORAGE_S3_BUCKET: s3.bucket,
        STORAGE_S3_ENDPOINT: s3.endpoint,
        STORAGE_S3_FORCE_PATH_STYLE: "true",
        AWS_REGION: "us-east-1",
        AWS_ACCESS_KEY_ID: "S3RVER",
        AWS_SECRET_ACCESS_KEY: "S3RVER",
      });
    });
    afterAll(async () => {
      await server?.close();
      await s3?.close();
    });
    objectsSuite(
      () => {
        if (!server) throw new Error("server not started");
        return server;
      },
      "postgres",
      () => {
        if (!s3) throw new Error("s3rver not started");
        return s3;
      },
    );
  });
}
