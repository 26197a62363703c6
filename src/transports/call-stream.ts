import type { Dispatcher, StreamEntry, StreamSink } from '../dispatcher/index.js';
import { chunkBatcher } from '../io/index.js';
import { checkFrameBody, FrameDecoder, ProtocolError } from '../protocol/index.js';
import type { WtStream } from '../webtransport/index.js';

/** What differs between the carriers of a call stream: how they log. */
export interface CallStreamCarrier {
  /** Names the carrier in the debug log. */
  readonly name: string;
}

/**
 * Serves one call's stream (spec §5.4), whatever carries it: WebTransport over HTTP/2
 * (the library's stream) and over HTTP/3 (a stream of the Deno edge's bridge, src/webtransport/bridge-mux.ts).
 * It only moves bytes: it cuts length-prefixed frames (§5.1) and hands their bodies to
 * the session's entry (`open`), which decodes each once, and writes the session's frames
 * back with their length prefix. A FIN is the caller's end of input (WT-2); a reset or a
 * failed read aborts the call; a bad length prefix or a FIN inside a frame ends this
 * stream only (WT-3).
 */
export async function pumpCallStream(stream: WtStream, open: (sink: StreamSink) => StreamEntry, dispatcher: Dispatcher, carrier: CallStreamCarrier): Promise<void> {
  const reader = stream.readable.getReader();
  const writer = stream.writable.getWriter();
  const { maxFrameBytes } = dispatcher.limits;
  const decoder = new FrameDecoder(maxFrameBytes);
  let reset = false;
  // A turn's frames in one write: a write per 100-byte item cost a stream object's
  // promise, a capsule and an HTTP/2 DATA frame each (bench/PROFILE.md).
  // Once our side is closed nothing more is written: Node 20's WritableStream meets a
  // write after its close with an internal assertion, thrown uncaught, not a rejection,
  // and a caller's second request on a finished stream led to one (issue 31).
  let closed = false;
  const afterClose = (): Promise<void> => Promise.reject(new Error('the stream has ended'));
  const batch = chunkBatcher((chunk) => (closed ? afterClose() : writer.write(chunk)), { lengthPrefixed: true });
  const abortBoth = (error: unknown): void => {
    reset = true;
    batch.drop(error);
    void writer.abort(error).catch(() => undefined);
    void reader.cancel(error).catch(() => undefined);
  };
  const resetByUs = (error: unknown): void => {
    if (reset) return;
    abortBoth(error);
  };
  const entry = open({
    write: (frame) => {
      checkFrameBody(frame, maxFrameBytes);
      return closed ? afterClose() : batch.write(frame);
    },
    end: () => {
      batch.flush();
      closed = true;
      void writer.close().catch(() => undefined);
    },
    reset: (reason) => {
      dispatcher.logger?.debug(`${carrier.name} stream reset`, { reason });
      resetByUs(new ProtocolError('UNDECODABLE', reason));
    },
  });
  for (;;) {
    let next: ReadableStreamReadResult<Uint8Array>;
    try {
      // A shared stream is not read while its session's shared streams are at their bound (WTS-3).
      const paused = entry.whenReadable?.();
      if (paused) await paused;
      next = await reader.read();
    } catch (error) {
      // The caller reset the stream, or its carrier failed: the call is aborted (WT-2).
      if (reset) return;
      dispatcher.logger?.debug(`${carrier.name} stream ended`, { error: String(error) });
      abortBoth(error);
      entry.reset();
      return;
    }
    if (reset) return;
    try {
      if (next.done) {
        decoder.end();
        entry.end();
        return;
      }
      for (const body of decoder.push(next.value)) {
        if (reset) return;
        entry.receive(body);
      }
    } catch (error) {
      if (reset) return;
      dispatcher.logger?.debug(`${carrier.name} stream ended`, { error: error instanceof ProtocolError ? error.message : String(error) });
      resetByUs(error);
      entry.reset();
      return;
    }
  }
}
