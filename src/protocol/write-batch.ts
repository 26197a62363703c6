/** A byte stream whose writes can be held back and then leave together (Node's net.Socket). */
export interface Corkable {
  cork(): void;
  uncork(): void;
}

/**
 * Frames written in one turn of the event loop leave in one `writev`, up to
 * `maxBytes` at a time. A write per frame was most of a busy server's time (one
 * syscall per 100-byte item) and 44% of a client's at 64 calls in flight.
 *
 * Both bounds matter. Unbounded, a turn in which thousands of calls each produce
 * items held megabytes in user space until the turn ended: the peer saw nothing
 * meanwhile, the held frames outlived the young generation, and 10,000 concurrent
 * subscriptions fell from 100,000 to 6,000 items/s (bench/PROFILE.md). So a batch
 * leaves once it reaches `maxBytes`, and at the end of the turn in any case.
 *
 * Returns a writer: `batched(bytes, write)` runs `write` (which hands `bytes` bytes
 * to the socket) inside the current batch.
 */
export function writeBatcher(socket: Corkable, maxBytes = 16 * 1024): <T>(bytes: number, write: () => T) => T {
  let corked = false;
  let held = 0;
  let endOfTurnScheduled = false;
  const release = (): void => {
    if (!corked) return;
    corked = false;
    held = 0;
    socket.uncork();
  };
  const endOfTurn = (): void => {
    endOfTurnScheduled = false;
    release();
  };
  return (bytes, write) => {
    if (!corked) {
      corked = true;
      socket.cork();
      if (!endOfTurnScheduled) {
        endOfTurnScheduled = true;
        setImmediate(endOfTurn);
      }
    }
    try {
      return write();
    } finally {
      held += bytes;
      if (held >= maxBytes) release();
    }
  };
}
