import { nextTurn } from '../flow/index.js';
import { concatBytes, limits, setFrameLength } from '../protocol/index.js';

/** A byte stream whose writes can be held back and then leave together (Node's net.Socket). */
export interface Corkable {
  cork(): void;
  uncork(): void;
}

/** How large a batch may grow before it leaves (bytes). */
export interface BatchBounds {
  /** The first batch of a turn leaves at this size, so the peer can start on it. */
  readonly firstBytes: number;
  /** Each later batch of the turn may be twice the last, up to this. */
  readonly maxBytes: number;
}

const DEFAULT_BOUNDS: BatchBounds = { firstBytes: 2 * 1024, maxBytes: 16 * 1024 };

/**
 * Frames written in one turn of the event loop leave in one `writev`, up to a bound
 * at a time. A write per frame was most of a busy server's time (one syscall per
 * 100-byte item) and 44% of a client's at 64 calls in flight.
 *
 * Both bounds matter. Unbounded, a turn in which thousands of calls each produce
 * items held megabytes in user space until the turn ended: the peer saw nothing
 * meanwhile, the held frames outlived the young generation, and 10,000 concurrent
 * subscriptions fell from 100,000 to 6,000 items/s (bench/PROFILE.md). So a batch
 * leaves once it reaches its bound, and at the end of the turn in any case.
 *
 * The bound starts small and doubles within a turn. With one batch per turn, the two
 * ends of a busy connection took turns: 64 requests left in one write, the server
 * answered all 64 in one write while the client waited, and each process was idle
 * half the time. A first batch of 2 KiB lets the peer start on it while this side
 * encodes the rest; unary calls at 64 in flight went from about 55,000 to 110,000
 * calls/s, and bulk streams still leave in 16 KiB writes (bench/PROFILE.md).
 *
 * Returns a writer: `batched(bytes, write)` runs `write` (which hands `bytes` bytes
 * to the socket) inside the current batch.
 */
export function writeBatcher(socket: Corkable, bounds: BatchBounds = DEFAULT_BOUNDS): <T>(bytes: number, write: () => T) => T {
  let corked = false;
  let held = 0;
  let bound = bounds.firstBytes;
  let endOfTurnScheduled = false;
  const release = (): void => {
    if (!corked) return;
    corked = false;
    held = 0;
    socket.uncork();
  };
  const endOfTurn = (): void => {
    endOfTurnScheduled = false;
    bound = bounds.firstBytes;
    release();
  };
  return (bytes, write) => {
    if (!corked) {
      corked = true;
      socket.cork();
      if (!endOfTurnScheduled) {
        endOfTurnScheduled = true;
        nextTurn(endOfTurn);
      }
    }
    try {
      return write();
    } finally {
      held += bytes;
      if (held >= bound) {
        bound = Math.min(bound * 2, bounds.maxBytes);
        release();
      }
    }
  };
}

/**
 * The same batching for a stream that takes whole chunks (a WebTransport stream's
 * writer), where there is no cork: frames written in one turn are joined into one
 * chunk of at most `maxBytes` and written together. Each frame's promise settles
 * with its chunk's write. A frame of `maxBytes` or more is written alone, uncopied,
 * after the frames before it. Its bound is fixed: the growing first batch above was
 * measured on the WebSocket only, where many calls share one socket.
 *
 * With `lengthPrefixed`, each frame is written behind its length (spec §5.1) as it is
 * joined, so a frame's bytes are copied once, not first into a framed copy and then
 * into the chunk; a large frame's prefix is a write of its own. The framed copy and
 * its garbage were a sixth of a server streaming 100 B items over HTTP/2.
 */
export function chunkBatcher(
  write: (chunk: Uint8Array) => Promise<void>,
  options: { readonly maxBytes?: number; readonly lengthPrefixed?: boolean } = {},
): { write(frame: Uint8Array): Promise<void>; flush(): void; drop(error: unknown): void } {
  const maxBytes = options.maxBytes ?? DEFAULT_BOUNDS.maxBytes;
  const prefixBytes = options.lengthPrefixed ? limits.framePrefixBytes : 0;
  let parts: Uint8Array[] = [];
  let size = 0;
  let settlers: { resolve: () => void; reject: (error: unknown) => void }[] = [];
  let endOfTurnScheduled = false;
  const send = (): Promise<void> => {
    const only = parts.length === 1 ? parts[0]! : undefined;
    if (only && prefixBytes === 0) return write(only);
    if (only && size >= maxBytes) {
      // A large frame alone: its prefix, then its bytes as they are.
      void write(lengthPrefix(only.byteLength)).catch(() => undefined);
      return write(only);
    }
    return write(join(parts, size, prefixBytes));
  };
  const flush = (): void => {
    if (parts.length === 0) return;
    const sent = send();
    const batch = settlers;
    parts = [];
    size = 0;
    settlers = [];
    sent.then(
      () => batch.forEach((s) => s.resolve()),
      (error: unknown) => batch.forEach((s) => s.reject(error)),
    );
  };
  return {
    write(frame) {
      return new Promise<void>((resolve, reject) => {
        const framed = prefixBytes + frame.byteLength;
        if (framed >= maxBytes) flush();
        parts.push(frame);
        size += framed;
        settlers.push({ resolve, reject });
        if (size >= maxBytes) flush();
        else if (!endOfTurnScheduled) {
          endOfTurnScheduled = true;
          nextTurn(() => {
            endOfTurnScheduled = false;
            flush();
          });
        }
      });
    },
    flush,
    /** Frames not yet written are not written; their promises reject with `error`. */
    drop(error) {
      const batch = settlers;
      parts = [];
      size = 0;
      settlers = [];
      for (const s of batch) s.reject(error);
    },
  };
}

function lengthPrefix(length: number): Uint8Array {
  const prefix = new Uint8Array(limits.framePrefixBytes);
  setFrameLength(prefix, 0, length);
  return prefix;
}

/** The frames one after another, each behind its length when `prefixBytes` is not 0. */
function join(parts: readonly Uint8Array[], size: number, prefixBytes: number): Uint8Array {
  if (prefixBytes === 0) return concatBytes(parts, size);
  const out = new Uint8Array(size);
  let at = 0;
  for (const part of parts) {
    setFrameLength(out, at, part.byteLength);
    out.set(part, at + prefixBytes);
    at += prefixBytes + part.byteLength;
  }
  return out;
}
