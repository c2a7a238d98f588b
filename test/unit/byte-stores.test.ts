import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, readdir, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../server/runtime/config.ts";
import {
  type ByteStore,
  InvalidKeyError,
  KeyNotFoundError,
  RangeNotSatisfiableError,
  TooLargeError,
} from "../../server/storage/byte-store.ts";
import { LocalByteStore } from "../../server/storage/local-store.ts";
import { openByteStore } from "../../server/storage/open-store.ts";
import { S3ByteStore } from "../../server/storage/s3-store.ts";
import { type S3TestServer, startS3Server } from "../support/s3-server.ts";

const MiB = 1024 * 1024;
const PART = 5 * MiB;
const OPTS = { maxBytes: 64 * MiB, contentType: "application/octet-stream" };

interface Fixture {
  store: ByteStore;
  /** Everything the store holds: keys, temp files, unfinished multipart uploads. */
  residue(): Promise<string[]>;
  close(): Promise<void>;
}

async function localFixture(): Promise<Fixture> {
  const dir = await mkdtemp(join(tmpdir(), "kontor-bytes-"));
  const root = join(dir, "objects");
  return {
    store: new LocalByteStore(root),
    residue: () => filesUnder(root),
    close: () => rm(dir, { recursive: true, force: true }),
  };
}

async function s3Fixture(): Promise<Fixture> {
  const server: S3TestServer = await startS3Server();
  const store = new S3ByteStore({ client: server.client, bucket: server.bucket, partSize: PART });
  return {
    store,
    async residue() {
      const uploads = (await server.pendingUploads()).map((id) => `upload:${id}`);
      return [...(await allKeys(store, "")), ...uploads];
    },
    close: () => server.close(),
  };
}

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true }).catch(() => []);
  return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
}

async function allKeys(store: ByteStore, prefix: string, limit = 1000): Promise<string[]> {
  const keys: string[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 100; pages++) {
    const page = await store.list(prefix, { cursor, limit });
    keys.push(...page.keys);
    cursor = page.cursor;
    if (cursor === null) return keys;
  }
  throw new Error("listing did not end");
}

async function readAll(body: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(Buffer.from(chunk as Uint8Array));
  return Buffer.concat(chunks);
}

function sha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** Yields `total` pseudo-random bytes in 64 KiB chunks without holding them all, hashing as it goes. */
function streamed(total: number): { source: AsyncIterable<Uint8Array>; digest: () => string } {
  const hash = createHash("sha256");
  async function* source() {
    let left = total;
    while (left > 0) {
      const chunk = randomBytes(Math.min(left, 64 * 1024));
      hash.update(chunk);
      left -= chunk.length;
      yield chunk;
    }
  }
  return { source: source(), digest: () => hash.digest("hex") };
}

async function* failingAfter(bytes: number): AsyncGenerator<Uint8Array> {
  yield* streamed(bytes).source;
  throw new Error("source broke");
}

async function rejection<T extends Error>(
  promise: Promise<unknown>,
  type: new (...args: never[]) => T,
): Promise<T> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error, `expected ${type.name}`).toBeInstanceOf(type);
  return error as T;
}

