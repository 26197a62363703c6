import { stat as localStat } from 'node:fs/promises';
import { posix } from 'node:path';
import { RpcError, type Client } from '../../client-node/index.js';
import { isDirectoryMode, isRegularMode, isSymlinkMode, archivePutContract, archiveStatContract, type ArchiveTerminalFrame, type PathStat } from '../../contracts/index.js';
import { ArchiveOrder } from './archive-order.js';
import { CheckedStream } from './checked-stream.js';
import { localSource, packSource } from './pack.js';
import { CopyError, placeCopy, splitDirEntry, type DestinationInfo } from './rules.js';
import { Progress } from './progress.js';
import { escapeName } from './names.js';
import type { CopyOptions, CopyResult } from './copy-options.js';

/**
 * A local path, or a tar stream on stdin (`src` undefined), into a container, as docker
 * cp copies in (docker/cli copyToContainer): the destination is asked about first (a
 * symlink there followed once), the archive packed so that the engine, extracting it
 * into a directory, leaves what docker cp would; the engine's terminal frame must name
 * the very bytes sent, and must be the call's one and last item.
 */
export async function copyIn(client: Client, container: string, src: string | undefined, dstPath: string, options: CopyOptions): Promise<CopyResult> {
  const destination = await containerDestination(client, container, dstPath, options);
  let dir: string;
  let source: AsyncIterable<Uint8Array>;
  let total: number | undefined;
  if (src === undefined) {
    if (!destination.isDir) throw new CopyError(`destination "${escapeName(container)}:${escapeName(dstPath)}" must be a directory`);
    dir = destination.path;
    source = process.stdin as AsyncIterable<Uint8Array>;
  } else {
    const info = await localSource(src, options.followLink);
    const placement = placeCopy(info, destination);
    dir = placement.dir;
    source = packSource(info, placement.name);
    if (!info.isDir) total = (await localStat(info.path)).size;
  }
  const checked = new CheckedStream(Number.MAX_SAFE_INTEGER);
  const progress = new Progress(options.progress, 'Copying to container', total);
  const items = async function* (): AsyncGenerator<{ data: Uint8Array }> {
    for await (const chunk of source) {
      checked.add(chunk);
      progress.add(chunk.byteLength);
      yield { data: chunk };
    }
  };
  let terminal: ArchiveTerminalFrame | undefined;
  const order = ArchiveOrder.put();
  try {
    const input = { containerId: container, path: dir, noOverwriteDirNonDir: true, copyUIDGID: options.copyUIDGID };
    for await (const received of client.iterate(archivePutContract, input, { ...options.call, input: items() })) {
      const item = order.next(received);
      if (item.kind === 'end') terminal = item.end;
    }
  } finally {
    progress.clear();
  }
  checked.verify(terminal);
  return { contentBytes: total ?? checked.bytes, transferredBytes: checked.bytes, destination: `${container}:${dstPath}` };
}

/** What is at the destination in the container; a symlink there is followed once, as docker cp does. */
async function containerDestination(client: Client, container: string, path: string, options: CopyOptions): Promise<DestinationInfo> {
  let target = path;
  let stat = await statOrNothing(client, container, target, options);
  if (stat && isSymlinkMode(stat.mode)) {
    target = stat.linkTarget.startsWith('/') ? stat.linkTarget : posix.join(splitDirEntry(path).dir, stat.linkTarget);
    stat = await statOrNothing(client, container, target, options);
  }
  if (stat === undefined) return { path: target, exists: false, isDir: false };
  if (!isDirectoryMode(stat.mode) && !isRegularMode(stat.mode)) throw new CopyError(`destination "${escapeName(container)}:${escapeName(path)}" must be a directory or a regular file`);
  return { path: target, exists: true, isDir: isDirectoryMode(stat.mode) };
}

async function statOrNothing(client: Client, container: string, path: string, options: CopyOptions): Promise<PathStat | undefined> {
  try {
    return await client.call(archiveStatContract, { containerId: container, path }, options.call);
  } catch (error) {
    if (error instanceof RpcError && error.code === 'PATH_NOT_FOUND') return undefined;
    throw error;
  }
}
