import { createHash, randomBytes } from "node:crypto";
import { Agent, request as httpRequest } from "node:http";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { describe, expect, it } from "vitest";
import { PLAN_LIMITS } from "../../../schema/lib/plans.ts";
import { answerOf, raw, rest } from "../../support/http.ts";
import { checkAgainstOpenApi } from "../../support/openapi-check.ts";
import { eventually } from "../../support/receiver.ts";
import { e2e } from "../../support/suite.ts";
import {
  expectErrorOfType as expectError,
  filesUnder,
  holdUpload,
  ledger,
  QUOTA,
  reservationHelpers,
} from "./support.ts";

/**
 * Storage reservations under a race: uploads past the quota never put more on disk than it, and a
 * refused or abandoned upload leaves nothing. Upload slots and a crashed server: upload-slots.test.ts.
 */

/** The most a request body hands the server at once (Node's socket reads): the contract's slack. */
const CHUNK = 64 * 1024;

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
    headers: {
      authorization: `Bearer ${key}`,
      "content-type": "application/octet-stream",
      "content-length": String(bytes.length),
    },
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
  return (
    codes.includes(code ?? "") ||
    codes.includes(cause?.code ?? "") ||
    ["fetch failed", "terminated"].includes((error as Error)?.message)
  );
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

e2e(
  "storage reservations: racing the quota",
  (server) => {
    const { prisma, workspace } = reservationHelpers(server);
    const objectsDir = () => join(server().config.dataDir, "objects");

    const workspaceFiles = async (workspaceId: string) =>
      (await filesUnder(objectsDir())).filter((file) =>
        file.path.split("/").includes(workspaceId.toLowerCase()),
      );

    describe("20 concurrent raw uploads racing past the quota", () => {
      // Mixed: half declare their length (reserved whole at the start), half stream it (reserved as it arrives).
      for (const round of ["mixed", "all streamed"] as const) {
        it(`never put more on disk than the quota; failures leave nothing; reservations end at 0 (${round})`, {
          timeout: 120_000,
        }, async () => {
          const { tenant, bucket } = await workspace("max");
          // 100 to 195 kB each: the 20 of them weigh nearly three times the quota.
          const sent = Array.from({ length: 20 }, (_, i) => randomBytes(100_000 + 5_000 * i));
          const sampling = sampleDisk(objectsDir(), tenant.workspaceId);
          const results = await Promise.all(
            sent.map(async (bytes, i) => {
              const url = `${server().api}/buckets/${bucket}/objects?file_name=race-${i}.bin`;
              const declared = round === "mixed" && i % 2 === 0;
              const res = declared
                ? await declaredUpload(url, tenant.key, bytes)
                : await streamedUpload(url, tenant.key, bytes);
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
            expectError(
              { status: res.status, body: res.json },
              403,
              "permission_error",
              "storage_quota_exceeded",
            );
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
          const rows = await prisma().storedObject.findMany({
            where: { workspaceId: tenant.workspaceId },
            select: { id: true, sizeBytes: true },
          });
          expect(rows.map((row) => row.id).sort()).toEqual(landed.map((res) => res.json.id).sort());
          const files = await workspaceFiles(tenant.workspaceId);
          expect(files.map((file) => file.path.split("/").at(-1)).sort()).toEqual(
            landed.map((res) => res.json.id.toLowerCase()).sort(),
          );
          // The reservations are all gone, and what is used is what landed.
          expect(await ledger(prisma(), tenant.workspaceId)).toEqual({
            used: sum,
            reserved: 0,
            reservations: [],
          });
          expect(sum).toBeLessThanOrEqual(QUOTA);
          expect(rows.reduce((total, row) => total + Number(row.sizeBytes), 0)).toBe(sum);
          const usage = await rest(server().api, tenant.key).get("/storage");
          expect(usage.body).toMatchObject({ used_bytes: sum, object_count: landed.length });
          for (const res of landed) {
            expect(res.json).toMatchObject({
              size_bytes: res.bytes.length,
              sha256: createHash("sha256").update(res.bytes).digest("hex"),
            });
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
          headers: {
            authorization: `Bearer ${tenant.key}`,
            "content-type": "application/octet-stream",
            "content-length": String(bytes.length),
          },
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

    it("a client that goes away mid-upload leaves no reservation, no bytes and no slot taken", {
      timeout: 60_000,
    }, async () => {
      const { tenant, api, bucket } = await workspace("free");
      const limit = PLAN_LIMITS.free.concurrent_uploads;
      const before = await ledger(prisma(), tenant.workspaceId);
      for (let i = 0; i < limit + 1; i++) {
        const held = holdUpload(server().api, tenant.key, bucket, { declared: 300_000, sent: 100_000 });
        const during = await eventually(
          () => ledger(prisma(), tenant.workspaceId),
          (state) => state.reserved === 300_000,
        );
        expect(during).toMatchObject({
          reserved: 300_000,
          reservations: [expect.objectContaining({ bytes: 300_000n })],
        });
        held.abort();
        expect(
          await eventually(
            () => ledger(prisma(), tenant.workspaceId),
            (state) => state.reservations.length === 0,
          ),
        ).toEqual(before);
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
      const reserved = (bytes: number) =>
        eventually(
          () => ledger(prisma(), tenant.workspaceId),
          (state) => state.reserved >= bytes,
        );
      // Both without a length: their bytes are reserved as they arrive (exactly, this near the quota).
      const older = holdUpload(server().api, tenant.key, bucket, { sent: 600_000 });
      expect((await reserved(600_000)).reserved).toBe(600_000);
      const younger = holdUpload(server().api, tenant.key, bucket, { sent: 300_000 });
      expect((await reserved(900_000)).reservations).toHaveLength(2);

      // The older one needs 200 kB more than the quota leaves: the younger one, idle, is stopped for it.
      await older.send(300_000);
      const stopped = await younger.answer;
      expectError(
        { status: stopped.status, body: JSON.parse(stopped.text) },
        403,
        "permission_error",
        "storage_quota_exceeded",
      );
      expect(JSON.parse(stopped.text).error.message).toContain("started earlier");
      const landed = await older.finish();
      expect(landed.status, landed.text).toBe(201);
      expect(JSON.parse(landed.text)).toMatchObject({ size_bytes: 900_000 });
      expect(await ledger(prisma(), tenant.workspaceId)).toEqual({
        used: 900_000,
        reserved: 0,
        reservations: [],
      });
      expect(await workspaceFiles(tenant.workspaceId)).toEqual([expect.objectContaining({ size: 900_000 })]);
    });
  },
  { KONTOR_STORAGE_QUOTA_CAP_BYTES: String(QUOTA) },
);
