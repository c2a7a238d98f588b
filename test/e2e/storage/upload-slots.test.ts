import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { PrismaClient } from "../../../schema/generated/prisma/client.ts";
import { PLAN_LIMITS } from "../../../schema/lib/plans.ts";
import { openDatabase } from "../../../server/db/open.ts";
import { loadConfig } from "../../../server/runtime/config.ts";
import { type ChildServer, startChildServer } from "../../support/child-server.ts";
import { raw, rest } from "../../support/http.ts";
import { eventually } from "../../support/receiver.ts";
import { provisionStack, type Tenant, tenantIn } from "../../support/server.ts";
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
 * Storage reservations: the plan's number of uploads at once (shared by the processes on Redis), and
 * a server killed mid-upload, whose reservation the next process's sweep releases. The quota under
 * a race: reservations.test.ts.
 */

/** Opens the database of `env` (the embedded one only while no server has it), runs `work`, closes it. */
async function withDatabase<T>(
  env: NodeJS.ProcessEnv,
  work: (prisma: PrismaClient) => Promise<T>,
): Promise<T> {
  const db = await openDatabase(loadConfig(env));
  try {
    return await work(db.prisma);
  } finally {
    await db.close();
  }
}

e2e(
  "storage reservations: upload slots and crashes",
  (server, stack) => {
    const { prisma, workspace } = reservationHelpers(server);

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

      it("the plan's number of uploads run at once; one more is 429 with Retry-After; a finished one makes room", {
        timeout: 60_000,
      }, async () => {
        const { tenant, api, bucket } = await workspace("free");
        const limit = PLAN_LIMITS.free.concurrent_uploads;
        expect(limit).toBe(4);
        const running = (count: number) =>
          eventually(
            () => ledger(prisma(), tenant.workspaceId),
            (state) => state.reservations.length === count,
          );

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
          expectError(
            await rawUpload(server().api, tenant.key, bucket, QUOTA),
            403,
            "permission_error",
            "storage_quota_exceeded",
          );
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
        await eventually(
          () => ledger(prisma(), a.tenant.workspaceId),
          (state) => state.reservations.length === limit,
        );
        busy(await rawUpload(server().api, a.tenant.key, a.bucket), limit);
        expect((await rawUpload(server().api, b.tenant.key, b.bucket)).status).toBe(201);
        for (const upload of held) expect((await upload.finish()).status).toBe(201);
      });

      const sharedSlots =
        "with Redis the slots are shared by the processes: two here, two in another process, the fifth refused in both";
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

    const crash =
      "a server killed mid-upload leaves its reservation; after a restart the sweep releases it and its partial bytes";
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
        const written = (files: { path: string; size: number }[]) =>
          files.some((file) => file.path.endsWith(".tmp") && file.size >= 300_000);
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
        const landed = await eventually(
          () => probe(restarted),
          (res) => res.status !== 403,
          30_000,
        );
        expect(landed.status, JSON.stringify(landed.body)).toBe(201);
        expect(await filesUnder(objects)).toEqual([expect.objectContaining({ size: 200_000 })]);
        expect(child.stderr()).not.toMatch(/"level":"error"/);
        await child.stop();
        child = undefined;
        expect(await withDatabase(env, (db) => ledger(db, tenant.workspaceId))).toEqual({
          used: 200_000,
          reserved: 0,
          reservations: [],
        });
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
    expect(() => lease({ ...production, KONTOR_UPLOAD_LEASE_MS: "1000" })).toThrow(
      /at least 10000 in production/,
    );
    expect(lease({ ...production, KONTOR_UPLOAD_LEASE_MS: "30000" })).toBe(30_000);
  });
});