describe.each([
  ["local disk", localFixture],
  ["S3 (s3rver on loopback)", s3Fixture],
])("byte store: %s", (_name, makeFixture) => {
  let fixture: Fixture;
  let store: ByteStore;
  beforeAll(async () => {
    fixture = await makeFixture();
    store = fixture.store;
  });
  afterAll(() => fixture?.close());

  it("round-trips non-UTF-8 bytes with size and sha256", async () => {
    const bytes = Buffer.from([0x00, 0xff, 0xfe, 0x80, 0xc3, 0x28, 0x0a, 0x0d, 0xed, 0xa0, 0x80, 0x00]);
    const result = await store.put("ws_a/bin", Readable.from([bytes]), OPTS);
    expect(result).toEqual({ size: bytes.length, sha256: sha256(bytes) });
    const got = await store.get("ws_a/bin");
    expect(got.size).toBe(bytes.length);
    expect(got.totalSize).toBe(bytes.length);
    expect((await readAll(got.body)).equals(bytes)).toBe(true);
    await store.delete("ws_a/bin");
  });

  it("stores an empty body", async () => {
    expect(await store.put("ws_a/empty", Readable.from([]), OPTS)).toEqual({
      size: 0,
      sha256: sha256(new Uint8Array()),
    });
    expect((await readAll((await store.get("ws_a/empty")).body)).length).toBe(0);
    await store.delete("ws_a/empty");
  });

  it("streams a multi-MB body (several multipart parts) and reads it back intact", async () => {
    const total = 2 * PART + 123_457;
    const { source, digest } = streamed(total);
    const result = await store.put("ws_a/big", source, OPTS);
    expect(result).toEqual({ size: total, sha256: digest() });
    const got = await store.get("ws_a/big");
    expect(got.size).toBe(total);
    const hash = createHash("sha256");
    let read = 0;
    for await (const chunk of got.body) {
      hash.update(chunk as Uint8Array);
      read += (chunk as Uint8Array).length;
    }
    expect(read).toBe(total);
    expect(hash.digest("hex")).toBe(result.sha256);
  });

  it("reads ranges: inclusive ends, the last byte, an end past the size clamped, a start past it refused", async () => {
    const bytes = Buffer.from(Array.from({ length: 200 }, (_, i) => (i * 7) % 256));
    await store.put("ws_a/ranged", Readable.from([bytes]), OPTS);
    const slice = async (start: number, end: number) => {
      const got = await store.get("ws_a/ranged", { start, end });
      const body = await readAll(got.body);
      expect(got.size).toBe(body.length);
      expect(got.totalSize).toBe(200);
      return body;
    };
    // "bytes=0-0" is left to the local-disk suite: s3rver 3.7 reads an end of 0 as "to the end".
    expect((await slice(0, 1)).equals(bytes.subarray(0, 2))).toBe(true);
    expect((await slice(10, 19)).equals(bytes.subarray(10, 20))).toBe(true);
    expect((await slice(199, 199)).equals(bytes.subarray(199))).toBe(true);
    expect((await slice(150, 10_000)).equals(bytes.subarray(150))).toBe(true);
    await rejection(store.get("ws_a/ranged", { start: 200, end: 300 }), RangeNotSatisfiableError);
    await rejection(store.get("ws_a/ranged", { start: 5, end: 4 }), RangeNotSatisfiableError);
    await rejection(store.get("ws_a/ranged", { start: -1, end: 4 }), RangeNotSatisfiableError);
    await store.delete("ws_a/ranged");
  });

  it("accepts exactly maxBytes, refuses maxBytes + 1 across a part boundary and leaves nothing", async () => {
    const before = await fixture.residue();
    const max = PART + 1000;
    const exact = streamed(max);
    expect(await store.put("ws_q/exact", exact.source, { ...OPTS, maxBytes: max })).toEqual({
      size: max,
      sha256: exact.digest(),
    });
    await store.delete("ws_q/exact");

    const error = await rejection(
      store.put("ws_q/over", streamed(max + 1).source, { ...OPTS, maxBytes: max }),
      TooLargeError,
    );
    expect(error.maxBytes).toBe(max);
    expect(await store.exists("ws_q/over")).toBe(false);
    await rejection(store.get("ws_q/over"), KeyNotFoundError);
    expect(await fixture.residue()).toEqual(before);
  });

  it("refuses a small body over a small limit before anything is written", async () => {
    const before = await fixture.residue();
    await rejection(
      store.put("ws_q/tiny", Readable.from([Buffer.from("abcd")]), { ...OPTS, maxBytes: 3 }),
      TooLargeError,
    );
    expect(await fixture.residue()).toEqual(before);
  });

  it("leaves nothing when the source errors halfway (after a part went up)", async () => {
    const before = await fixture.residue();
    const error = await rejection(store.put("ws_q/broken", failingAfter(PART + 4096), OPTS), Error);
    expect(error.message).toBe("source broke");
    expect(await store.exists("ws_q/broken")).toBe(false);
    expect(await fixture.residue()).toEqual(before);
  });

  it("leaves nothing when a Readable source is destroyed mid-stream", async () => {
    const before = await fixture.residue();
    const source = new Readable({ read() {} });
    source.push(randomBytes(1024));
    queueMicrotask(() => source.destroy(new Error("client hung up")));
    await rejection(store.put("ws_q/hungup", source, OPTS), Error);
    expect(await store.exists("ws_q/hungup")).toBe(false);
    expect(await fixture.residue()).toEqual(before);
  });

  it("stops on an aborted signal and leaves nothing", async () => {
    const before = await fixture.residue();
    const controller = new AbortController();
    async function* source() {
      yield randomBytes(PART + 10);
      controller.abort(new Error("request aborted"));
      yield randomBytes(10);
    }
    const error = await rejection(
      store.put("ws_q/aborted", source(), { ...OPTS, signal: controller.signal }),
      Error,
    );
    expect(error.message).toBe("request aborted");
    expect(await fixture.residue()).toEqual(before);
  });

  it("keeps the previous bytes when an overwrite fails", async () => {
    await store.put("ws_a/kept", Readable.from([Buffer.from("first")]), OPTS);
    await rejection(
      store.put("ws_a/kept", Readable.from([Buffer.from("second and longer")]), { ...OPTS, maxBytes: 6 }),
      TooLargeError,
    );
    expect((await readAll((await store.get("ws_a/kept")).body)).toString()).toBe("first");
    await store.delete("ws_a/kept");
  });

  it("answers KeyNotFoundError for a missing key and false from exists", async () => {
    const error = await rejection(store.get("ws_a/never"), KeyNotFoundError);
    expect(error.key).toBe("ws_a/never");
    await rejection(store.get("ws_a/never", { start: 0, end: 1 }), KeyNotFoundError);
    expect(await store.exists("ws_a/never")).toBe(false);
  });

  it("deletes idempotently", async () => {
    await store.put("ws_a/gone", Readable.from([Buffer.from("x")]), OPTS);
    expect(await store.exists("ws_a/gone")).toBe(true);
    await store.delete("ws_a/gone");
    await store.delete("ws_a/gone");
    await store.delete("ws_a/never-was");
    expect(await store.exists("ws_a/gone")).toBe(false);
    await rejection(store.get("ws_a/gone"), KeyNotFoundError);
  });

  it("lists keys by prefix, page by page, each key once", async () => {
    const keys = Array.from({ length: 7 }, (_, i) => `ws_list/obj_${i}`);
    for (const key of keys) await store.put(key, Readable.from([Buffer.from(key)]), OPTS);
    await store.put("ws_other/obj_0", Readable.from([Buffer.from("other")]), OPTS);
    const paged = await allKeys(store, "ws_list/", 3);
    expect([...paged].sort()).toEqual(keys);
    expect(await allKeys(store, "ws_other/")).toEqual(["ws_other/obj_0"]);
    expect(await allKeys(store, "ws_none/")).toEqual([]);
    const first = await store.list("ws_list/", { limit: 3 });
    expect(first.keys).toHaveLength(3);
    expect(first.cursor).not.toBeNull();
    for (const key of [...keys, "ws_other/obj_0"]) await store.delete(key);
    expect(await allKeys(store, "ws_list/")).toEqual([]);
  });

  it.each([
    "",
    "../etc/passwd",
    "ws/../../etc",
    "/abs",
    "ws//double",
    "trailing/",
    "Upper",
    "dot.ted",
    "back\\slash",
    "sp ace",
    "%2e%2e/x",
    "nul\u0000",
    "é",
    "a".repeat(513),
  ])("refuses the bad key %j everywhere", async (key) => {
    await rejection(store.put(key, Readable.from([Buffer.from("x")]), OPTS), InvalidKeyError);
    await rejection(store.get(key), InvalidKeyError);
    await rejection(store.delete(key), InvalidKeyError);
    await rejection(store.exists(key), InvalidKeyError);
  });

  it("refuses a bad list prefix", async () => {
    await rejection(store.list("../"), InvalidKeyError);
    await rejection(store.list("/ws"), InvalidKeyError);
  });
});

