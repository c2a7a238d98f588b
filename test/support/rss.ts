import { readFileSync } from "node:fs";

/** A memory line of /proc/<pid>/status (VmRSS: resident now, VmHWM: its peak), in bytes. */
export function vmOf(pid: number, field: "VmRSS" | "VmHWM"): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8")
    .split("\n")
    .find((l) => l.startsWith(`${field}:`));
  if (!line) throw new Error(`no ${field} for ${pid}`);
  return Number(/(\d+)\s*kB/.exec(line)![1]) * 1024;
}

/** A process's resident set (VmRSS), in bytes. */
export const rssOf = (pid: number) => vmOf(pid, "VmRSS");

/** Samples a process's VmRSS every `everyMs` until stopped; the peak seen and the number of samples. */
export function sampleRss(pid: number, everyMs = 10) {
  let peak = 0;
  let samples = 0;
  const take = () => {
    try {
      peak = Math.max(peak, rssOf(pid));
      samples++;
    } catch {
      // the process is gone: the test fails elsewhere
    }
  };
  take();
  const timer = setInterval(take, everyMs);
  return {
    stop() {
      clearInterval(timer);
      take();
      return { peak, samples };
    },
  };
}

/** `bytes` as megabytes, for messages. */
export const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;
