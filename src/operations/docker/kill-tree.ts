import { readdirSync, readFileSync } from 'node:fs';

/**
 * A process and all its descendants on this host, root first. Docker cannot kill
 * an exec by id, but its inspect gives the exec's host pid; the tree matters
 * because `sh -c 'a; b'` runs its commands as children.
 */
export function processTree(rootPid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // exited while we looked
    }
    // "pid (comm) state ppid …": comm may hold spaces and parentheses.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    const list = children.get(ppid) ?? [];
    list.push(Number(entry));
    children.set(ppid, list);
  }
  const tree: number[] = [];
  const visit = (pid: number): void => {
    tree.push(pid);
    for (const child of children.get(pid) ?? []) visit(child);
  };
  visit(rootPid);
  return tree;
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
