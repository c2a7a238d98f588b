import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";

/** A lock older than this was left by a build that died, whoever holds it. */
const STALE_MS = 300_000;

/** True when the pid written in the lock names no process (its owner was stopped: a Ctrl-C). */
function ownerGone(lock) {
  try {
    process.kill(Number(readFileSync(`${lock}/pid`, "utf8")), 0);
    return false;
  } catch (error) {
    // No pid written yet (the owner is between mkdir and write) reads as ENOENT: still held.
    return error.code === "ESRCH";
  }
}

/**
 * One build at a time (`npm start` in two terminals, test files started together): takes the lock
 * directory `lock`, holding this process's pid, waiting up to `waitMs` for another build to finish.
 * A lock whose owner is gone, or older than five minutes, was left by a build that died: it is
 * taken over. Resolves with the function that releases it.
 *
 * @example
 * const release = await takeBuildLock("dist/.build-lock", "server", 120_000);
 * try {
 *   build();
 * } finally {
 *   release();
 * }
 */
export async function takeBuildLock(lock, label, waitMs) {
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      mkdirSync(lock);
      writeFileSync(`${lock}/pid`, String(process.pid));
      return () => rmSync(lock, { recursive: true, force: true });
    } catch (error) {
      if (error.code !== "EEXIST") throw error;
      const age = Date.now() - (statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
      if (ownerGone(lock) || age > STALE_MS) rmSync(lock, { recursive: true, force: true });
      else if (Date.now() > deadline)
        throw new Error(`${label}: ${lock} is held by another build for too long`);
      else await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}
