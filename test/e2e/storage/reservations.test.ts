import { createHash, randomBytes } from "node:crypto";
import { readdir, stat } from "node:fs/promises";
import { Agent, request as httpRequest } from "node:http";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { describe, expect, it } from "vitest";
import { PLAN_LIMITS, type PlanName } from "../../../schema/lib/plans.ts";
import type { PrismaClient } from "../../../schema/generated/prisma/client.ts";
import { loadConfig } from "../../../server/runtime/config.ts";
import { openDatabase } from "../../../server/db/open.ts";
import { startChildServer, type ChildServer } from "../../support/child-server.ts";
import { answerOf, raw, rest, type Answer } from "../../support/http.ts";
import { checkAgainstOpenApi } from "../../support/openapi-check.ts";
import { eventually } from "../../support/receiver.ts";
import { provisionStack, tenantIn, type Tenant } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";

/** Every plan's quota is capped to this here: 1 MB. */
const QUOTA = 1_000_000;
/** The most a request body hands the server at once (Node's socket reads): the contract's slack. */
const CHUNK = 64 * 1024;

/** Every file below `dir` with its size; temporary files (`.…tmp`) included. A file gone meanwhile is skipped. */
async function filesUnder(dir: string): Promise<{ path: string; size: number }[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return [];
    throw error;
  });
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

/**
 * Sums the sizes of the files below `dir` whose path has a segment `segment` (a workspace's
 * directory), over and over, in a worker thread of its own: its samples do not wait on the event
 * loop of this process, which the server under test shares. Temporary files are counted too.
 */
const SAMPLER = `
const { readdirSync, statSync } = require("node:fs");
const { join } = require("node:path");
const { parentPort, workerData } = require("node:worker_threads");
const { dir, segment } = workerData;
let peak = 0, samples = 0, stop = false;
parentPort.on("message", () => { stop = true; });
function look() {
  let total = 0, entries = [];
  try { entries = readdirSync(dir, { recursive: true, withFileTypes: true }); } catch { return 0; }
  for (const entry of entries) {
    const parent = entry.parentPath ?? entry.path;
    if (!entry.isFile() || !parent.split("/").includes(segment)) continue;
    try { total += statSync(join(parent, entry.name)).size; } catch {}
  }
  return total;
}
function loop() {
  if (stop) return parentPort.postMessage({ peak, samples });
  peak = Math.max(peak, look());
  samples++;
  setImmediate(loop);
}
loop();
`;

function sampleDisk(dir: string, workspaceId: string) {
  const worker = new Worker(SAMPLER, { eval: true, workerData: { dir, segment: workspaceId.toLowerCase() } });
  const done = new Promise<{ peak: number; samples: number }>((resolve, reject) => {
    worker.once("message", resolve);
    worker.once("error", reject);
  });
  return {
    async stop() {
      worker.postMessage("stop");
      const result = await done;
      await worker.terminate();
      return result;
    },
  };
}

/** `bytes` as a chunked body (no Content-Length) in pieces of `piece`, yielding to the event loop between pieces. */
function streamOf(bytes: Buffer, piece = 16 * 1024): ReadableStream<Uint8Array> {
  let offset = 0;
  return new ReadableStream({
    async pull(controller) {
      if (offset >= bytes.length) return controller.close();
      await new Promise((r) => setImmediate(r));
      controller.enqueue(new Uint8Array(bytes.subarray(offset, offset + piece)));
      offset += piece;
    },
  });
}

/** An upload's answer: status 0 (and no JSON) when the connection was reset before one arrived. */
interface Uploaded {
  status: number;
  json: any;
  /** The answer's Connection header. */
  connection: string | null;
}

/** A raw upload with its Content-Length. */
function declaredUpload(url: string, key: string, bytes: Buffer): Promise<Uploaded> {
  const req = httpRequest(url, {
    method: "POST",
    agent: false,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/octet-stream", "content-length": String(bytes.length) },
  });
  const answer = answerOf(req);
  req.end(bytes);
  return answer.then(
    async (res) => {
      await checkAgainstOpenApi("POST", url, res);
      return { status: res.status, json: JSON.parse(res.text), connection: res.headers.get("connection") };
    },
    () => ({ status: 0, json: null, connection: null }),
  );
}