describe("local byte store on disk", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "kontor-bytes-"));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it("writes files 0600 in directories 0700, fanned out below the root", async () => {
    const root = join(dir, "objects");
    const store = new LocalByteStore(root);
    await store.put("ws_m/obj", Readable.from([Buffer.from("secret")]), OPTS);
    const [file] = await filesUnder(root);
    expect(file).toMatch(new RegExp(`^${root}/[0-9a-f]{2}/ws_m/obj$`));
    expect((await stat(file!)).mode & 0o777).toBe(0o600);
    expect((await stat(join(file!, ".."))).mode & 0o777).toBe(0o700);
    expect((await stat(join(file!, "..", ".."))).mode & 0o777).toBe(0o700);
  });

  it("reads the one-byte range 0-0", async () => {
    const store = new LocalByteStore(join(dir, "one"));
    await store.put("ws_r/obj", Readable.from([Buffer.from("xyz")]), OPTS);
    const got = await store.get("ws_r/obj", { start: 0, end: 0 });
    expect(got.size).toBe(1);
    expect((await readAll(got.body)).toString()).toBe("x");
  });

  it("ignores a temp file left by a crash when listing", async () => {
    const root = join(dir, "crash");
    const store = new LocalByteStore(root);
    await store.put("ws_c/obj", Readable.from([Buffer.from("ok")]), OPTS);
    const [file] = await filesUnder(root);
    const { writeFile } = await import("node:fs/promises");
    await writeFile(join(file!, "..", ".obj.deadbeef.tmp"), "half");
    expect(await allKeys(store, "")).toEqual(["ws_c/obj"]);
  });
});

