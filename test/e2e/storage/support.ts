import { createHash, randomBytes, randomUUID } from "node:crypto";
import { readdir, stat } from "node:fs/promises";
import { request as httpRequest } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect } from "vitest";
import type { PrismaClient } from "../../../schema/generated/prisma/client.ts";
import type { PlanName } from "../../../schema/lib/plans.ts";
import type { ByteStore } from "../../../server/storage/byte-store.ts";
import { LocalByteStore } from "../../../server/storage/local-store.ts";
import { S3ByteStore } from "../../../server/storage/s3-store.ts";
import { type Answer, type ApiResponse, answerOf, call, rest } from "../../support/http.ts";
import { checkAgainstOpenApi } from "../../support/openapi-check.ts";
import { type S3TestServer, startS3Server } from "../../support/s3-server.ts";
import { startTestServer, type Tenant, type TestServer } from "../../support/server.ts";
import { type Stack, stacks } from "../../support/stacks.ts";
import { e2e } from "../../support/suite.ts";

/**
 * Shared by the storage suites of this folder: the object suites (object-uploads, object-reads,
 * object-access) and the reservation suites (reservations, upload-slots).
 */

// The object suites: the same body runs on each stack with the local byte store, and once more on
// PostgreSQL with the bytes in S3 (s3rver on loopback).

export const NEVER_BUCKET = "bkt_01J00000000000000000000000";
export const NEVER_OBJECT = "obj_01J00000000000000000000000";
export const OBJECT_ID = /^obj_[0-9A-Z]{26}$/;
export const ALL_BYTES = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
export const NOT_UTF8 = Buffer.from([0xff, 0xfe, 0x00]);

export const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
export const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64");
export const newKey = () => `key-${randomUUID()}`;

export interface Reply extends ApiResponse {
  /** The body exactly as received. */
  bytes: Buffer;
}

/** A suite of objects' tests: `s3` is set on the run with the bytes in S3. */
export type ObjectsSuite = (server: () => TestServer, stack: Stack, s3?: () => S3TestServer) => void;

