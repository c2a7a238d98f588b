import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { readdir, stat } from "node:fs/promises";
import { type ClientRequest, request as httpRequest } from "node:http";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { ulid } from "ulid";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "../../../schema/lib/ids.ts";
import { LocalByteStore } from "../../../server/storage/local-store.ts";
import { SWEEP_GRACE_MS, sweepUnreferencedBytes } from "../../../server/storage/sweep.ts";
import { type ChildServer, startChildServer } from "../../support/child-server.ts";
import { answerOf, raw, rest } from "../../support/http.ts";
import { checkAgainstOpenApi } from "../../support/openapi-check.ts";
import { eventually } from "../../support/receiver.ts";
import { mb, sampleRss, vmOf } from "../../support/rss.ts";
import { provisionStack, type Tenant, tenantIn } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";

const MiB = 1024 * 1024;

/** Every file below `dir` (recursively), as paths relative to it; [] when it does not exist. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(
    (error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT") return [];
      throw error;
    },
  );
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath ?? entry.path, entry.name).slice(dir.length + 1));
}

const written = (req: ClientRequest, chunk: Buffer) =>
  new Promise<void>((resolve, reject) => req.write(chunk, (error) => (error ? reject(error) : resolve())));

e2e("storage streaming", (server) => {
  let tenant: Tenant;
  let api: ReturnType<typeof rest>;
  let bucket: string;
  const objectsDir = () => join(server().config.dataDir, "objects");

  beforeAll(async () => {
    tenant = await server().tenant();
    api = rest(server().api, tenant.key);
    const made = await api.post("/buckets", { name: "streaming" });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    bucket = made.body.id;
  });

  /** This workspace's files on disk: its directories hold both finished objects and temp files. */
  const workspaceFiles = async (workspaceId = tenant.workspaceId) =>
    (await filesUnder(objectsDir())).filter((path) => path.split("/").includes(workspaceId.toLowerCase()));

  async function state() {
    const usage = (await api.get("/storage")).body;
    const rows = await server().running.db.prisma.storedObject.findMany({
      where: { workspaceId: tenant.workspaceId },
      select: { id: true },
    });
    const keys = (await new LocalByteStore(objectsDir()).list(`${tenant.workspaceId.toLowerCase()}/`)).keys;
    return {
      used_bytes: usage.used_bytes,
      object_count: usage.object_count,
      rows: rows.map((row) => row.id).sort(),
      keys: keys.sort(),
      files: (await workspaceFiles()).sort(),
    };
  }

  describe("an upload whose client goes away halfway", () => {
    const declared = 8 * MiB;
    const chunk = randomBytes(256 * 1024);

    /** Sends half of a body, then waits until the server is writing it to a temp file of the workspace. */
    async function halfway(write: (bytes: Buffer) => Promise<void>, before: string[]) {
      for (let sent = 0; sent < declared / 2; sent += chunk.length) await write(chunk);
      const temp = await eventually(
        async () => {
          for (const path of (await workspaceFiles()).filter((p) => !before.includes(p))) {
            const size = await stat(join(objectsDir(), path)).then(
              (s) => s.size,
              () => 0,
            );
            if (path.split("/").at(-1)!.startsWith(".") && size > 0) return path;
          }
          return null;
        },
        (path) => path !== null,
      );
      expect(temp, "a temp file being written for the upload").not.toBeNull();
    }

    async function expectNothingLeft(before: Awaited<ReturnType<typeof state>>) {
      // The server notices the hang-up on its own time: wait until the temp file is gone.
      const files = await eventually(
        () => workspaceFiles(),
        (list) => list.length === before.files.length,
      );
      expect(files.sort()).toEqual(before.files);
      expect(await state()).toEqual(before);
      // No temp file anywhere in the store.
      expect(
        (await filesUnder(objectsDir())).filter((path) => path.split("/").at(-1)!.startsWith(".")),
      ).toEqual([]);
      // And the server keeps serving: the same upload, complete this time, lands.
      const again = await raw(`${server().api}/buckets/${bucket}/objects?file_name=again.bin`, {
        method: "POST",
        headers: { authorization: `Bearer ${tenant.key}`, "content-type": "application/octet-stream" },
        body: chunk,
      });
      expect(again.status, again.text).toBe(201);
      expect(again.json).toMatchObject({
        size_bytes: chunk.length,
        sha256: createHash("sha256").update(chunk).digest("hex"),
      });
      const deleted = await api.delete(`/objects/${again.json.id}`);
      expect(deleted.status).toBe(200);
      expect(await state()).toEqual(before);
    }

    it("with a declared Content-Length, the socket destroyed: no row, no bytes, no temp file, quota untouched", async () => {
      const before = await state();
      const req = httpRequest(`${server().api}/buckets/${bucket}/objects?file_name=half.bin`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${tenant.key}`,
          "content-type": "application/octet-stream",
          "content-length": String(declared),
        },
      });
      let answered = false;
      req.on("response", () => (answered = true));
      req.on("error", () => {}); // the hang-up is ours
      await halfway((bytes) => written(req, bytes), before.files);
      req.destroy();
      expect(answered).toBe(false);
      await expectNothingLeft(before);
    });

    it("chunked, the socket destroyed before the last chunk: nothing stored either", async () => {
      const before = await state();
      const req = httpRequest(`${server().api}/buckets/${bucket}/objects?file_name=half-chunked.bin`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${tenant.key}`,
          "content-type": "application/octet-stream",
          "transfer-encoding": "chunked",
        },
      });
      req.on("error", () => {}); // the hang-up is ours
      await halfway((bytes) => written(req, bytes), before.files);
      req.destroy();
      await expectNothingLeft(before);
    });

    it("with a declared Content-Length, the client ends its side early (FIN, not a reset): nothing stored", async () => {
      const before = await state();
      const { port, hostname } = new URL(server().url);
      const socket = connect({ port: Number(port), host: hostname === "localhost" ? "127.0.0.1" : hostname });
      socket.on("error", () => {});
      let reply = "";
      socket.on("data", (data: Buffer) => (reply += data.toString("latin1")));
      const closed = new Promise<void>((resolve) => socket.on("close", () => resolve()));
      await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
      const head =
        `POST /v1/buckets/${bucket}/objects?file_name=fin.bin HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${tenant.key}\r\n` +
        `Content-Type: application/octet-stream\r\nContent-Length: ${declared}\r\n\r\n`;
      await new Promise<void>((resolve, reject) =>
        socket.write(head, (error) => (error ? reject(error) : resolve())),
      );
      await halfway(
        (bytes) =>
          new Promise<void>((resolve, reject) =>
            socket.write(bytes, (error) => (error ? reject(error) : resolve())),
          ),
        before.files,
      );
      socket.end(); // half-close: the server has read what it will ever get
      // The server answers and closes the connection.
      await closed;
      // A client error (the body is short of its length), never a success.
      expect(reply, reply).toMatch(/^HTTP\/1\.1 400 /);
      const error = JSON.parse(reply.slice(reply.indexOf("\r\n\r\n") + 4)).error;
      expect(error.type).toBe("invalid_request_error");
      expect(["upload_incomplete", "bad_request"]).toContain(error.code);
      await expectNothingLeft(before);
    });
  });

  describe("the sweep of bytes no row refers to", () => {
    let dir: string;
    beforeAll(() => {
      dir = mkdtempSync(join(tmpdir(), "kontor-sweep-"));
    });
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    const keyAt = (workspaceId: string, time: number) => `${workspaceId}/obj_${ulid(time)}`.toLowerCase();

    it("deletes unreferenced Kontor keys older than the grace; keeps referenced, young and foreign keys", {
      timeout: 60_000,
    }, async () => {
      const store = new LocalByteStore(join(dir, "a"));
      const prisma = server().running.db.prisma;
      const put = (key: string) =>
        store.put(key, Readable.from([Buffer.from(key)]), {
          maxBytes: 1_000,
          contentType: "application/octet-stream",
        });

      // Two objects uploaded for real: their rows reference their keys, which the sweep store holds too.
      const referenced: string[] = [];
      for (const name of ["kept-1.txt", "kept-2.txt"]) {
        const up = await raw(`${server().api}/buckets/${bucket}/objects?file_name=${name}`, {
          method: "POST",
          headers: { authorization: `Bearer ${tenant.key}`, "content-type": "text/plain" },
          body: name,
        });
        expect(up.status, up.text).toBe(201);
        const row = await prisma.storedObject.findUniqueOrThrow({ where: { id: up.json.id } });
        expect(row.storeKey).toBe(`${tenant.workspaceId}/${up.json.id}`.toLowerCase());
        referenced.push(row.storeKey);
      }

      const grace = 60 * 60 * 1000;
      const now = Date.now() + 2 * grace; // the real uploads above are older than the grace
      const cutoff = now - grace;
      const ws = tenant.workspaceId;
      const goneWorkspace = newId("workspace"); // a deleted workspace's leftovers
      const old = [
        keyAt(ws, Date.now() - 5_000),
        keyAt(ws, cutoff - 1), // one millisecond past the grace
        keyAt(goneWorkspace, Date.now() - 3 * 24 * 3600 * 1000),
        keyAt(goneWorkspace, 1_000),
      ];
      const young = [keyAt(ws, cutoff), keyAt(ws, now - 1_000), keyAt(ws, now + 60_000)];
      const someUlid = ulid(Date.now() - 10 * grace).toLowerCase();
      const foreign = [
        "backups/2026/db-dump",
        `${ws.toLowerCase()}/notes`,
        `${ws.toLowerCase()}/obj_${someUlid}/thumbnail`,
        `tmp/${ws.toLowerCase()}/obj_${someUlid}`,
        `obj_${someUlid}`,
        `${ws.toLowerCase()}/file_${someUlid}`,
        `${ws.toLowerCase()}/obj_${someUlid.slice(1)}`, // 25 characters
        `${ws.toLowerCase()}/obj_8zzzzzzzzzzzzzzzzzzzzzzzzz`, // not a time a ULID can hold
        `${ws.toLowerCase()}/obj_0uzzzzzzzzzzzzzzzzzzzzzzzz`, // U is not in the ULID alphabet
        `ws_${someUlid}x/obj_${someUlid}`,
      ];
      // Enough old orphans to span several of the sweep's pages (500 keys each).
      const many = Array.from({ length: 490 }, (_, i) => keyAt(goneWorkspace, Date.now() - 1_000 * (i + 10)));
      for (const key of [...referenced, ...old, ...young, ...foreign, ...many]) await put(key);
      const all = [...referenced, ...old, ...young, ...foreign, ...many];
      expect(new Set(all).size).toBe(all.length);

      const result = await sweepUnreferencedBytes(prisma, store, { graceMs: grace, now });
      expect(result).toEqual({ checked: all.length, deleted: old.length + many.length });
      const left = [];
      for (let cursor: string | null | undefined = undefined; cursor !== null; ) {
        const page: { keys: string[]; cursor: string | null } = await store.list("", { cursor, limit: 400 });
        left.push(...page.keys);
        cursor = page.cursor;
      }
      expect(left.sort()).toEqual([...referenced, ...young, ...foreign].sort());
      for (const key of [...old, ...many.slice(0, 5)]) expect(await store.exists(key), key).toBe(false);
      // The bytes kept are untouched.
      for (const key of [...referenced, ...foreign]) {
        const { body } = await store.get(key);
        const chunks: Buffer[] = [];
        for await (const piece of body) chunks.push(piece as Buffer);
        expect(Buffer.concat(chunks).toString(), key).toBe(key);
      }

      // Nothing more to do on a second pass.
      expect(await sweepUnreferencedBytes(prisma, store, { graceMs: grace, now })).toEqual({
        checked: left.length,
        deleted: 0,
      });
    });

    it("without options, the grace is a day from now; a deleted row's bytes go once they are old", async () => {
      const store = new LocalByteStore(join(dir, "b"));
      const prisma = server().running.db.prisma;
      const put = (key: string) =>
        store.put(key, Readable.from([Buffer.from("x")]), { maxBytes: 1, contentType: "text/plain" });
      const ws = tenant.workspaceId;
      const hourOld = keyAt(ws, Date.now() - 3_600_000);
      const dayAndMinuteOld = keyAt(ws, Date.now() - SWEEP_GRACE_MS - 60_000);
      expect(SWEEP_GRACE_MS).toBe(24 * 3_600_000);

      // An object whose row is then deleted through the API: its key has no row any more.
      const up = await raw(`${server().api}/buckets/${bucket}/objects?file_name=deleted.txt`, {
        method: "POST",
        headers: { authorization: `Bearer ${tenant.key}`, "content-type": "text/plain" },
        body: "soon gone",
      });
      expect(up.status, up.text).toBe(201);
      const deletedKey = `${ws}/${up.json.id}`.toLowerCase();
      expect((await api.delete(`/objects/${up.json.id}`)).status).toBe(200);
      for (const key of [hourOld, dayAndMinuteOld, deletedKey]) await put(key);

      expect(await sweepUnreferencedBytes(prisma, store)).toEqual({ checked: 3, deleted: 1 });
      expect((await store.list("")).keys.sort()).toEqual([deletedKey, hourOld].sort());
      // A day later the rest is old enough.
      expect(
        await sweepUnreferencedBytes(prisma, store, { now: Date.now() + SWEEP_GRACE_MS + 60_000 }),
      ).toEqual({ checked: 2, deleted: 2 });
      expect((await store.list("")).keys).toEqual([]);
    });
  });
});

