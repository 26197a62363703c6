import { lstatSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// The HTTP/3 edge's private directory (its config, the certificate's key, the bridge's
// socket) is named after the server's pid. The edge removes it when the server is gone
// (edge/parent.ts); one that could not (killed with its server) leaves it behind, and
// the next server removes it.

const NAME = /^callwire-edge-(\d+)-/;

/** A fresh private directory for this process's edge, after removing those of servers that are gone. */
export function makeEdgeDir(): string {
  removeOrphanedEdgeDirs();
  return mkdtempSync(join(tmpdir(), `callwire-edge-${process.pid}-`));
}

/** Our own edge directories whose server process no longer exists. */
function removeOrphanedEdgeDirs(): void {
  let names: string[];
  try {
    names = readdirSync(tmpdir());
  } catch {
    return;
  }
  for (const name of names) {
    const pid = Number(NAME.exec(name)?.[1] ?? 0);
    if (pid === 0 || pid === process.pid || isRunning(pid)) continue;
    const path = join(tmpdir(), name);
    try {
      const stat = lstatSync(path);
      // Ours only, and a directory, not a link someone else put there.
      if (!stat.isDirectory() || stat.uid !== process.getuid?.()) continue;
      rmSync(path, { recursive: true, force: true });
    } catch {
      // gone meanwhile, or not ours to remove
    }
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, as another user's.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
