import type { Socket } from 'node:net';
import type { WtStream } from './types.js';

/** What the readable half buffers before it pauses the socket. */
const READ_HIGH_WATER_BYTES = 64 * 1024;

/**
 * One stream of the HTTP/3 bridge (a unix socket opened with `allowHalfOpen`) as the
 * web stream pair a WebTransport stream is, for both sides of the bridge: the readable
 * closes at the peer's FIN while the writable stays open for the answer, and closing the
 * writable sends our FIN. Node's `Duplex.toWeb` cannot serve here: its readable closes
 * only when both halves have finished, so a caller's FIN would not arrive until the
 * answer was over. A socket that closes without a FIN errors the readable (a reset).
 * Backpressure is the socket's both ways.
 */
export function socketStream(socket: Socket): WtStream {
  let settled = false;
  let waiting: { resolve: () => void; reject: (error: Error) => void } | undefined;
  const readable = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        // Once closed, errored or cancelled, a controller takes nothing more.
        const settle = (end: () => void): void => {
          if (settled) return;
          settled = true;
          end();
        };
        socket.on('data', (chunk: Buffer) => {
          if (settled) return;
          controller.enqueue(chunk);
          if ((controller.desiredSize ?? 0) <= 0) socket.pause();
        });
        socket.once('end', () => settle(() => controller.close()));
        socket.once('close', () => settle(() => controller.error(new Error('the stream closed without its end (reset)'))));
      },
      pull() {
        socket.resume();
      },
      cancel() {
        settled = true;
        socket.destroy();
      },
    },
    { highWaterMark: READ_HIGH_WATER_BYTES, size: (chunk) => chunk.byteLength },
  );
  socket.on('error', () => undefined);
  socket.on('drain', () => {
    waiting?.resolve();
    waiting = undefined;
  });
  socket.once('close', () => {
    waiting?.reject(new Error('stream closed'));
    waiting = undefined;
  });
  const writable = new WritableStream<Uint8Array>({
    write(chunk) {
      if (socket.destroyed) return Promise.reject(new Error('stream closed'));
      if (socket.write(chunk)) return undefined;
      return new Promise<void>((resolve, reject) => (waiting = { resolve, reject }));
    },
    close() {
      return new Promise<void>((resolve) => socket.end(() => resolve()));
    },
    abort() {
      socket.destroy();
    },
  });
  return { readable, writable };
}