/** Resets the kernel's VmHWM (peak RSS) of a process to its current RSS; false where not allowed. */
function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, "5");
    return true;
  } catch {
    return false;
  }
}

describe("a 200 MiB raw upload to a server in its own process [embedded]", () => {
  let scratch: Awaited<ReturnType<typeof provisionStack>>;
  let child: ChildServer | undefined;
  beforeAll(async () => {
    scratch = await provisionStack("embedded");
  });
  afterAll(async () => {
    await child?.stop();
    await scratch?.drop();
  });

  it("is streamed: the server's RSS stays far below the upload; size and sha256 match, also on a streamed download", {
    timeout: 300_000,
  }, async () => {
    const env = { ...scratch.env, KONTOR_ENV: "development" };
    const { key } = await tenantIn(env, "Streaming");
    child = await startChildServer(env);
    const pid = child.child.pid!;
    const api = rest(child.api, key);
    const made = await api.post("/buckets", { name: "big-files" });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    const bucket = made.body.id;
    const url = `${child.api}/buckets/${bucket}/objects?file_name=big.bin`;

    /** Streams `chunks` MiB, each the same buffer with its index written in front; answers the upload's answer and the sha256 sent. */
    async function send(chunks: number) {
      const buffer = randomBytes(MiB);
      const hash = createHash("sha256");
      const req = httpRequest(url, {
        method: "POST",
        headers: {
          authorization: `Bearer ${key}`,
          "content-type": "application/octet-stream",
          "content-length": String(chunks * MiB),
        },
      });
      const answer = answerOf(req);
      for (let i = 0; i < chunks; i++) {
        buffer.writeUInt32BE(i, 0);
        hash.update(buffer);
        // The next chunk reuses the buffer: wait until this one has been handed to the socket.
        await written(req, buffer);
      }
      req.end();
      const res = await answer;
      await checkAgainstOpenApi("POST", url, res);
      return { res, sha256: hash.digest("hex") };
    }

    // Warm-up: the upload path's code is loaded and compiled before the baseline is taken.
    const warm = await send(8);
    expect(warm.res.status, warm.res.text).toBe(201);
    expect((await api.delete(`/objects/${JSON.parse(warm.res.text).id}`)).status).toBe(200);

    const size = 200 * MiB;
    const baseline = vmOf(pid, "VmRSS");
    const peakReset = resetPeak(pid);
    const sampling = sampleRss(pid, 3);
    const started = Date.now();
    const { res, sha256 } = await send(200);
    const uploadMs = Date.now() - started;
    const { peak, samples } = sampling.stop();
    const hwm = vmOf(pid, "VmHWM");
    expect(res.status, res.text).toBe(201);
    const body = JSON.parse(res.text);
    expect(body).toMatchObject({
      object: "file",
      file_name: "big.bin",
      content_type: "application/octet-stream",
      size_bytes: size,
      sha256,
    });

    const growth = peak - baseline;
    const hwmGrowth = hwm - baseline;
    console.info(
      `200 MiB upload: ${uploadMs} ms (${(size / MiB / (uploadMs / 1000)).toFixed(0)} MiB/s); child VmRSS baseline ${mb(baseline)}, ` +
        `sampled peak ${mb(peak)} (+${mb(growth)}, ${samples} samples)` +
        (peakReset ? `, VmHWM ${mb(hwm)} (+${mb(hwmGrowth)})` : ", VmHWM not resettable"),
    );
    expect(samples).toBeGreaterThan(10);
    expect(growth, "peak RSS growth during the upload").toBeLessThan(64 * MiB);
    // The kernel's own peak catches what sampling between two reads could miss.
    if (peakReset) expect(hwmGrowth, "VmHWM growth during the upload").toBeLessThan(64 * MiB);

    const meta = await api.get(`/objects/${body.id}`);
    expect(meta.status).toBe(200);
    expect(meta.body).toMatchObject({ id: body.id, size_bytes: size, sha256 });
    const head = await raw(`${child.api}/objects/${body.id}/content`, {
      method: "HEAD",
      headers: { authorization: `Bearer ${key}` },
    });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-length")).toBe(String(size));
    expect(head.headers.get("etag")).toBe(`"${sha256}"`);

    // Downloaded as a stream, hashed as it arrives; the server's RSS watched again.
    const downloadBaseline = vmOf(pid, "VmRSS");
    resetPeak(pid);
    const watching = sampleRss(pid, 3);
    const downloadStarted = Date.now();
    const download = await fetch(`${child.api}/objects/${body.id}/content`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(download.status).toBe(200);
    expect(download.headers.get("content-length")).toBe(String(size));
    const received = createHash("sha256");
    let length = 0;
    for await (const piece of download.body as unknown as AsyncIterable<Uint8Array>) {
      received.update(piece);
      length += piece.byteLength;
    }
    const downloadMs = Date.now() - downloadStarted;
    const watched = watching.stop();
    const downloadHwm = vmOf(pid, "VmHWM");
    console.info(
      `200 MiB download: ${downloadMs} ms; child VmRSS baseline ${mb(downloadBaseline)}, sampled peak ${mb(watched.peak)} ` +
        `(+${mb(watched.peak - downloadBaseline)}, ${watched.samples} samples)` +
        (peakReset ? `, VmHWM ${mb(downloadHwm)} (+${mb(downloadHwm - downloadBaseline)})` : ""),
    );
    expect(length).toBe(size);
    expect(received.digest("hex")).toBe(sha256);
    expect(watched.peak - downloadBaseline, "peak RSS growth during the download").toBeLessThan(64 * MiB);
    expect(child.stderr()).not.toMatch(/"level":"error"/);
  });
});
