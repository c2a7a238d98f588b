import { randomBytes } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { ids } from "../../support/assertions.ts";
import { rest } from "../../support/http.ts";
import { expectError } from "../../support/invoicing.ts";
import type { Tenant } from "../../support/server.ts";
import {
  ALL_BYTES,
  NEVER_BUCKET,
  NEVER_OBJECT,
  NOT_UTF8,
  objectsE2e,
  objectsHelpers,
  sha256,
} from "./support.ts";

/**
 * Storage objects end to end: lists, metadata, downloads, deletes and usage. The same body runs on
 * each stack with the local byte store, and once more on PostgreSQL with the bytes in S3 (s3rver on
 * loopback): objectsE2e in ./support.ts. The other parts: object-uploads.test.ts,
 * object-access.test.ts.
 */

objectsE2e("objects: list, retrieve, download and delete", (server, _stack, s3) => {
  const { store, storeKeyOf, fetchChecked, content, rawUpload, newBucket, stored } = objectsHelpers(
    server,
    s3,
  );

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
      expect(ids(await listed("search=REPORT"))).toEqual([
        byName("report-q2.pdf").id,
        byName("Report-Q1.PDF").id,
      ]);
      expect(ids(await listed("search=q1.pdf"))).toEqual([byName("Report-Q1.PDF").id]);
      expect(ids(await listed("search=oto.P"))).toEqual([byName("photo.png").id]);
      expect((await listed("search=nothing-like-this")).data).toEqual([]);
    });

    it("content_type filters by exact MIME type, ignoring stored parameters and case", async () => {
      expect(ids(await listed("content_type=application/pdf"))).toEqual([
        byName("report-q2.pdf").id,
        byName("Report-Q1.PDF").id,
      ]);
      expect(ids(await listed(`content_type=${encodeURIComponent("text/plain")}`))).toEqual([
        byName("notes.txt").id,
      ]);
      expect(ids(await listed(`content_type=${encodeURIComponent("text/plain; charset=utf-8")}`))).toEqual([
        byName("notes.txt").id,
      ]);
      expect(ids(await listed("content_type=IMAGE/PNG"))).toEqual([byName("photo.png").id]);
      // "text/htm" is not a prefix match of "text/html".
      expect((await listed("content_type=text/htm")).data).toEqual([]);
      expect((await listed("content_type=video/mp4")).data).toEqual([]);
    });

    it("content_type type/* matches a whole family", async () => {
      expect(ids(await listed(`content_type=${encodeURIComponent("image/*")}`))).toEqual([
        byName("holiday.jpeg").id,
        byName("photo.png").id,
      ]);
      expect(ids(await listed(`content_type=${encodeURIComponent("text/*")}`))).toEqual([
        byName("page.html").id,
        byName("notes.txt").id,
      ]);
    });

    it("combines search and content_type", async () => {
      expect(ids(await listed(`search=o&content_type=${encodeURIComponent("image/*")}`))).toEqual([
        byName("holiday.jpeg").id,
        byName("photo.png").id,
      ]);
      expect(ids(await listed(`search=hol&content_type=${encodeURIComponent("image/png")}`))).toEqual([]);
    });

    it.each([["image"], ["a/b/c"], ["*/*"], ["image/*/x"], ["text/plain;;"]])(
      "content_type=%j is 400 validation_failed param content_type",
      async (value) => {
        expectError(
          await api.get(`/buckets/${bucket}/objects?content_type=${encodeURIComponent(value)}`),
          400,
          "validation_failed",
          "content_type",
        );
      },
    );

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
    const get = (headers?: Record<string, string>, method?: string) =>
      content(tenant.key, hundred.id, { headers, method });

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
      expect(h.get("content-disposition")).toBe(
        `attachment; filename="r_sum_ 2026.pdf"; filename*=UTF-8''r%C3%A9sum%C3%A9%202026.pdf`,
      );
      expect(h.get("x-content-type-options")).toBe("nosniff");
      expect(h.get("accept-ranges")).toBe("bytes");
      expect(h.get("content-security-policy")).toBe("sandbox; default-src 'none'");
      expect(h.get("cache-control")).toBe("private, no-cache");
      expect(h.get("last-modified")).toBe(new Date(made.created_at).toUTCString());
      expect(h.get("content-range")).toBeNull();
      expect(h.get("x-request-id")).toMatch(/^req_/);
    });

    it("escapes quotes, backslashes, percent signs and parentheses in the disposition", async () => {
      const made = await stored(
        tenant.key,
        bucket,
        `say "hi" 100% (ok)'s.txt`,
        Buffer.from("x"),
        "text/plain",
      );
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
      expect(res.headers.get("content-disposition")).toBe(
        `attachment; filename="page.html"; filename*=UTF-8''page.html`,
      );
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
    ] as [string, number, number][])(
      "Range %s is 206 with its Content-Range and bytes",
      async (range, start, end) => {
        const res = await get({ range });
        expect(res.status).toBe(206);
        expect(res.headers.get("content-range")).toBe(`bytes ${start}-${end}/100`);
        expect(res.headers.get("content-length")).toBe(String(end - start + 1));
        expect(res.headers.get("content-type")).toBe("application/octet-stream");
        expect(res.headers.get("etag")).toBe(`"${sha256(HUNDRED)}"`);
        expect(res.bytes.equals(HUNDRED.subarray(start, end + 1))).toBe(true);
      },
    );

    it.each([["bytes=100-"], ["bytes=150-200"], ["bytes=-0"]])(
      "Range %s is 416 range_not_satisfiable with Content-Range bytes */100",
      async (range) => {
        const res = await get({ range });
        expectError(res, 416, "range_not_satisfiable");
        expect(res.headers.get("content-range")).toBe("bytes */100");
      },
    );

    it.each([["bytes=0-1,5-6"], ["bytes=9-3"], ["items=0-5"], ["bytes=abc"], ["bytes=-"]])(
      "Range %s (several ranges or malformed) gets the whole object",
      async (range) => {
        const res = await get({ range });
        expect(res.status).toBe(200);
        expect(res.headers.get("content-range")).toBeNull();
        expect(res.bytes.equals(HUNDRED)).toBe(true);
      },
    );

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
      const names = [
        "content-type",
        "content-length",
        "etag",
        "content-disposition",
        "x-content-type-options",
        "accept-ranges",
        "content-security-policy",
        "last-modified",
        "cache-control",
      ];
      for (const name of names)
        expect([name, head.headers.get(name)]).toEqual([name, whole.headers.get(name)]);
      expect(head.headers.get("content-length")).toBe("100");
      const ranged = await get({ range: "bytes=10-19" }, "HEAD");
      expect(ranged.status).toBe(206);
      expect(ranged.headers.get("content-range")).toBe("bytes 10-19/100");
      expect(ranged.headers.get("content-length")).toBe("10");
      expect(ranged.bytes.length).toBe(0);
    });

    it("takes no query parameters: 400 validation_failed naming one", async () => {
      const url = `${server().api}/objects/${hundred.id}/content?download=1`;
      expectError(
        await fetchChecked("GET", url, { headers: { authorization: `Bearer ${tenant.key}` } }),
        400,
        "validation_failed",
        "download",
      );
    });

    it.each([["POST"], ["DELETE"], ["PUT"], ["PATCH"]])(
      "%s on /content is 405 with Allow: GET, HEAD, and the object stays",
      async (method) => {
        const res = await get(undefined, method);
        expectError(res, 405, "method_not_allowed");
        expect(res.headers.get("allow")).toBe("GET, HEAD");
        expect((await rest(server().api, tenant.key).get(`/objects/${hundred.id}`)).status).toBe(200);
      },
    );
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
      const b = await rawUpload(tenant.key, bucket, randomBytes(1000), {
        contentType: "application/octet-stream",
        query: { file_name: "b.bin" },
      });
      expect(b.status).toBe(201);
      await stored(tenant.key, bucket, "empty.bin", Buffer.alloc(0));
      expect(await usage()).toEqual(expected(1256, 1, 3));
      await api.delete(`/objects/${a.id}`);
      expect(await usage()).toEqual(expected(1000, 1, 2));
      await api.delete(`/objects/${b.body.id}`);
      expect(await usage()).toEqual(expected(0, 1, 1));
      const row = await server().running.db.prisma.workspace.findUniqueOrThrow({
        where: { id: tenant.workspaceId },
        select: { storageBytes: true },
      });
      expect(row.storageBytes).toBe(0n);
    });

    it("the free plan's limit is 1 GB", async () => {
      const tenant = await server().tenant({ plan: "free" });
      const bucket = await newBucket(tenant.key);
      const made = await rawUpload(tenant.key, bucket, Buffer.alloc(5_000_000), {
        contentType: "application/octet-stream",
        query: { file_name: "a.bin" },
      });
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
});
