import { posix } from 'node:path';
import { type Client } from '../../client-node/index.js';
import { isDirectoryMode, isSymlinkMode, archiveGetContract, archiveStatContract, type ArchiveTerminalFrame, type PathStat } from '../../contracts/index.js';
import { ArchiveOrder } from './archive-order.js';
import { CheckedStream } from './checked-stream.js';
import { StagedExtraction } from './extract.js';
import { absoluteLocal, localDestination } from './local-destination.js';
import { placeCopy, rebaseOf, splitDirEntry } from './rules.js';
import { Progress } from './progress.js';
import type { CopyOptions, CopyResult } from './copy-options.js';

/**
 * A path in a container to a local path or to stdout (`-`), as docker cp copies out
 * (docker/cli copyFromContainer): with -L a symlink is copied as what it names, under
 * its own name; the archive is extracted beside the destination and moved in whole.
 * Items out of the contract's order end the copy before they are used.
 */
export async function copyOut(client: Client, container: string, srcPath: string, dst: string | undefined, options: CopyOptions): Promise<CopyResult> {
  let path = srcPath;
  let rebaseName: string | undefined;
  if (options.followLink) {
    const stat = await client.call(archiveStatContract, { containerId: container, path }, options.call).catch(() => undefined);
    if (stat && isSymlinkMode(stat.mode)) {
      const target = stat.linkTarget.startsWith('/') ? stat.linkTarget : posix.join(splitDirEntry(path).dir, stat.linkTarget);
      ({ resolved: path, rebaseName } = rebaseOf(path, target));
    }
  }
  const local = dst === undefined ? undefined : absoluteLocal(dst);
  // A destination that cannot be written is said before a byte is asked for.
  const destination = local === undefined ? undefined : await localDestination(local);
  const checked = new CheckedStream(options.maxBytes);
  const order = ArchiveOrder.get();
  let stat: PathStat | undefined;
  let terminal: ArchiveTerminalFrame | undefined;
  let extraction: StagedExtraction | undefined;
  let progress: Progress | undefined;
  try {
    for await (const received of client.iterate(archiveGetContract, { containerId: container, path }, options.call)) {
      const item = order.next(received);
      if (item.kind === 'stat') {
        stat = item.stat;
        progress = new Progress(options.progress, 'Copying from container', isDirectoryMode(stat.mode) ? undefined : stat.size);
        if (destination) {
          const source = { path, isDir: isDirectoryMode(stat.mode), ...(rebaseName === undefined ? {} : { rebaseName }) };
          extraction = await StagedExtraction.start(splitDirEntry(path).base, placeCopy(source, destination), options.maxBytes);
        }
      } else if (item.kind === 'data') {
        checked.add(item.data);
        progress?.add(item.data.byteLength);
        if (extraction) await extraction.write(item.data);
        else await writeStdout(item.data);
      } else {
        terminal = item.end;
      }
    }
    checked.verify(terminal);
    await extraction?.finish();
  } catch (error) {
    await extraction?.abandon();
    throw error;
  } finally {
    progress?.clear();
  }
  const reported = stat && !isDirectoryMode(stat.mode) ? stat.size : checked.bytes;
  return { contentBytes: reported, transferredBytes: checked.bytes, destination: dst ?? '-' };
}

async function writeStdout(bytes: Uint8Array): Promise<void> {
  if (!process.stdout.write(bytes)) await new Promise((resolve) => process.stdout.once('drain', resolve));
}
