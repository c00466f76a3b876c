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

/** CPU of this process (the bench driver, and whatever runs in it) in ms. */
export function selfCpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

export interface CpuUse {
  /** The named parts' sum, ms. */
  system_ms: number;
  /** This process, ms. */
  driver_ms: number;
  parts_ms: Record<string, number>;
}

/**
 * Measures the CPU of named groups of processes (each `() => pids`, listed again at the end so
 * that processes started meanwhile count) and of this process, from now to `stop()`.
 */
export function cpuMeter(parts: Record<string, () => (number | undefined | null)[]>): { stop(): CpuUse } {
  const list = (f: () => (number | undefined | null)[]) =>
    f().filter((p): p is number => typeof p === 'number');
  const start = new Map<number, number>();
  const startPids = Object.fromEntries(Object.entries(parts).map(([name, f]) => [name, list(f)]));
  for (const pids of Object.values(startPids)) for (const p of pids) start.set(p, processCpuMs(p));
  const self = selfCpuMs();
  return {
    stop() {
      const parts_ms: Record<string, number> = {};
      for (const [name, f] of Object.entries(parts)) {
        let total = 0;
        for (const p of new Set([...(startPids[name] ?? []), ...list(f)]))
          total += processCpuMs(p) - (start.get(p) ?? 0);
        parts_ms[name] = Math.round(total);
      }
      const system_ms = Object.values(parts_ms).reduce((a, b) => a + b, 0);
      return { system_ms, driver_ms: Math.round(selfCpuMs() - self), parts_ms };
    },
  };
}
