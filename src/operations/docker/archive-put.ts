import { Readable } from 'node:stream';
import { archivePutContract } from '../../contracts/index.js';
import { defineOperation, type Operation } from '../../dispatcher/index.js';
import { RpcError } from '../../protocol/index.js';
import { archiveError, archiveRequest, TarDigest } from './archive-engine.js';
import type { DockerEngine } from './engine.js';
import { engineUpload } from './engine-request.js';
import { inspectOwned } from './ownership.js';

/** An item of the input stream, as the contract's inputStream validated it. */
interface PutItem {
  readonly data: Uint8Array;
}

/**
 * `docker/container/archive/put` (ARC-5): the call's input stream is the engine's
 * request body, item by item as the engine takes them; the engine's answer, once it
 * has extracted them all, ends the call with their count and digest (ARC-6).
 */
export function archivePutOperation(engine: DockerEngine, labelPrefix: string): Operation {
  return defineOperation({
    ...archivePutContract,
    handler: async function* ({ containerId, path, noOverwriteDirNonDir, copyUIDGID }, ctx) {
      const { info } = await inspectOwned(engine, containerId, ctx, labelPrefix);
      const digest = new TarDigest();
      let inputFailure: unknown;
      async function* tarBytes(): AsyncGenerator<Uint8Array> {
        try {
          for await (const item of ctx.input as AsyncIterable<PutItem>) {
            digest.add(item.data);
            yield item.data;
          }
        } catch (error) {
          inputFailure = error;
          throw error;
        }
      }
      // One item held at a time: with the request's own buffer, the server holds at most the input window and a few items (ARC-5).
      const body = Readable.from(tarBytes(), { objectMode: true, highWaterMark: 1 });
      const request = archiveRequest(info.Id, path, { noOverwriteDirNonDir, copyUIDGID });
      await engineUpload(engine, request, body, ctx.signal).then(
        (response) => response.destroy(),
        (error: unknown) => {
          // A bad input item cut the request: its error is the call's, not the engine's.
          if (inputFailure !== undefined) throw inputFailure instanceof RpcError ? inputFailure : new RpcError('INTERNAL', String(inputFailure));
          throw archiveError(error, containerId, path);
        },
      );
      if (ctx.signal.aborted) return;
      yield digest.terminal();
    },
  });
}
