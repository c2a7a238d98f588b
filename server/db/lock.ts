import { closeSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";

export class DatabaseLockedError extends Error {}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * PGlite is single-process: a second opener would corrupt it. A pid file taken with O_EXCL
 * makes the second process fail fast with a clear message; a stale file (dead pid) is taken over.
 */
export function lockDataDir(path: string): () => void {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, "wx");
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return () => rmSync(path, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const pid = Number(readFileSync(path, "utf8"));
      if (Number.isInteger(pid) && pid > 0 && alive(pid)) {
        throw new DatabaseLockedError(
          `The embedded database is in use by process ${pid} (is the Kontor server running?). ` +
            "Stop that process first, or set DATABASE_URL to use PostgreSQL, which allows many processes.",
        );
      }
      rmSync(path, { force: true });
    }
  }
  throw new DatabaseLockedError(`Could not lock ${path}.`);
}
