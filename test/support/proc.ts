import { readFileSync } from 'node:fs';

/** What Linux's /proc says of a process, for tests that watch the real ones. */

/** Resident memory in bytes. */
export function rssOf(pid: number): number {
  return Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) * 1024;
}

/** Samples a process's RSS every 50 ms until stopped: `stop()` gives its peak growth over the start. */
export function rssGrowthSampler(pid: number): { stop(): number } {
  const before = rssOf(pid);
  let peak = before;
  const timer = setInterval(() => (peak = Math.max(peak, rssOf(pid))), 50);
  return {
    stop: () => {
      clearInterval(timer);
      return Math.max(peak, rssOf(pid)) - before;
    },
  };
}

/**
 * A process's peak resident set size as the kernel keeps it (VmHWM), read every 100 ms
 * until `ended`: the result is the last reading, taken at most 100 ms before the exit.
 */
export function peakRssSampler(pid: number, ended: Promise<unknown>): () => number {
  let peak = 0;
  const timer = setInterval(() => {
    try {
      const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
      if (m) peak = Math.max(peak, Number(m[1]) * 1024);
    } catch {
      // exited
    }
  }, 100);
  void ended.then(() => clearInterval(timer));
  return () => peak;
}

/** Direct children. Throws when the process is gone. */
export function childPids(pid: number): number[] {
  return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
}

/** Its argv. */
export function commandLine(pid: number): string[] {
  return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
}

/** Whether it still runs: a zombie (ended, waiting for a parent that may never reap it) does not. */
export function isRunning(pid: number): boolean {
  try {
    // The state follows the command name, which is in parentheses and may hold spaces.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}
