import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

/**
 * What the bench reads about processes from Linux's /proc: CPU time (utime + stime of
 * /proc/<pid>/stat), resident memory (VmRSS, VmHWM of /proc/<pid>/status), process trees and the
 * machine's CPU (/proc/stat). Every function answers null (or empty) where /proc is not there, so
 * the bench still runs elsewhere and reports "n/a".
 */

let ticks: number | undefined;
/** Clock ticks per second of /proc's CPU times (getconf CLK_TCK, nearly always 100). */
function clockTicks(): number {
  if (ticks === undefined) {
    try {
      ticks = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
    } catch {
      ticks = 100;
    }
  }
  return ticks;
}

interface Stat {
  ppid: number;
  /** User + system CPU time so far, in ms. */
  cpuMs: number;
  comm: string;
}

function stat(pid: number): Stat | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    // comm is in parentheses and may hold spaces or parentheses itself: split after the last ')'.
    const close = text.lastIndexOf(")");
    const comm = text.slice(text.indexOf("(") + 1, close);
    const fields = text.slice(close + 2).split(" ");
    // fields[0] is field 3 (state): ppid is field 4, utime 14, stime 15.
    const utime = Number(fields[11]);
    const stime = Number(fields[12]);
    return { ppid: Number(fields[1]), cpuMs: ((utime + stime) * 1000) / clockTicks(), comm };
  } catch {
    return null;
  }
}

function allPids(): number[] {
  try {
    return readdirSync("/proc")
      .filter((name) => /^\d+$/.test(name))
      .map(Number);
  } catch {
    return [];
  }
}

/** `pid` and every process below it (a cluster's workers, their children). */
export function processTree(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const p of allPids()) {
    const s = stat(p);
    if (!s) continue;
    const list = children.get(s.ppid) ?? [];
    list.push(p);
    children.set(s.ppid, list);
  }
  const tree: number[] = [];
  const queue = [pid];
  while (queue.length) {
    const p = queue.shift()!;
    if (!stat(p)) continue;
    tree.push(p);
    queue.push(...(children.get(p) ?? []));
  }
  return tree;
}

/** Processes whose command name (comm) is `name`, e.g. "postgres" or "redis-server". */
export function processesNamed(name: string): number[] {
  return allPids().filter((p) => stat(p)?.comm === name);
}

/** CPU time (ms) of each process. */
export function cpuTimes(pids: number[]): Map<number, number> {
  const times = new Map<number, number>();
  for (const pid of pids) {
    const s = stat(pid);
    if (s) times.set(pid, s.cpuMs);
  }
  return times;
}

/** CPU ms used between two readings of the same processes; one that appeared in between counts whole. */
export function cpuDelta(before: Map<number, number>, after: Map<number, number>): number {
  let total = 0;
  for (const [pid, ms] of after) total += ms - (before.get(pid) ?? 0);
  return total;
}

/** VmRSS (now) and VmHWM (peak) of a process, in MB; null when it is gone or /proc is missing. */
export function memory(pid: number): { rssMb: number; peakMb: number } | null {
  try {
    const text = readFileSync(`/proc/${pid}/status`, "utf8");
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? NaN);
    return { rssMb: kb("VmRSS") / 1024, peakMb: kb("VmHWM") / 1024 };
  } catch {
    return null;
  }
}

/** Sum of VmRSS and of VmHWM over a process tree (a cluster's primary and workers), and each process's share. */
export function treeMemory(
  pid: number,
): { rssMb: number; peakMb: number; processes: { pid: number; rssMb: number }[] } | null {
  const processes = processTree(pid)
    .map((p) => ({ pid: p, mem: memory(p) }))
    .filter((p) => p.mem !== null);
  if (!processes.length) return null;
  return {
    rssMb: processes.reduce((a, p) => a + p.mem!.rssMb, 0),
    peakMb: processes.reduce((a, p) => a + p.mem!.peakMb, 0),
    processes: processes.map((p) => ({ pid: p.pid, rssMb: p.mem!.rssMb })),
  };
}

/** The whole machine's CPU (first line of /proc/stat) in ms: busy and total, summed over all cores. */
export function machineCpu(): { busyMs: number; totalMs: number } | null {
  try {
    const line = readFileSync("/proc/stat", "utf8").split("\n")[0]!;
    const [, ...values] = line.trim().split(/\s+/);
    const [user, nice, system, idle, iowait, irq, softirq, steal] = values.map(Number) as number[];
    const busy = user! + nice! + system! + irq! + softirq! + (steal ?? 0);
    const total = busy + idle! + (iowait ?? 0);
    const ms = 1000 / clockTicks();
    return { busyMs: busy * ms, totalMs: total * ms };
  } catch {
    return null;
  }
}
