import { readdirSync, readFileSync } from 'node:fs';

/** One process of a container, as this host's /proc shows it. */
export interface ContainerProcess {
  readonly pid: number;
  readonly ppid: number;
  /** Whether its environment carries the exec's mark; undefined when this process may not read it (EACCES). */
  readonly marked: boolean | undefined;
}

/**
 * The live processes on this host that belong to one container (their cgroup names
 * its id), each with whether it carries `mark` (`CALLWIRE_EXEC=<token>`) in the
 * environment it was started with. The mark finds an exec's processes however they
 * re-parent (a double fork lands on the container's PID 1); the cgroup keeps the
 * search inside the container, and a pid of another pid namespace that happens to
 * name a host process is never taken for the container's. Zombies are left out:
 * they are dead already and take no signal.
 */
export function containerProcesses(containerId: string, mark: string): ContainerProcess[] {
  const found: ContainerProcess[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    const cgroup = readOrUndefined(`/proc/${entry}/cgroup`);
    if (cgroup === undefined || !cgroup.includes(containerId)) continue;
    const stat = readOrUndefined(`/proc/${entry}/stat`);
    if (stat === undefined) continue; // exited while we looked
    // "pid (comm) state ppid …": comm may hold spaces and parentheses.
    const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (state === 'Z' || state === 'X') continue;
    found.push({ pid, ppid: Number(ppid), marked: carries(pid, mark) });
  }
  return found;
}

/** `root` and its descendants among `processes`, root first; empty when root is not among them. */
export function descendants(processes: readonly ContainerProcess[], root: number): number[] {
  const children = new Map<number, number[]>();
  for (const p of processes) {
    const siblings = children.get(p.ppid);
    if (siblings) siblings.push(p.pid);
    else children.set(p.ppid, [p.pid]);
  }
  if (!processes.some((p) => p.pid === root)) return [];
  const tree: number[] = [];
  const visit = (pid: number): void => {
    tree.push(pid);
    for (const child of children.get(pid) ?? []) visit(child);
  };
  visit(root);
  return tree;
}

function carries(pid: number, mark: string): boolean | undefined {
  try {
    return readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').includes(mark);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === 'EACCES' || code === 'EPERM' ? undefined : false;
  }
}

function readOrUndefined(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/**
 * Signals each pid (SIGKILL unless told). Returns those this process may not signal
 * (EPERM: the server is not root) and those that could not be found (ESRCH before
 * we even tried means another pid namespace; after, simply gone), for the caller
 * to escalate.
 */
export function signalAll(pids: readonly number[], signal: NodeJS.Signals = 'SIGKILL'): { denied: number[]; missing: number[] } {
  const denied: number[] = [];
  const missing: number[] = [];
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EPERM') denied.push(pid);
      else missing.push(pid);
    }
  }
  return { denied, missing };
}

/**
 * The pid a host process has inside its own (innermost) pid namespace, from the
 * `NSpid` line of /proc/<pid>/status; undefined when it is gone or unreadable.
 * The engine runs `kill` inside the container with that pid.
 */
export function innermostPid(hostPid: number): number | undefined {
  let status: string;
  try {
    status = readFileSync(`/proc/${hostPid}/status`, 'utf8');
  } catch {
    return undefined;
  }
  const line = /^NSpid:\s*(.+)$/m.exec(status)?.[1];
  const last = line?.trim().split(/\s+/).pop();
  return last === undefined ? undefined : Number(last);
}
