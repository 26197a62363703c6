import { readdirSync, readFileSync } from 'node:fs';

/**
 * SIGKILLs a process and all its descendants on this host. Docker cannot kill an
 * exec by id, but its inspect gives the exec's host pid; the tree matters because
 * `sh -c 'a; b'` runs its commands as children.
 */
export function killProcessTree(rootPid: number): number[] {
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
  for (const pid of tree) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // ESRCH: already gone.
    }
  }
  return tree;
}
