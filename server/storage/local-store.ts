import { createHash, randomBytes } from "node:crypto";
import { mkdir, open, readdir, rename, rm, stat } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import {
  assertKey,
  assertMaxBytes,
  assertPrefix,
  assertRange,
  type ByteRange,
  type ByteSource,
  type ByteStore,
  type GetResult,
  KeyNotFoundError,
  type KeyPage,
  type ListPage,
  metered,
  type PutOptions,
  type PutResult,
  RangeNotSatisfiableError,
} from "./byte-store.ts";

const FILE_MODE = 0o600;
const DIR_MODE = 0o700;
const DEFAULT_PAGE = 1000;

/**
 * Bytes as files under `root`, fanned out by the first byte of sha256(key) so that no directory
 * grows with the whole store. Writes go to a dot-named temp file beside the target, then rename:
 * keys never contain dots, so listings skip temp files left by a crash.
 */
export class LocalByteStore implements ByteStore {
  constructor(readonly root: string) {}

  async put(key: string, body: ByteSource, options: PutOptions): Promise<PutResult> {
    assertKey(key);
    assertMaxBytes(options.maxBytes);
    const meter = { size: 0, hash: createHash("sha256") };
    const chunks = metered(body, options, meter);
    const target = this.pathOf(key);
    const dir = dirname(target);
    await mkdir(dir, { recursive: true, mode: DIR_MODE });
    const temp = join(dir, `.${basename(target)}.${randomBytes(8).toString("hex")}.tmp`);
    const file = await open(temp, "wx", FILE_MODE);
    let closed = false;
    try {
      for await (const chunk of chunks) {
        let offset = 0;
        while (offset < chunk.length) offset += (await file.write(chunk, offset)).bytesWritten;
      }
      await file.sync();
      await file.close();
      closed = true;
      await rename(temp, target);
    } catch (error) {
      if (!closed) await file.close().catch(() => {});
      await rm(temp, { force: true });
      throw error;
    }
    await syncDirectory(dir);
    return { size: meter.size, sha256: meter.hash.digest("hex") };
  }

  async get(key: string, range?: ByteRange): Promise<GetResult> {
    assertKey(key);
    if (range) assertRange(range);
    // Read through the open handle, so a concurrent delete cannot cut the stream short.
    const file = await open(this.pathOf(key), "r").catch((error: NodeJS.ErrnoException) => {
      throw isMissing(error) ? new KeyNotFoundError(key) : error;
    });
    try {
      const { size: totalSize } = await file.stat();
      if (!range) return { body: file.createReadStream(), size: totalSize, totalSize };
      if (range.start >= totalSize) throw new RangeNotSatisfiableError(range, totalSize);
      const end = Math.min(range.end, totalSize - 1);
      return {
        body: file.createReadStream({ start: range.start, end }),
        size: end - range.start + 1,
        totalSize,
      };
    } catch (error) {
      await file.close().catch(() => {});
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    assertKey(key);
    await rm(this.pathOf(key), { force: true });
  }

  /** The temporary files of puts to `key` (`.<name>.<random>.tmp` beside it), left by a crashed process. */
  async abandon(key: string): Promise<void> {
    assertKey(key);
    const target = this.pathOf(key);
    const prefix = `.${basename(target)}.`;
    for (const name of await readdirOrEmpty(dirname(target))) {
      if (name.startsWith(prefix) && name.endsWith(".tmp"))
        await rm(join(dirname(target), name), { force: true });
    }
  }

  async exists(key: string): Promise<boolean> {
    assertKey(key);
    return stat(this.pathOf(key)).then(
      (s) => s.isFile(),
      (error: NodeJS.ErrnoException) => {
        if (isMissing(error)) return false;
        throw error;
      },
    );
  }

  /** Ordered by (fan-out directory, key); the cursor is the last key returned. */
  async list(prefix: string, page: ListPage = {}): Promise<KeyPage> {
    assertPrefix(prefix);
    const limit = page.limit ?? DEFAULT_PAGE;
    const after = page.cursor ?? null;
    if (after !== null) assertKey(after);
    const fans = (await readdirOrEmpty(this.root)).filter((name) => /^[0-9a-f]{2}$/.test(name)).sort();
    const startFan = after === null ? "" : fanOf(after);
    const keys: string[] = [];
    for (const fan of fans) {
      if (fan < startFan) continue;
      const inFan = (await walk(join(this.root, fan), ""))
        .filter((key) => key.startsWith(prefix) && (fan !== startFan || after === null || key > after))
        .sort();
      for (const key of inFan) {
        keys.push(key);
        if (keys.length === limit) return { keys, cursor: key };
      }
    }
    return { keys, cursor: null };
  }

  private pathOf(key: string): string {
    return join(this.root, fanOf(key), ...key.split("/"));
  }
}

function fanOf(key: string): string {
  return createHash("sha256").update(key).digest("hex").slice(0, 2);
}

async function walk(dir: string, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  for (const entry of await readdirOrEmpty(dir, true)) {
    if (entry.name.startsWith(".")) continue;
    const key = prefix + entry.name;
    if (entry.isDirectory()) keys.push(...(await walk(join(dir, entry.name), `${key}/`)));
    else if (entry.isFile()) keys.push(key);
  }
  return keys;
}

async function readdirOrEmpty(dir: string): Promise<string[]>;
async function readdirOrEmpty(dir: string, withTypes: true): Promise<import("node:fs").Dirent[]>;
async function readdirOrEmpty(dir: string, withTypes = false): Promise<unknown[]> {
  try {
    return withTypes ? await readdir(dir, { withFileTypes: true }) : await readdir(dir);
  } catch (error) {
    if (isMissing(error as NodeJS.ErrnoException)) return [];
    throw error;
  }
}

// Makes the rename durable; some filesystems refuse fsync on a directory, which is not worth failing for.
async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, "r").catch(() => null);
  if (!handle) return;
  await handle.sync().catch(() => {});
  await handle.close().catch(() => {});
}

function isMissing(error: NodeJS.ErrnoException): boolean {
  return error.code === "ENOENT" || error.code === "ENOTDIR";
}