describe("openByteStore", () => {
  const storage = (env: NodeJS.ProcessEnv) => loadConfig(env).storage;

  it("uses the local disk under DATA_DIR/objects without STORAGE_S3_BUCKET", async () => {
    const store = await openByteStore(storage({}), "/var/lib/kontor");
    expect(store).toBeInstanceOf(LocalByteStore);
    expect((store as LocalByteStore).root).toBe("/var/lib/kontor/objects");
  });

  it("uses S3 when STORAGE_S3_BUCKET is set, with the region and credentials of the AWS variables", async () => {
    const settings = storage({
      STORAGE_S3_BUCKET: "kontor",
      STORAGE_S3_ENDPOINT: "http://127.0.0.1:9000",
      STORAGE_S3_FORCE_PATH_STYLE: "true",
      AWS_REGION: "eu-central-1",
      AWS_ACCESS_KEY_ID: "AKIDEXAMPLE",
      AWS_SECRET_ACCESS_KEY: "secret",
    });
    expect(settings.s3).toEqual({
      bucket: "kontor",
      endpoint: "http://127.0.0.1:9000",
      forcePathStyle: true,
      region: "eu-central-1",
      credentials: { accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret" },
    });
    const store = await openByteStore(settings, "/data");
    expect(store).toBeInstanceOf(S3ByteStore);
  });

  it("refuses a path-style flag that is not true or false, a malformed endpoint and a bad quota cap", () => {
    expect(() => storage({ STORAGE_S3_BUCKET: "kontor", STORAGE_S3_FORCE_PATH_STYLE: "yes" })).toThrow(
      /true or false/,
    );
    expect(() => storage({ STORAGE_S3_BUCKET: "kontor", STORAGE_S3_ENDPOINT: "not a url" })).toThrow(
      /STORAGE_S3_ENDPOINT/,
    );
    expect(() => storage({ KONTOR_STORAGE_QUOTA_CAP_BYTES: "1e3x" })).toThrow(
      /KONTOR_STORAGE_QUOTA_CAP_BYTES/,
    );
    expect(() => storage({ KONTOR_STORAGE_QUOTA_CAP_BYTES: "-1" })).toThrow(/KONTOR_STORAGE_QUOTA_CAP_BYTES/);
    expect(storage({ KONTOR_STORAGE_QUOTA_CAP_BYTES: "1000" }).quotaCapBytes).toBe(1000);
  });
});