/** A connection reset (or closed) under a request, as fetch reports it, before or while its answer is read. */
function isReset(error: unknown): boolean {
  const codes = ["ECONNRESET", "EPIPE", "UND_ERR_SOCKET"];
  const cause = (error as { cause?: { code?: string } } | null)?.cause;
  const code = (error as { code?: string } | null)?.code;
  return codes.includes(code ?? "") || codes.includes(cause?.code ?? "") || ["fetch failed", "terminated"].includes((error as Error)?.message);
}

/** A raw upload streamed without a Content-Length (chunked). */
async function streamedUpload(url: string, key: string, bytes: Buffer): Promise<Uploaded> {
  const headers = { authorization: `Bearer ${key}`, "content-type": "application/octet-stream" };
  const init = { method: "POST", headers, body: streamOf(bytes), duplex: "half" };
  let res: Awaited<ReturnType<typeof raw>>;
  try {
    res = await raw(url, init as RequestInit);
  } catch (error) {
    if (!isReset(error)) throw error;
    return { status: 0, json: null, connection: null };
  }
  return { status: res.status, json: res.json, connection: res.headers.get("connection") };
}

interface Held {
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
function holdUpload(api: string, key: string, bucket: string, body: { declared?: number; sent: number } = { declared: 20_000, sent: 10_000 }): Held {
  const { declared, sent } = body;
  const url = `${api}/buckets/${bucket}/objects?file_name=held.bin`;
  const headers: Record<string, string> = { authorization: `Bearer ${key}`, "content-type": "application/octet-stream" };
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
    return new Promise<void>((resolve, reject) => req.write(randomBytes(bytes), (error) => (error ? reject(error) : resolve())));
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
async function ledger(prisma: PrismaClient, workspaceId: string) {
  const rows = await prisma.$queryRaw<{ used: bigint; reserved: bigint; id: string | null; bytes: bigint | null; owner: string | null }[]>`
    select w.storage_bytes as used, w.storage_reserved_bytes as reserved, r.id, r.bytes, r.owner
    from workspaces w left join storage_reservations r on r.workspace_id = w.id where w.id = ${workspaceId} order by r.id`;
  const first = rows[0]!;
  return {
    used: Number(first.used),
    reserved: Number(first.reserved),
    reservations: rows.filter((row) => row.id !== null).map((row) => ({ id: row.id!, bytes: row.bytes!, owner: row.owner! })),
  };
}

/** Opens the database of `env` (the embedded one only while no server has it), runs `work`, closes it. */
async function withDatabase<T>(env: NodeJS.ProcessEnv, work: (prisma: PrismaClient) => Promise<T>): Promise<T> {
  const db = await openDatabase(loadConfig(env));
  try {
    return await work(db.prisma);
  } finally {
    await db.close();
  }
}

function expectError(res: { status: number; body: any }, status: number, type: string, code: string) {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.body.error).toMatchObject({ type, code });
  expect(res.body.error.request_id).toMatch(/^req_/);
}

e2e(
  "storage reservations",
  (server, stack) => {
    const objectsDir = () => join(server().config.dataDir, "objects");
    const prisma = () => server().running.db.prisma;

    async function workspace(plan: PlanName) {
      const tenant = await server().tenant({ plan });
      const api = rest(server().api, tenant.key);
      const made = await api.post("/buckets", { name: `b-${randomBytes(4).toString("hex")}` });
      expect(made.status, JSON.stringify(made.body)).toBe(201);
      return { tenant, api, bucket: made.body.id as string };
    }

    const workspaceFiles = async (workspaceId: string) =>
      (await filesUnder(objectsDir())).filter((file) => file.path.split("/").includes(workspaceId.toLowerCase()));

    describe("20 concurrent raw uploads racing past the quota", () => {
      // Mixed: half declare their length (reserved whole at the start), half stream it (reserved as it arrives).
      for (const round of ["mixed", "all streamed"] as const) {
        it(`never put more on disk than the quota; failures leave nothing; reservations end at 0 (${round})`, { timeout: 120_000 }, async () => {
          const { tenant, bucket } = await workspace("max");
          // 100 to 195 kB each: the 20 of them weigh nearly three times the quota.
          const sent = Array.from({ length: 20 }, (_, i) => randomBytes(100_000 + 5_000 * i));
          const sampling = sampleDisk(objectsDir(), tenant.workspaceId);
          const results = await Promise.all(
            sent.map(async (bytes, i) => {
              const url = `${server().api}/buckets/${bucket}/objects?file_name=race-${i}.bin`;
              const declared = round === "mixed" && i % 2 === 0;
              const res = declared ? await declaredUpload(url, tenant.key, bytes) : await streamedUpload(url, tenant.key, bytes);
              return { ...res, bytes };
            }),
          );
          const { peak, samples } = await sampling.stop();

          const landed = results.filter((res) => res.status === 201);
          const refused = results.filter((res) => res.status !== 201);
          // An upload refused before its whole body was read is answered while the body is still being sent,
          // and the connection closed under it: the client may see that reset rather than the 403.
          const reset = refused.filter((res) => res.status === 0);
          for (const res of refused.filter((res) => res.status !== 0)) {
            expectError({ status: res.status, body: res.json }, 403, "permission_error", "storage_quota_exceeded");
            // The rest of its body is not read: the connection goes with the answer, never back to the client's pool.
            expect(res.connection).toBe("close");
          }
          const sum = landed.reduce((total, res) => total + res.bytes.length, 0);
          console.info(
            `race (${round}): ${landed.length} landed (${sum} bytes), ${refused.length} refused (${reset.length} of them seen as a reset); ` +
              `peak bytes on disk ${peak} of a ${QUOTA}-byte quota (${samples} samples)`,
          );
          expect(landed.length).toBeGreaterThan(0);
          expect(refused.length).toBeGreaterThan(0);
          expect(samples).toBeGreaterThan(5);
          expect(peak, "bytes on disk during the race").toBeLessThanOrEqual(QUOTA + CHUNK);

          // Every failure left no row and no bytes: the rows, the keys and the files are the landed ones.
          const rows = await prisma().storedObject.findMany({ where: { workspaceId: tenant.workspaceId }, select: { id: true, sizeBytes: true } });
          expect(rows.map((row) => row.id).sort()).toEqual(landed.map((res) => res.json.id).sort());
          const files = await workspaceFiles(tenant.workspaceId);
          expect(files.map((file) => file.path.split("/").at(-1)).sort()).toEqual(landed.map((res) => res.json.id.toLowerCase()).sort());
          // The reservations are all gone, and what is used is what landed.
          expect(await ledger(prisma(), tenant.workspaceId)).toEqual({ used: sum, reserved: 0, reservations: [] });
          expect(sum).toBeLessThanOrEqual(QUOTA);
          expect(rows.reduce((total, row) => total + Number(row.sizeBytes), 0)).toBe(sum);
          const usage = await rest(server().api, tenant.key).get("/storage");
          expect(usage.body).toMatchObject({ used_bytes: sum, object_count: landed.length });
          for (const res of landed) {
            expect(res.json).toMatchObject({ size_bytes: res.bytes.length, sha256: createHash("sha256").update(res.bytes).digest("hex") });
          }
        });
      }
    });

    it("a refused upload's connection closes with its answer; a landed one's is kept for the next request", async () => {
      const { tenant, bucket } = await workspace("free");
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      const sockets = new Set<unknown>();
      const post = (path: string, bytes: Buffer) => {
        const req = httpRequest(`${server().api}${path}`, {
          method: "POST",
          agent,
          headers: { authorization: `Bearer ${tenant.key}`, "content-type": "application/octet-stream", "content-length": String(bytes.length) },
        });
        req.once("socket", (socket) => sockets.add(socket));
        const answer = answerOf(req);
        req.end(bytes);
        return answer;
      };
      try {
        // Refused before a byte of its body is read: the rest is never read, so the connection cannot carry another request.
        const refused = await post("/buckets/bkt_missing/objects?file_name=a.bin", randomBytes(10_000));
        expect(refused.status, refused.text).toBe(404);
        expect(refused.headers.get("connection")).toBe("close");
        const first = await post(`/buckets/${bucket}/objects?file_name=b.bin`, randomBytes(1_000));
        const second = await post(`/buckets/${bucket}/objects?file_name=c.bin`, randomBytes(1_000));
        expect([first.status, second.status]).toEqual([201, 201]);
        expect(first.headers.get("connection")).toBe("keep-alive");
        // One connection for the refused upload, one for both landed ones.
        expect(sockets.size).toBe(2);
      } finally {
        agent.destroy();
      }
    });

    it("a client that goes away mid-upload leaves no reservation, no bytes and no slot taken", { timeout: 60_000 }, async () => {
      const { tenant, api, bucket } = await workspace("free");
      const limit = PLAN_LIMITS.free.concurrent_uploads;
      const before = await ledger(prisma(), tenant.workspaceId);
      for (let i = 0; i < limit + 1; i++) {
        const held = holdUpload(server().api, tenant.key, bucket, { declared: 300_000, sent: 100_000 });
        const during = await eventually(
          () => ledger(prisma(), tenant.workspaceId),
          (state) => state.reserved === 300_000,
        );
        expect(during).toMatchObject({ reserved: 300_000, reservations: [expect.objectContaining({ bytes: 300_000n })] });
        held.abort();
        expect(await eventually(() => ledger(prisma(), tenant.workspaceId), (state) => state.reservations.length === 0)).toEqual(before);
      }
      expect(await workspaceFiles(tenant.workspaceId)).toEqual([]);
      // All those aborted uploads gave their slot back: one more lands.
      const res = await raw(`${server().api}/buckets/${bucket}/objects?file_name=after.bin`, {
        method: "POST",
        headers: { authorization: `Bearer ${tenant.key}`, "content-type": "application/octet-stream" },
        body: randomBytes(1_000),
      });
      expect(res.status, res.text).toBe(201);
      expect((await api.get("/storage")).body).toMatchObject({ used_bytes: 1_000, object_count: 1 });
    });

    it("near the quota an older streamed upload goes first: a younger one holding the room it needs stops at once (403)", async () => {
      const { tenant, bucket } = await workspace("max");
      const reserved = (bytes: number) => eventually(() => ledger(prisma(), tenant.workspaceId), (state) => state.reserved >= bytes);
      // Both without a length: their bytes are reserved as they arrive (exactly, this near the quota).
      const older = holdUpload(server().api, tenant.key, bucket, { sent: 600_000 });
      expect((await reserved(600_000)).reserved).toBe(600_000);
      const younger = holdUpload(server().api, tenant.key, bucket, { sent: 300_000 });
      expect((await reserved(900_000)).reservations).toHaveLength(2);

      // The older one needs 200 kB more than the quota leaves: the younger one, idle, is stopped for it.
      await older.send(300_000);
      const stopped = await younger.answer;
      expectError({ status: stopped.status, body: JSON.parse(stopped.text) }, 403, "permission_error", "storage_quota_exceeded");
      expect(JSON.parse(stopped.text).error.message).toContain("started earlier");
      const landed = await older.finish();
      expect(landed.status, landed.text).toBe(201);
      expect(JSON.parse(landed.text)).toMatchObject({ size_bytes: 900_000 });
      expect(await ledger(prisma(), tenant.workspaceId)).toEqual({ used: 900_000, reserved: 0, reservations: [] });
      expect(await workspaceFiles(tenant.workspaceId)).toEqual([expect.objectContaining({ size: 900_000 })]);
    });

    describe("upload slots", () => {
      const busy = (res: { status: number; headers: Headers; body: any }, limit: number) => {
        expectError(res, 429, "rate_limit_error", "concurrency_limit_exceeded");
        expect(res.body.error.message).toContain(`${limit} uploads at once`);
        expect(Number(res.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      };

      async function rawUpload(api: string, key: string, bucket: string, size = 1_000) {
        const res = await raw(`${api}/buckets/${bucket}/objects?file_name=one-more.bin`, {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/octet-stream" },
          body: randomBytes(size),
        });
        return { status: res.status, headers: res.headers, body: res.json };
      }

      const jsonUpload = (api: ReturnType<typeof rest>, bucket: string) =>
        api.post(`/buckets/${bucket}/objects`, {
          file_name: "one-more.txt",
          content_type: "text/plain",
          content_base64: randomBytes(100).toString("base64"),
        });

      it("the plan's number of uploads run at once; one more is 429 with Retry-After; a finished one makes room", { timeout: 60_000 }, async () => {
        const { tenant, api, bucket } = await workspace("free");
        const limit = PLAN_LIMITS.free.concurrent_uploads;
        expect(limit).toBe(4);
        const running = (count: number) => eventually(() => ledger(prisma(), tenant.workspaceId), (state) => state.reservations.length === count);

        const held = Array.from({ length: limit }, () => holdUpload(server().api, tenant.key, bucket));
        expect((await running(limit)).reservations).toHaveLength(limit);
        busy(await rawUpload(server().api, tenant.key, bucket), limit);
        busy(await jsonUpload(api, bucket), limit);
        // The refusals took nothing: still exactly `limit` under way, and nothing more reserved.
        expect((await ledger(prisma(), tenant.workspaceId)).reservations).toHaveLength(limit);

        // One finishes: its slot is free for the next upload, which is held in turn.
        const first = await held[0]!.finish();
        expect(first.status, first.text).toBe(201);
        held[0] = holdUpload(server().api, tenant.key, bucket);
        await running(limit);
        busy(await rawUpload(server().api, tenant.key, bucket), limit);

        // One aborted by its client frees its slot too.
        held[1]!.abort();
        await running(limit - 1);
        const fits = await rawUpload(server().api, tenant.key, bucket);
        expect(fits.status, JSON.stringify(fits.body)).toBe(201);

        for (const upload of [held[0]!, ...held.slice(2)]) expect((await upload.finish()).status).toBe(201);
        expect(await ledger(prisma(), tenant.workspaceId)).toMatchObject({ reserved: 0, reservations: [] });
        // Refused uploads (past the quota) give their slot back as well: the whole cap is free again.
        for (let i = 0; i < limit + 2; i++) {
          expectError(await rawUpload(server().api, tenant.key, bucket, QUOTA), 403, "permission_error", "storage_quota_exceeded");
        }
        const again = Array.from({ length: limit }, () => holdUpload(server().api, tenant.key, bucket));
        await running(limit);
        busy(await rawUpload(server().api, tenant.key, bucket), limit);
        for (const upload of again) expect((await upload.finish()).status).toBe(201);
        expect((await api.get("/storage")).body.object_count).toBe(2 * limit + 1);
      });

      it("another workspace's uploads take none of its slots", { timeout: 60_000 }, async () => {
        const a = await workspace("free");
        const b = await workspace("free");
        const limit = PLAN_LIMITS.free.concurrent_uploads;
        const held = Array.from({ length: limit }, () => holdUpload(server().api, a.tenant.key, a.bucket));
        await eventually(() => ledger(prisma(), a.tenant.workspaceId), (state) => state.reservations.length === limit);
        busy(await rawUpload(server().api, a.tenant.key, a.bucket), limit);
        expect((await rawUpload(server().api, b.tenant.key, b.bucket)).status).toBe(201);
        for (const upload of held) expect((await upload.finish()).status).toBe(201);
      });

      const sharedSlots = "with Redis the slots are shared by the processes: two here, two in another process, the fifth refused in both";
      it.runIf(stack === "postgres")(sharedSlots, { timeout: 120_000 }, async () => {
        const { tenant, bucket } = await workspace("free");
        const limit = PLAN_LIMITS.free.concurrent_uploads;
        const config = server().config;
        let child: ChildServer | undefined;
        try {
          child = await startChildServer({
            KONTOR_ENV: "development",
            DATABASE_URL: config.databaseUrl,
            REDIS_URL: config.redisUrl,
            DATA_DIR: config.dataDir,
            KONTOR_STORAGE_QUOTA_CAP_BYTES: String(QUOTA),
          });
          const here = Array.from({ length: limit / 2 }, () => holdUpload(server().api, tenant.key, bucket));
          const there = Array.from({ length: limit / 2 }, () => holdUpload(child!.api, tenant.key, bucket));
          const owners = await eventually(
            () => ledger(prisma(), tenant.workspaceId),
            (state) => state.reservations.length === limit,
          );
          // Two processes hold them.
          expect(new Set(owners.reservations.map((r) => r.owner)).size).toBe(2);
          busy(await rawUpload(child.api, tenant.key, bucket), limit);
          busy(await rawUpload(server().api, tenant.key, bucket), limit);
          // One ends in the other process: this one may start one.
          expect((await there[0]!.finish()).status).toBe(201);
          expect((await rawUpload(server().api, tenant.key, bucket)).status).toBe(201);
          for (const upload of [...here, ...there.slice(1)]) expect((await upload.finish()).status).toBe(201);
          expect(child.stderr()).not.toMatch(/"level":"error"/);
        } finally {
          await child?.stop();
        }
      });
    });

    const crash = "a server killed mid-upload leaves its reservation; after a restart the sweep releases it and its partial bytes";
    it(crash, { timeout: 180_000 }, async () => {
      const scratch = await provisionStack(stack);
      const env = {
        ...scratch.env,
        KONTOR_ENV: "development",
        KONTOR_STORAGE_QUOTA_CAP_BYTES: String(QUOTA),
        // Renewed every ~333 ms, swept every second: the restart outlasts it, so nothing waits on a timer.
        KONTOR_UPLOAD_LEASE_MS: "1000",
      };
      const objects = join(scratch.env.DATA_DIR!, "objects");
      let child: ChildServer | undefined;
      try {
        const tenant: Tenant = await tenantIn(env, "Crash");
        child = await startChildServer(env);
        const made = await rest(child.api, tenant.key).post("/buckets", { name: "crash" });
        expect(made.status, JSON.stringify(made.body)).toBe(201);
        const bucket = made.body.id;
        const probe = (server: ChildServer) =>
          rest(server.api, tenant.key).post(`/buckets/${bucket}/objects`, {
            file_name: "probe.bin",
            content_type: "application/octet-stream",
            content_base64: randomBytes(200_000).toString("base64"),
          });

        // 900 kB declared (reserved at once), 300 kB of it written when the process dies.
        const crashed = holdUpload(child.api, tenant.key, bucket, { declared: 900_000, sent: 300_000 });
        const written = (files: { path: string; size: number }[]) => files.some((file) => file.path.endsWith(".tmp") && file.size >= 300_000);
        const partial = await eventually(() => filesUnder(objects), written);
        expect(partial.filter((file) => file.path.endsWith(".tmp"))).toHaveLength(1);
        // While it runs, its reservation holds the room: 200 kB more do not fit.
        expectError(await probe(child), 403, "permission_error", "storage_quota_exceeded");
        await child.kill();
        crashed.abort();
        child = undefined;

        // What the dead process left: its reservation, the counter, the partial file.
        const left = await withDatabase(env, (db) => ledger(db, tenant.workspaceId));
        expect(left).toMatchObject({ used: 0, reserved: 900_000 });
        expect(left.reservations).toEqual([expect.objectContaining({ bytes: 900_000n })]);
        expect((await filesUnder(objects)).filter((file) => file.path.endsWith(".tmp"))).toHaveLength(1);

        child = await startChildServer(env);
        const restarted = child;
        // The new process's sweep (every lease) releases the dead one's reservation: the probe then fits.
        const landed = await eventually(() => probe(restarted), (res) => res.status !== 403, 30_000);
        expect(landed.status, JSON.stringify(landed.body)).toBe(201);
        expect(await filesUnder(objects)).toEqual([expect.objectContaining({ size: 200_000 })]);
        expect(child.stderr()).not.toMatch(/"level":"error"/);
        await child.stop();
        child = undefined;
        expect(await withDatabase(env, (db) => ledger(db, tenant.workspaceId))).toEqual({ used: 200_000, reserved: 0, reservations: [] });
      } finally {
        await child?.kill();
        await scratch.drop();
      }
    });
  },
  { KONTOR_STORAGE_QUOTA_CAP_BYTES: String(QUOTA) },
);

describe("KONTOR_UPLOAD_LEASE_MS", () => {
  const lease = (env: NodeJS.ProcessEnv) => loadConfig(env).storage.uploadLeaseMs;
  it("is two minutes unless set; a short lease, for the tests of a crash, is refused in production", () => {
    expect(lease({})).toBe(120_000);
    expect(lease({ KONTOR_UPLOAD_LEASE_MS: "1000" })).toBe(1_000);
    expect(() => lease({ KONTOR_UPLOAD_LEASE_MS: "0" })).toThrow(/KONTOR_UPLOAD_LEASE_MS/);
    const production = { PUBLIC_URL: "https://api.example.com", KONTOR_ENV: "production" };
    expect(() => lease({ ...production, KONTOR_UPLOAD_LEASE_MS: "1000" })).toThrow(/at least 10000 in production/);
    expect(lease({ ...production, KONTOR_UPLOAD_LEASE_MS: "30000" })).toBe(30_000);
  });
});
