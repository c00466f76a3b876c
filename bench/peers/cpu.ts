/**
 * CPU time of processes, read from /proc (Linux): user + system time of each process, in ms.
 * The peer bench charges each system the CPU of its own processes over a phase, a figure that
 * depends far less on what else the shared machine runs than wall time does. Issue 19.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second of /proc/{pid}/stat times (USER_HZ: 100 on Linux). */
const TICKS_PER_S = 100;

/** User + system CPU time of `pid` in ms, or 0 when it is gone. */
export function processCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces) in parentheses: state is field 3.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_S;
  } catch {
    return 0;
  }
}

/** The pids of the processes whose parent is `pid`, and theirs, recursively. */
export function descendants(pid: number): number[] {
  const parents = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parents.set(ppid, [...(parents.get(ppid) ?? []), Number(name)]);
    } catch {
      // gone while reading
    }
  }
  const out: number[] = [];
  const walk = (p: number) => {
    for (const child of parents.get(p) ?? []) {
      out.push(child);
      walk(child);
    }
  };
  walk(pid);
  return out;
}

/** The first descendant of this process whose command line contains `needle`, or null. */
export function childWhoseCommandHas(needle: string): number | null {
  for (const pid of descendants(process.pid)) {
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').includes(needle)) return pid;
    } catch {
      // gone
    }
  }
  return null;
}

/** CPU of this process (the bench driver, and whatever runs in it) in ms. */
export function selfCpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

/** Sums the CPU of `pids()` (re-listed at the end, so that processes started meanwhile count) and of this process. */
export function cpuMeter(pids: () => number[]): { stop(): { system_ms: number; driver_ms: number } } {
  const startPids = pids();
  const start = new Map(startPids.map((p) => [p, processCpuMs(p)]));
  const self = selfCpuMs();
  return {
    stop() {
      let total = 0;
      for (const p of new Set([...startPids, ...pids()])) total += processCpuMs(p) - (start.get(p) ?? 0);
      return { system_ms: Math.round(total), driver_ms: Math.round(selfCpuMs() - self) };
    },
  };
}