/** The helpers of an object suite, over its server (and its S3 server, on the run with the bytes in S3). */
export function objectsHelpers(server: () => TestServer, s3?: () => S3TestServer) {
  /** The server's byte store, opened on the side: the local disk under DATA_DIR/objects, or the S3 bucket through s3rver's own client. */
  let sideStore: ByteStore | undefined;
  const store = (): ByteStore =>
    (sideStore ??= s3
      ? new S3ByteStore({ client: s3().client, bucket: s3().bucket })
      : new LocalByteStore(join(server().config.dataDir, "objects")));

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
    (
      await server().running.db.prisma.storedObject.findUniqueOrThrow({
        where: { id },
        select: { storeKey: true },
      })
    ).storeKey;

  async function fetchChecked(
    method: string,
    url: string,
    init: RequestInit & { duplex?: "half" },
  ): Promise<Reply> {
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
  function content(
    key: string,
    id: string,
    options: { method?: string; headers?: Record<string, string> } = {},
  ): Promise<Reply> {
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

  /** A raw upload of `text` as text/plain, named `fileName`. */
  const rawText = (
    key: string,
    bucketId: string,
    text: string,
    fileName: string,
    headers?: Record<string, string>,
  ) =>
    rawUpload(key, bucketId, Buffer.from(text), {
      contentType: "text/plain",
      query: { file_name: fileName },
      headers,
    });

  /** A JSON upload through REST. */
  const upload = (
    key: string,
    bucketId: string,
    body: Record<string, unknown>,
    headers?: Record<string, string>,
  ) => call("POST", `${server().api}/buckets/${bucketId}/objects`, { key, body, headers });

  const uploadBytes = (
    key: string,
    bucketId: string,
    fileName: string,
    bytes: Uint8Array,
    contentType = "application/octet-stream",
  ) => upload(key, bucketId, { file_name: fileName, content_type: contentType, content_base64: b64(bytes) });

  async function newBucket(key: string, name = `b-${randomBytes(5).toString("hex")}`): Promise<string> {
    const made = await rest(server().api, key).post("/buckets", { name });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    return made.body.id;
  }

  /** An object uploaded over JSON, as the API returned it. */
  async function stored(
    key: string,
    bucketId: string,
    fileName: string,
    bytes: Uint8Array,
    contentType = "application/octet-stream",
  ) {
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

  return {
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
  };
}

/** Declares `suite` as e2e(name, …) on each stack, and once more on PostgreSQL with the bytes in S3. */
export function objectsE2e(name: string, suite: ObjectsSuite) {
  e2e(name, (server, stack) => suite(server, stack));

  if (stacks().includes("postgres")) {
    describe(`${name} [postgres + S3]`, () => {
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
      suite(
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
}

// The reservation suites (reservations.test.ts, upload-slots.test.ts).

/** Every plan's quota is capped to this here: 1 MB. */
export const QUOTA = 1_000_000;

/** Every file below `dir` with its size; temporary files (`.…tmp`) included. A file gone meanwhile is skipped. */
export async function filesUnder(dir: string): Promise<{ path: string; size: number }[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(
    (error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT") return [];
      throw error;
    },
  );
  const files = await Promise.all(
    entries
      .filter((entry) => entry.isFile())
      .map(async (entry) => {
        const path = join(entry.parentPath ?? entry.path, entry.name);
        const size = await stat(path).then(
          (s) => s.size,
          () => null,
        );
        return size === null ? null : { path: path.slice(dir.length + 1), size };
      }),
  );
  return files.filter((file) => file !== null);
}

export interface Held {
  /** Sends `bytes` more of the body (random bytes). */
  send(bytes: number): Promise<void>;
  /** Ends the body (sending what a declared length still misses); answers the server's answer. */
  finish(): Promise<Answer>;
  /** The server's answer, whenever it comes (never, for an aborted one). */
  answer: Promise<Answer>;
  /** Destroys the socket mid-body, as a client that goes away. */
  abort(): void;
}

/**
 * A raw upload held open: `sent` bytes go at once, the rest when asked. With `declared`, its
 * Content-Length; without, it is sent chunked (its length unknown to the server).
 */
export function holdUpload(
  api: string,
  key: string,
  bucket: string,
  body: { declared?: number; sent: number } = { declared: 20_000, sent: 10_000 },
): Held {
  const { declared, sent } = body;
  const url = `${api}/buckets/${bucket}/objects?file_name=held.bin`;
  const headers: Record<string, string> = {
    authorization: `Bearer ${key}`,
    "content-type": "application/octet-stream",
  };
  if (declared !== undefined) headers["content-length"] = String(declared);
  const req = httpRequest(url, { method: "POST", agent: false, headers });
  const answer = answerOf(req).then(async (res) => {
    await checkAgainstOpenApi("POST", url, res);
    return res;
  });
  answer.catch(() => {}); // an aborted one never answers
  let written = 0;
  const send = (bytes: number) => {
    written += bytes;
    return new Promise<void>((resolve, reject) =>
      req.write(randomBytes(bytes), (error) => (error ? reject(error) : resolve())),
    );
  };
  void send(sent).catch(() => {});
  return {
    send,
    answer,
    async finish() {
      req.end(declared === undefined ? undefined : randomBytes(declared - written));
      return answer;
    },
    abort: () => req.destroy(),
  };
}

/** What the database says of a workspace's uploads under way, in one statement (one snapshot). */
export async function ledger(prisma: PrismaClient, workspaceId: string) {
  const rows = await prisma.$queryRaw<
    { used: bigint; reserved: bigint; id: string | null; bytes: bigint | null; owner: string | null }[]
  >`
    select w.storage_bytes as used, w.storage_reserved_bytes as reserved, r.id, r.bytes, r.owner
    from workspaces w left join storage_reservations r on r.workspace_id = w.id where w.id = ${workspaceId} order by r.id`;
  const first = rows[0]!;
  return {
    used: Number(first.used),
    reserved: Number(first.reserved),
    reservations: rows
      .filter((row) => row.id !== null)
      .map((row) => ({ id: row.id!, bytes: row.bytes!, owner: row.owner! })),
  };
}

/** An error answer of `type` and `code` (unlike test/support/invoicing.ts's expectError, which takes the code and param). */
export function expectErrorOfType(
  res: { status: number; body: any },
  status: number,
  type: string,
  code: string,
) {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.body.error).toMatchObject({ type, code });
  expect(res.body.error.request_id).toMatch(/^req_/);
}

/** The helpers of a reservation suite, over its server (the quota capped to QUOTA). */
export function reservationHelpers(server: () => TestServer) {
  const prisma = () => server().running.db.prisma;

  async function workspace(plan: PlanName) {
    const tenant = await server().tenant({ plan });
    const api = rest(server().api, tenant.key);
    const made = await api.post("/buckets", { name: `b-${randomBytes(4).toString("hex")}` });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    return { tenant, api, bucket: made.body.id as string };
  }

  return { prisma, workspace };
}
