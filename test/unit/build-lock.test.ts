import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { takeBuildLock } from "../../scripts/build-lock.mjs";

/**
 * docs/development.md#the-production-build: the server's and the dashboard's builds take one lock
 * each (scripts/build-lock.mjs), so builds started together run one at a time, and a lock left by a
 * build that died never holds up the next start.
 */
describe("build lock", () => {
  const dirs: string[] = [];
  const lockIn = () => {
    const dir = mkdtempSync(join(tmpdir(), "kontor-build-lock-"));
    dirs.push(dir);
    return join(dir, ".build-lock");
  };
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it("is taken with this process's pid, and released", async () => {
    const lock = lockIn();
    const release = await takeBuildLock(lock, "test", 1_000);
    expect(readFileSync(join(lock, "pid"), "utf8")).toBe(String(process.pid));
    release();
    expect(existsSync(lock)).toBe(false);
  });

  it("waits for a live owner, then says who holds it", async () => {
    const lock = lockIn();
    mkdirSync(lock);
    writeFileSync(join(lock, "pid"), String(process.pid));
    const started = Date.now();
    await expect(takeBuildLock(lock, "test", 300)).rejects.toThrow(
      `test: ${lock} is held by another build for too long`,
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
    expect(readFileSync(join(lock, "pid"), "utf8")).toBe(String(process.pid));
  });

  it("goes to the next build once the owner releases it", async () => {
    const lock = lockIn();
    const first = await takeBuildLock(lock, "test", 1_000);
    const second = takeBuildLock(lock, "test", 5_000);
    setTimeout(first, 150);
    const release = await second;
    expect(existsSync(lock)).toBe(true);
    release();
  });

  it("takes over a lock whose owner is gone (a Ctrl-C during a start)", async () => {
    const lock = lockIn();
    mkdirSync(lock);
    // A pid no process has: the kernel's limit is far below it.
    writeFileSync(join(lock, "pid"), "2147483646");
    const release = await takeBuildLock(lock, "test", 0);
    expect(readFileSync(join(lock, "pid"), "utf8")).toBe(String(process.pid));
    release();
  });

  it("takes over a lock older than five minutes, whoever holds it", async () => {
    const lock = lockIn();
    mkdirSync(lock);
    writeFileSync(join(lock, "pid"), String(process.pid));
    const old = new Date(Date.now() - 301_000);
    utimesSync(lock, old, old);
    const release = await takeBuildLock(lock, "test", 0);
    expect(existsSync(join(lock, "pid"))).toBe(true);
    release();
  });
});
