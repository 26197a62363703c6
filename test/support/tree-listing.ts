import { createHash } from 'node:crypto';
import { lstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Every path under `root` (relative), with its type, permission bits, owner, size,
 * link target and content hash: what two copies must agree on, and what any write
 * anywhere under `root` would change. `links`: each file's link count too, so a hard
 * link made to a file under `root` from anywhere shows.
 */
export function treeListing(root: string, options: { owners?: boolean; links?: boolean } = {}): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      const st = lstatSync(path);
      const rel = path.slice(root.length);
      const owner = options.owners ? ` ${st.uid}:${st.gid}` : '';
      const links = options.links ? ` nlink=${st.nlink}` : '';
      if (st.isSymbolicLink()) out.push(`${rel} link -> ${readlinkSync(path)}${owner}`);
      else if (st.isDirectory()) {
        out.push(`${rel} dir ${(st.mode & 0o7777).toString(8)}${owner}`);
        walk(path);
      } else if (st.isFile()) out.push(`${rel} file ${(st.mode & 0o7777).toString(8)}${owner}${links} ${st.size} ${createHash('sha256').update(readFileSync(path)).digest('hex').slice(0, 16)}`);
      else out.push(`${rel} other ${(st.mode & 0o7777).toString(8)}${owner}${links}`);
    }
  };
  walk(root);
  return out;
}
